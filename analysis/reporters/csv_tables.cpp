// per_gpu.csv, per_stage.csv, links.csv and critical_path.csv. Numbers at
// full precision, whole numbers as integers (platforms/number_format.hpp).
#include <fmt/ostream.h>

#include <cmath>
#include <ostream>
#include <string>
#include <unordered_map>
#include <vector>

#include "analysis/reporters/machine_numbers.hpp"
#include "analysis/reporters/reporters.hpp"
#include "platforms/number_format.hpp"

namespace trainsim::analysis {
namespace {

std::string num(double value) {
  return units::format_machine(value);
}

void cause_header(std::ostream& out, std::string_view suffix, const std::vector<BubbleCause>& causes) {
  for (BubbleCause c : causes)
    fmt::print(out, ",{}{}", to_string(c), suffix);
}

void cause_values(std::ostream& out, const CauseSeconds& seconds, const std::vector<BubbleCause>& causes) {
  for (BubbleCause c : causes)
    fmt::print(out, ",{}", num(seconds[static_cast<std::size_t>(c)]));
}

}  // namespace

void write_per_gpu_csv(std::ostream& out, const RunContext& run, const Report& report) {
  (void)run;
  const std::vector<BubbleCause> causes = reported_causes(report.bubbles);
  const double t = report.summary.iteration_time_s;
  out << "gpu,node,stage,type,compute_s,forward_backward_s,optimizer_s,communication_s,overlap_s,exposed_"
         "comm_s,"
         "idle_s,lost_s";
  cause_header(out, "_s", causes);
  for (auto k : kCommKinds)
    fmt::print(out, ",exposed_{}_s", workloads::to_string(k));
  out << ",compute_busy_fraction,comm_busy_fraction,achieved_tflops,achieved_hardware_tflops,resident_bytes,"
         "peak_memory_bytes,energy_J,average_power_W,idle_energy_J\n";
  // A row after its GPU and node is the stage, the type and the numbers
  // below: formatted once per distinct stage, type and numbers' bits (the
  // GPUs of a data-parallel replica's class share them), not per GPU.
  std::unordered_map<std::string, std::string> rows;
  std::string key;
  std::vector<double> values;
  for (const auto& u : report.summary.gpus) {
    const auto g = static_cast<std::size_t>(u.gpu);
    const auto& b = report.bubbles.gpus.at(g);
    const auto& v = report.utilization.gpus.at(g);
    values.assign({u.compute_s, b.forward_backward_s, b.optimizer_s, u.communication_s, u.overlap_s,
                   u.exposed_comm_s, u.idle_s, b.lost_s});
    for (BubbleCause c : causes)
      values.push_back(b.cause_s[static_cast<std::size_t>(c)]);
    for (double x : v.exposed_by_kind_s)
      values.push_back(x);
    const double resident = g < report.memory.gpus.size() ? report.memory.gpus[g].resident_bytes : 0;
    const double peak = g < report.memory.gpus.size() ? report.memory.gpus[g].peak_bytes : 0;
    const GpuEnergy energy = g < report.energy.gpus.size() ? report.energy.gpus[g] : GpuEnergy{};
    values.insert(values.end(),
                  {t > 0 ? v.compute_busy_s / t : 0, t > 0 ? v.comm_busy_s / t : 0, u.achieved_tflops,
                   u.achieved_hardware_tflops, std::round(resident), std::round(peak), energy.energy_J,
                   energy.average_power_W, energy.idle_energy_J});
    key.clear();
    const std::size_t type_size = u.gpu_type.size();
    key.append(reinterpret_cast<const char*>(&type_size), sizeof(type_size));
    key.append(u.gpu_type);
    key.append(reinterpret_cast<const char*>(&u.stage), sizeof(u.stage));
    key.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(double));
    auto [row, first] = rows.try_emplace(key);
    if (first) {
      row->second = fmt::format("{},{}", u.stage, u.gpu_type);
      for (double x : values) {
        row->second += ',';
        row->second += num(x);
      }
      row->second += '\n';
    }
    fmt::print(out, "{},{},", u.gpu, u.node);
    out << row->second;
  }
}

