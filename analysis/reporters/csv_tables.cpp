// per_gpu.csv, per_stage.csv, links.csv and critical_path.csv. Reals are
// written with 9 significant digits (nanosecond resolution on a 1 s
// iteration) so that files are stable and diffable.
#include <fmt/ostream.h>

#include <ostream>

#include "analysis/reporters/reporters.hpp"

namespace trainsim::analysis {
namespace {

void cause_header(std::ostream& out, std::string_view suffix) {
  for (BubbleCause c : kBubbleCauses)
    fmt::print(out, ",{}{}", to_string(c), suffix);
}

void cause_values(std::ostream& out, const CauseSeconds& seconds) {
  for (BubbleCause c : kBubbleCauses)
    fmt::print(out, ",{:.9g}", seconds[static_cast<std::size_t>(c)]);
}

}  // namespace

void write_per_gpu_csv(std::ostream& out, const RunContext& run, const Report& report) {
  (void)run;
  const double t = report.summary.iteration_time_s;
  out << "gpu,node,stage,type,compute_s,forward_backward_s,optimizer_s,communication_s,overlap_s,exposed_"
         "comm_s,"
         "idle_s,lost_s";
  cause_header(out, "_s");
  for (auto k : kCommKinds)
    fmt::print(out, ",exposed_{}_s", workloads::to_string(k));
  out << ",compute_busy_fraction,comm_busy_fraction,achieved_tflops,achieved_hardware_tflops,resident_bytes,"
         "peak_memory_bytes,energy_J,average_power_W,idle_energy_J\n";
  for (const auto& u : report.summary.gpus) {
    const auto g = static_cast<std::size_t>(u.gpu);
    const auto& b = report.bubbles.gpus.at(g);
    const auto& v = report.utilization.gpus.at(g);
    fmt::print(out, "{},{},{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g}", u.gpu, u.node,
               u.stage, u.gpu_type, u.compute_s, b.forward_backward_s, b.optimizer_s, u.communication_s,
               u.overlap_s, u.exposed_comm_s, u.idle_s, b.lost_s);
    cause_values(out, b.cause_s);
    for (double x : v.exposed_by_kind_s)
      fmt::print(out, ",{:.9g}", x);
    const double resident = g < report.memory.gpus.size() ? report.memory.gpus[g].resident_bytes : 0;
    const double peak = g < report.memory.gpus.size() ? report.memory.gpus[g].peak_bytes : 0;
    const GpuEnergy energy = g < report.energy.gpus.size() ? report.energy.gpus[g] : GpuEnergy{};
    fmt::print(out, ",{:.9g},{:.9g},{:.9g},{:.9g},{:.0f},{:.0f},{:.9g},{:.9g},{:.9g}\n",
               t > 0 ? v.compute_busy_s / t : 0, t > 0 ? v.comm_busy_s / t : 0, u.achieved_tflops,
               u.achieved_hardware_tflops, resident, peak, energy.energy_J, energy.average_power_W,
               energy.idle_energy_J);
  }
}

void write_per_stage_csv(std::ostream& out, const RunContext& run, const Report& report) {
  (void)run;
  const double t = report.summary.iteration_time_s;
  out << "stage,gpus,compute_fraction,exposed_comm_fraction,bubble_fraction,lost_s,lost_fraction,idle_s";
  cause_header(out, "_s");
  cause_header(out, "_fraction");
  out << "\n";
  for (const auto& st : report.summary.stages) {
    const auto& b = report.bubbles.stages.at(static_cast<std::size_t>(st.stage));
    fmt::print(out, "{},{},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g},{:.9g}", st.stage, b.gpus, st.compute_fraction,
               st.exposed_comm_fraction, st.bubble_fraction, b.lost_s, t > 0 ? b.lost_s / t : 0, b.idle_s);
    cause_values(out, b.cause_s);
    CauseSeconds fraction{};
    for (std::size_t c = 0; c < fraction.size(); ++c)
      fraction[c] = t > 0 ? b.cause_s[c] / t : 0;
    cause_values(out, fraction);
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
  for (const auto& l : ut.links)
    fmt::print(out, "{},{},{:.0f},{:.0f},{},{:.9g},{:.9g},{:.9g},{},{}\n", l.link, l.name, l.bandwidth_Bps,
               l.bytes, l.flows, l.busy_s, l.busy_fraction, l.utilization, l.peak_concurrent_flows,
               rank[static_cast<std::size_t>(l.link)]);
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
    fmt::print(out, "{},{:.9f},{:.9f},{:.9g},{},{},{},{},{},{},{}\n", i++, seg.start_s, seg.end_s,
               seg.end_s - seg.start_s, seg.blame_kind, task, name, seg.gpu, stage, micro_batch, link);
  }
}

}  // namespace trainsim::analysis
