// Chrome trace-event format writer (the JSON Object Format of the Trace Event
// Format document): complete ("X") events for tasks, metadata ("M") events
// naming processes (nodes) and threads (GPU streams), and flow ("s"/"f")
// events linking each pipeline send to its receive. Streamed with fmt rather
// than built as a JSON tree: a large run has millions of events.
#include <fmt/ostream.h>

#include <nlohmann/json.hpp>
#include <ostream>
#include <set>

#include "analysis/reporters.hpp"

namespace trainsim::analysis {
namespace {

struct ThreadId {
  int pid;
  int tid;
};

ThreadId thread_of(const platforms::ClusterSpec& cluster, int gpu, Stream stream) {
  const auto loc = cluster.locate(gpu);
  return {loc.node, loc.local_rank * kStreamCount + static_cast<int>(stream)};
}

double us(double seconds) {
  return seconds * 1e6;
}

}  // namespace

void write_chrome_trace(std::ostream& out, const RunContext& run, const Timeline& timeline) {
  const auto& cluster = run.cluster;
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"scenario\":"
      << nlohmann::json(run.scenario_name).dump() << ",\"generator\":\"trainsim\"},\n\"traceEvents\":[\n";
  bool first = true;
  auto sep = [&]() -> const char* {
    if (first) {
      first = false;
      return "";
    }
    return ",\n";
  };

  // Name every node and every (GPU, stream) that appears.
  std::set<std::pair<int, Stream>> used;
  for (const auto& r : timeline.records) {
    used.emplace(r.gpu, r.stream);
    const auto& task = run.graph[r.task];
    if (task.kind == workloads::TaskKind::send)
      used.emplace(task.peer, r.stream);
  }
  std::set<int> nodes;
  for (const auto& [gpu, stream] : used)
    nodes.insert(cluster.locate(gpu).node);
  for (int node : nodes) {
    int first_gpu = 0;
    while (cluster.locate(first_gpu).node != node)
      ++first_gpu;
    fmt::print(
        out, "{}{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":\"node {} ({})\"}}}}",
        sep(), node, node, cluster.gpu_of(first_gpu).name);
    fmt::print(out,
               "{}{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"args\":{{\"sort_index\":{}}}}}",
               sep(), node, node);
  }
  for (const auto& [gpu, stream] : used) {
    const auto t = thread_of(cluster, gpu, stream);
    fmt::print(out,
               "{}{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"GPU {} "
               "(stage {}) {}\"}}}}",
               sep(), t.pid, t.tid, gpu, run.plan.pp_rank_of(gpu), to_string(stream));
    fmt::print(out,
               "{}{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_"
               "index\":{}}}}}",
               sep(), t.pid, t.tid, t.tid);
  }

  long flow_id = 0;
  for (const auto& r : timeline.records) {
    const auto& task = run.graph[r.task];
    const auto t = thread_of(cluster, r.gpu, r.stream);
    const std::string label = workloads::task_label(task);
    std::string collective_args;
    if (const auto* choice = timeline.collective_choice(r.task))
      collective_args =
          fmt::format(",\"algorithm\":\"{}\",\"channels\":{},\"fidelity\":\"{}\"",
                      to_string(choice->algorithm), choice->channels, to_string(choice->fidelity));
    fmt::print(
        out,
        "{}{{\"ph\":\"X\",\"name\":\"{}\",\"cat\":\"{}\",\"pid\":{},\"tid\":{},\"ts\":{:.3f},\"dur\":{:.3f},"
        "\"args\":{{\"micro_batch\":{},\"stage\":{},\"bytes\":{:.0f}{}}}}}",
        sep(), label, to_string(task.kind), t.pid, t.tid, us(r.start_s), us(r.end_s - r.start_s),
        task.micro_batch, task.stage, task.bytes, collective_args);
    if (task.kind != workloads::TaskKind::send)
      continue;
    // The receive side of a send, and an arrow from the send to it.
    const auto d = thread_of(cluster, task.peer, r.stream);
    fmt::print(out,
               "{}{{\"ph\":\"X\",\"name\":\"recv mb{}\",\"cat\":\"recv\",\"pid\":{},\"tid\":{},\"ts\":{:.3f},"
               "\"dur\":{:.3f},\"args\":{{\"from_gpu\":{}}}}}",
               sep(), task.micro_batch, d.pid, d.tid, us(r.start_s), us(r.end_s - r.start_s), r.gpu);
    ++flow_id;
    fmt::print(
        out,
        "{}{{\"ph\":\"s\",\"name\":\"p2p\",\"cat\":\"p2p\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":{:.3f}}}",
        sep(), flow_id, t.pid, t.tid, us(r.start_s));
    fmt::print(
        out,
        "{}{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"p2p\",\"cat\":\"p2p\",\"id\":{},\"pid\":{},\"tid\":{},"
        "\"ts\":{:.3f}}}",
        sep(), flow_id, d.pid, d.tid, us(r.end_s));
  }
  out << "\n]}\n";
}

}  // namespace trainsim::analysis