void write_per_stage_csv(std::ostream& out, const RunContext& run, const Report& report) {
  (void)run;
  const std::vector<BubbleCause> causes = reported_causes(report.bubbles);
  const double t = report.summary.iteration_time_s;
  out << "stage,gpus,compute_fraction,exposed_comm_fraction,bubble_fraction,lost_s,lost_fraction,idle_s";
  cause_header(out, "_s", causes);
  cause_header(out, "_fraction", causes);
  out << "\n";
  for (const auto& st : report.summary.stages) {
    const auto& b = report.bubbles.stages.at(static_cast<std::size_t>(st.stage));
    fmt::print(out, "{},{},{},{},{},{},{},{}", st.stage, b.gpus, num(st.compute_fraction),
               num(st.exposed_comm_fraction), num(st.bubble_fraction), num(b.lost_s),
               num(t > 0 ? b.lost_s / t : 0), num(b.idle_s));
    cause_values(out, b.cause_s, causes);
    CauseSeconds fraction{};
    for (std::size_t c = 0; c < fraction.size(); ++c)
      fraction[c] = t > 0 ? b.cause_s[c] / t : 0;
    cause_values(out, fraction, causes);
    out << "\n";
  }
}

void write_links_csv(std::ostream& out, const Report& report) {
  const auto& ut = report.utilization;
  std::vector<int> rank(ut.links.size(), 0);
  for (std::size_t i = 0; i < ut.hottest.size(); ++i)
    rank[static_cast<std::size_t>(ut.hottest[i])] = static_cast<int>(i) + 1;
  out << "link,name,bandwidth_Bps,bytes,flows,busy_s,busy_fraction,utilization,peak_concurrent_flows,hot_"
         "rank\n";
  // Rows go through one buffer; a link orbit's links have the same figures,
  // so each distinct number is formatted once (MachineNumberTexts).
  fmt::memory_buffer row;
  MachineNumberTexts numbers;
  const auto append = [&](auto integer) {
    const fmt::format_int text(integer);
    row.append(text.data(), text.data() + text.size());
    row.push_back(',');
  };
  const auto append_number = [&](double value) {
    numbers.append(row, value);
    row.push_back(',');
  };
  for (const auto& l : ut.links) {
    append(l.link);
    row.append(l.name.data(), l.name.data() + l.name.size());
    row.push_back(',');
    append_number(l.bandwidth_Bps);
    append_number(std::round(l.bytes));
    append(l.flows);
    append_number(l.busy_s);
    append_number(l.busy_fraction);
    append_number(l.utilization);
    append(l.peak_concurrent_flows);
    append(rank[static_cast<std::size_t>(l.link)]);
    row.resize(row.size() - 1);
    row.push_back('\n');
    if (row.size() >= (1 << 20)) {
      out.write(row.data(), static_cast<std::streamsize>(row.size()));
      row.clear();
    }
  }
  out.write(row.data(), static_cast<std::streamsize>(row.size()));
}

void write_critical_path_csv(std::ostream& out, const RunContext& run, const Timeline& timeline,
                             const Report& report) {
  out << "index,start_s,end_s,duration_s,blame,task,name,gpu,stage,micro_batch,link\n";
  std::size_t i = 0;
  for (const auto& seg : report.critical_path.segments) {
    std::string name = "wait", link;
    int stage = -1, micro_batch = -1;
    long task = -1;
    if (seg.is_task) {
      const auto& t = run.graph[seg.task];
      name = workloads::task_label(run.graph, seg.task);
      stage = t.stage;
      micro_batch = t.micro_batch;
      task = static_cast<long>(seg.task);
    }
    if (seg.link >= 0)
      link = timeline.links.at(static_cast<std::size_t>(seg.link)).name;
    fmt::print(out, "{},{},{},{},{},{},{},{},{},{},{}\n", i++, num(seg.start_s), num(seg.end_s),
               num(seg.end_s - seg.start_s), seg.blame_kind, task, name, seg.gpu, stage, micro_batch, link);
  }
}

}  // namespace trainsim::analysis
