#include "workloads/kineto/trace_writer.hpp"

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <ostream>

namespace trainsim::kineto {
namespace {

using nlohmann::json;

// The host process and thread the CPU side is written on (Kineto writes the
// process id; any number does).
constexpr int kHostProcess = 1000;

// Microseconds with nanosecond resolution, as Kineto writes them.
std::string us(double v) {
  return fmt::format("{:.3f}", v);
}

std::string quoted(const std::string& s) {
  return json(s).dump();
}

std::string dims_json(const std::vector<std::vector<Shape>>& inputs) {
  json dims = json::array();
  for (const auto& input : inputs) {
    if (input.empty())
      dims.push_back(json::array());
    else if (input.size() == 1)
      dims.push_back(input.front());
    else
      dims.push_back(input);
  }
  return dims.dump();
}

std::string category(const KernelClass& c) {
  if (c.role == KernelRole::copy)
    return c.name == "memset" ? "gpu_memset" : "gpu_memcpy";
  return "kernel";
}

}  // namespace

void write_trace(std::ostream& out, const RankTrace& t, const KernelClassTable& classes) {
  out << "{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [";
  out << fmt::format("{{\"id\": 0, \"name\": {}, \"totalGlobalMem\": {:.0f}, \"numSms\": {}}}",
                     quoted(t.gpu_name), t.gpu_memory_bytes, t.gpu_sms);
  out << "],\n  \"distributedInfo\": {";
  out << fmt::format("\"backend\": {}, \"rank\": {}, \"world_size\": {}, \"pg_config\": [",
                     quoted(t.backend.empty() ? "nccl" : t.backend), t.rank, t.world_size);
  for (std::size_t g = 0; g < t.groups.size(); ++g)
    out << (g ? ", " : "")
        << fmt::format("{{\"pg_name\": {}, \"pg_desc\": {}, \"ranks\": {}}}", quoted(t.groups[g].name),
                       quoted(t.groups[g].description), json(t.groups[g].ranks).dump());
  out << "]},\n  \"traceName\": " << quoted(t.path) << ",\n  \"traceEvents\": [";
  bool first = true;
  const auto event = [&](const std::string& text) {
    out << (first ? "\n    " : ",\n    ") << text;
    first = false;
  };
  for (const auto& s : t.steps)
    event(fmt::format(
        "{{\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#{}\", \"pid\": {}, "
        "\"tid\": {}, \"ts\": {}, \"dur\": {}}}",
        s.number, kHostProcess, kHostProcess, us(s.start_us), us(s.duration_us())));
  for (const auto& op : t.ops) {
    std::string extra;
    if (!op.inputs.empty())
      extra = fmt::format(", \"Input Dims\": {}, \"Input type\": {}, \"Concrete Inputs\": {}",
                          dims_json(op.inputs), json(op.types).dump(), json(op.concrete).dump());
    event(fmt::format(
        "{{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, "
        "\"dur\": {}, \"args\": {{\"External id\": {}{}}}}}",
        quoted(op.name), kHostProcess, op.thread < 0 ? kHostProcess : op.thread, us(op.start_us),
        us(op.duration_us), op.external_id, extra));
  }
  for (const auto& l : t.launches)
    event(fmt::format(
        "{{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": {}, "
        "\"tid\": {}, \"ts\": {}, \"dur\": {}, \"args\": {{\"correlation\": {}}}}}",
        kHostProcess, l.thread < 0 ? kHostProcess : l.thread, us(l.start_us), us(l.duration_us),
        l.correlation));
  for (const auto& k : t.kernels) {
    std::string args =
        fmt::format("\"device\": {}, \"stream\": {}, \"correlation\": {}", k.device, k.stream, k.correlation);
    if (k.external_id >= 0)
      args = fmt::format("\"External id\": {}, {}", k.external_id, args);
    if (k.grid[0] > 0)
      args += fmt::format(", \"grid\": [{}, {}, {}], \"block\": [{}, {}, {}]", k.grid[0], k.grid[1],
                          k.grid[2], k.block[0], k.block[1], k.block[2]);
    if (k.collective >= 0) {
      const CollectiveInfo& c = t.collectives[static_cast<std::size_t>(k.collective)];
      if (c.metadata)
        args += fmt::format(
            ", \"Collective name\": {}, \"In msg nelems\": {}, \"Out msg nelems\": {}, \"Group size\": {}, "
            "\"dtype\": {}, \"Process Group Name\": {}, \"Process Group Ranks\": {}",
            quoted(c.collective), c.in_elements, c.out_elements, c.group_size, quoted(c.dtype),
            quoted(c.group_name), quoted(json(c.group_ranks).dump()));
    }
    event(
        fmt::format("{{\"ph\": \"X\", \"cat\": \"{}\", \"name\": {}, \"pid\": {}, \"tid\": {}, \"ts\": {}, "
                    "\"dur\": {}, \"args\": {{{}}}}}",
                    category(classes.at(k.kernel_class)), quoted(t.name_of(k)), k.device, k.stream,
                    us(k.start_us), us(k.duration_us), args));
  }
  out << "\n  ]\n}\n";
}

}  // namespace trainsim::kineto
