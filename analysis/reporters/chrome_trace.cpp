// Chrome trace-event format writer (the JSON Object Format of the Trace Event
// Format document), as chrome://tracing, Perfetto and Chrome DevTools read it:
//  - one process per node, one thread per GPU stream named as Kineto (the
//    PyTorch profiler) names them ("GPU 3 stream 7 compute"), a complete
//    ("X") event per task, args.critical on the tasks of the critical path;
//  - every time on one nanosecond grid (a slice's duration is its rounded
//    end minus its rounded start), so flow ends land on their slices;
//  - flow arrows ("s"/"f") from each pipeline send to its receive, and from
//    each collective step's sender to its receiver;
//  - counter ("C") tracks: memory of every GPU (in its node's process), and
//    active flows and throughput of the ten hottest links;
//  - a "critical path" process with the path's segments;
//  - metadata naming the scenario (otherData, process names).
// At scale (16,384 GPUs: ~740 MB) the full trace is more than Perfetto's UI
// opens, so it can hold one data-parallel replica instead (TraceDetail):
// replicas run the same steps, and the critical path and the hottest links
// stay whole.
// Streamed with fmt rather than built as a JSON tree: a large run has
// millions of events.
#include <fmt/compile.h>
#include <fmt/ostream.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <set>
#include <span>
#include <string_view>
#include <vector>

#include "analysis/images_alike.hpp"
#include "analysis/reporters/machine_numbers.hpp"
#include "analysis/reporters/reporters.hpp"
#include "platforms/number_format.hpp"
#include "trainsim_version.hpp"

namespace trainsim::analysis {
namespace {

// Collective steps beyond this many get no arrow (the trace stays loadable).
constexpr std::size_t kMaxCollectiveArrows = 50000;

struct ThreadId {
  int pid;
  int tid;
};

ThreadId thread_of(const platforms::ClusterSpec& cluster, int gpu, Stream stream) {
  const auto loc = cluster.locate(gpu);
  return {loc.node, loc.local_rank * kStreamCount + static_cast<int>(stream)};
}

// Times on a whole-nanosecond grid, written as microseconds with three
// decimals (what the trace format takes). A slice's start and end are each
// rounded once and its duration is their difference, so a flow that ends
// when its slice ends lands exactly on it, never a nanosecond after.
// (A time is a value that formats itself into the event being written:
// no string of its own for each of the trace's millions of times.)
struct Ns {
  long long ns;
};
Ns ns(double seconds) {
  return {std::llround(seconds * 1e9)};
}
Ns us(double seconds) {
  return ns(seconds);
}
Ns dur(double start_s, double end_s) {
  return Ns{ns(end_s).ns - ns(start_s).ns};
}

}  // namespace
}  // namespace trainsim::analysis

template <>
struct fmt::formatter<trainsim::analysis::Ns> {
  constexpr auto parse(format_parse_context& ctx) { return ctx.begin(); }
  template <class Context>
  auto format(const trainsim::analysis::Ns& t, Context& ctx) const {
    const long long whole = t.ns / 1000, part = t.ns % 1000;
    return part < 0 ? fmt::format_to(ctx.out(), FMT_COMPILE("-{}.{:03}"), -whole, -part)
                    : fmt::format_to(ctx.out(), FMT_COMPILE("{}.{:03}"), whole, part);
  }
};

namespace trainsim::analysis {
namespace {

// Kineto's names for a GPU's streams ("stream 7" is PyTorch's default
// compute stream in its traces); the communication streams are numbered
// after it, each with its role.
int kineto_stream_id(Stream stream) {
  return stream == Stream::compute ? 7 : 12 + static_cast<int>(stream);
}
std::string_view stream_role(Stream stream) {
  switch (stream) {
    case Stream::compute:
      return "compute";
    case Stream::tp_comm:
      return "TP comm";
    case Stream::pp_comm:
      return "PP p2p";
    case Stream::dp_comm:
      return "DP comm";
    case Stream::cp_comm:
      return "CP comm";
    case Stream::ep_comm:
      return "EP all-to-all";
  }
  return "";
}

std::string json_string(std::string_view text) {
  return nlohmann::json(std::string(text)).dump();
}

// Bytes of an event as written (measured on the quick start's trace: 124 on
// average).
constexpr double kBytesPerEvent = 130;

// Counted class by class: the fold checks that a task's images are of its
// kind (sim/replay/replica_fold.cpp).
// The collective steps (flows of collective tasks), counted up to `cap`:
// a count of `cap` or more stands for any larger one (the trace draws at
// most kMaxCollectiveArrows), so a folded run's millions of flows, each a
// task's kind read at random, are not all read.
std::size_t collective_flows(const RunContext& run, const Timeline& timeline, std::size_t cap) {
  std::size_t steps = 0;
  for (const auto& f : timeline.flows.recorded()) {
    if (steps >= cap)
      break;
    if (run.graph[f.task].kind == workloads::TaskKind::collective)
      steps += static_cast<std::size_t>(timeline.flows.images_of(f));
  }
  return steps;
}

// The plan describes the GPUs (an imported Chakra trace may not) and has
// replicas to leave out.
bool has_replicas(const RunContext& run) {
  const auto& p = run.plan;
  return p.dp > 1 && p.tp * p.cp * p.dp * p.pp == run.graph.gpu_count;
}

// Which images of a record land on a GPU the trace shows, read class by
// class: a record on endpoint g stands for its images k = 0 .. n-1 on the
// endpoints power(g, k) (analysis/record_list.hpp), and of these only the
// ones on a shown GPU are written. So the writer computes only those images
// (replica 0 of 2,048 replicas: 1 in 2,048), in the order the full list
// reads them, instead of every image.
class ShownImages {
 public:
  ShownImages(const std::vector<char>& shown, const FoldImages* images) {
    const auto on_shown = [&](std::size_t gpu) { return gpu < shown.size() && shown[gpu] != 0; };
    const std::size_t endpoints = images != nullptr ? images->endpoints.size() : shown.size();
    first_.reserve(endpoints + 1);
    for (std::size_t g = 0; g < endpoints; ++g) {
      first_.push_back(static_cast<std::uint32_t>(ks_.size()));
      if (images == nullptr) {
        if (on_shown(g))
          ks_.push_back(0);
        continue;
      }
      for (int k = 0; k < images->order; ++k)
        if (on_shown(images->endpoints.power(g, k)))
          ks_.push_back(static_cast<std::uint16_t>(k));
    }
    first_.push_back(static_cast<std::uint32_t>(ks_.size()));
  }
  // Whether any image of a record on `gpu` is on a shown GPU (of(gpu) is
  // not empty): asked of every recorded flow, most of which have none.
  bool any(int gpu) const {
    const auto g = static_cast<std::size_t>(gpu);
    return gpu >= 0 && g + 1 < first_.size() && first_[g] != first_[g + 1];
  }
  // The k, ascending, for which image k of a record on `gpu` is on a shown GPU.
  std::span<const std::uint16_t> of(int gpu) const {
    const auto g = static_cast<std::size_t>(gpu);
    if (gpu < 0 || g + 1 >= first_.size())
      return {};
    return {ks_.data() + first_[g], ks_.data() + first_[g + 1]};
  }

 private:
  std::vector<std::uint32_t> first_;  // each endpoint's first entry in ks_
  std::vector<std::uint16_t> ks_;
};

// Events are formatted into one buffer, handed to the stream a megabyte at
// a time (fmt::print to the stream formatted each event into a buffer of
// its own and wrote it through the stream's sentry: a third of the trace's
// time at 16,384 GPUs).
class EventWriter {
 public:
  explicit EventWriter(std::ostream& out) : out_(out) {}
  // Where the next event is formatted, after its separator.
  fmt::appender next() {
    if (buffer_.size() >= kFlushBytes)
      flush();
    if (!first_)
      buffer_.append(std::string_view(",\n"));
    first_ = false;
    return fmt::appender(buffer_);
  }
  void flush() {
    out_.write(buffer_.data(), static_cast<std::streamsize>(buffer_.size()));
    buffer_.clear();
  }

 private:
  static constexpr std::size_t kFlushBytes = 1 << 20;
  std::ostream& out_;
  fmt::memory_buffer buffer_;
  bool first_ = true;
};

}  // namespace

double estimated_full_trace_bytes(const RunContext& run, const Timeline& timeline, const Report& report) {
  // A slice per record; a send adds its receive slice, two arrow ends and
  // an instant; a collective step (up to the arrow cap) two instants and
  // two arrow ends; a memory counter per sample; names for every GPU's
  // streams; the critical path's segments.
  std::size_t events = timeline.records.size();
  for (const auto& r : timeline.records.recorded())
    if (run.graph[r.task].kind == workloads::TaskKind::send)
      events += 4 * static_cast<std::size_t>(timeline.records.images_of(r));
  events += 4 * std::min(collective_flows(run, timeline, kMaxCollectiveArrows), kMaxCollectiveArrows);
  for (const auto& m : report.memory.gpus)
    events += m.samples().size();
  events += 2 * static_cast<std::size_t>(run.graph.gpu_count) * 3;
  events += report.critical_path.segments.size();
  return kBytesPerEvent * static_cast<double>(events);
}

TraceDetail resolved_trace_detail(TraceDetail asked, const RunContext& run, const Timeline& timeline,
                                  const Report& report) {
  if (asked != TraceDetail::automatic)
    return asked;
  return has_replicas(run) && estimated_full_trace_bytes(run, timeline, report) > kTraceAutoMax_bytes
             ? TraceDetail::replica
             : TraceDetail::full;
}

void write_chrome_trace(std::ostream& out, const RunContext& run, const Timeline& timeline,
                        const Report& report, TraceDetail detail) {
  const auto& cluster = run.cluster;
  const int nodes = cluster.node_count();
  const int critical_pid = nodes;
  const int links_pid = nodes + 1;
  detail = resolved_trace_detail(detail, run, timeline, report);
  // The GPUs the trace shows (a plan without replicas shows them all).
  std::vector<char> shown(static_cast<std::size_t>(run.graph.gpu_count), 1);
  const bool one_replica = detail == TraceDetail::replica && has_replicas(run);
  int shown_gpus = run.graph.gpu_count;
  if (one_replica) {
    shown_gpus = 0;
    for (int gpu = 0; gpu < run.graph.gpu_count; ++gpu) {
      shown[static_cast<std::size_t>(gpu)] = run.plan.dp_rank_of(gpu) == 0;
      shown_gpus += shown[static_cast<std::size_t>(gpu)];
    }
  }
  const auto is_shown = [&](int gpu) { return shown[static_cast<std::size_t>(gpu)] != 0; };
  // Records and flows are read class by class, only their images on shown
  // GPUs (ShownImages): the same records, in the same order, as reading
  // every image of the timeline and skipping the ones not shown.
  const ShownImages shown_records(shown, timeline.records.fold_images());
  const ShownImages shown_flows(shown, timeline.flows.fold_images());
  // The collective steps between shown GPUs. When every GPU is shown and the
  // fold maps GPUs onto GPUs, each image of a flow is between shown GPUs, and
  // it counts when its task (the image of the flow's task) is a collective:
  // counted once per recorded task and read for each of its flows, instead
  // of computing every image of every flow (34M at 16,384 GPUs, m = 32).
  std::size_t collective_steps = 0;
  const FoldImages* flow_fold = timeline.flows.fold_images();
  bool every_image_shown = !one_replica && flow_fold != nullptr;
  for (int gpu = 0; every_image_shown && gpu < run.graph.gpu_count; ++gpu)
    every_image_shown = flow_fold->endpoints.power(static_cast<std::size_t>(gpu), 1) <
                        static_cast<std::uint32_t>(run.graph.gpu_count);
  std::vector<std::int32_t>
      collective_images;  // per task: of its images, the collectives (-1: not counted yet)
  if (every_image_shown)
    collective_images.assign(run.graph.size(), -1);
  for (const auto& first : timeline.flows.recorded()) {
    // Unless every image counts, a flow none of whose images leaves from a
    // shown GPU counts nothing: its task is not read (most flows, when the
    // trace shows one replica).
    if (!every_image_shown && !shown_flows.any(first.src_gpu))
      continue;
    if (run.graph[first.task].kind != workloads::TaskKind::collective)
      continue;
    const int n = timeline.flows.images_of(first);
    if (every_image_shown && first.src_gpu >= 0 && first.src_gpu < run.graph.gpu_count &&
        first.dst_gpu >= 0 && first.dst_gpu < run.graph.gpu_count) {
      auto& count = collective_images[first.task];
      if (count < 0) {
        count = 0;
        for (int k = 0; k < n; ++k)
          count += run.graph[flow_fold->tasks.power(first.task, k)].kind == workloads::TaskKind::collective;
      }
      collective_steps += static_cast<std::size_t>(count);
      continue;
    }
    for (const int k : shown_flows.of(first.src_gpu)) {
      if (k >= n)
        break;
      const FlowRecord f = timeline.flows.image(first, k);
      collective_steps += run.graph[f.task].kind == workloads::TaskKind::collective && is_shown(f.src_gpu) &&
                          is_shown(f.dst_gpu);
    }
  }
  out << "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"scenario\":" << json_string(run.scenario_name)
      << ",\"scenario_file\":" << json_string(run.scenario_file) << ",\"generator\":\"trainsim "
      << version_string << "\""
      << fmt::format(FMT_COMPILE(",\"iteration_time_s\":{},\"mfu\":{}"),
                     units::format_machine(timeline.end_s), units::format_machine(report.summary.mfu))
      << fmt::format(FMT_COMPILE(",\"collective_steps\":{},\"collective_step_arrows\":{}"), collective_steps,
                     std::min(collective_steps, kMaxCollectiveArrows));
  if (one_replica)
    out << fmt::format(
        FMT_COMPILE(
            ",\"trace\":\"replica\",\"trace_gpus\":{},\"gpus\":{},\"trace_note\":\"the GPUs of data-parallel "
            "replica 0 only (trainsim run --trace full for every GPU)\""),
        shown_gpus, run.graph.gpu_count);
  out << "},\n\"traceEvents\":[\n";
  EventWriter w(out);

  std::set<workloads::TaskId> critical;
  for (const auto& seg : report.critical_path.segments)
    if (seg.is_task)
      critical.insert(seg.task);

  // Name every node and every (GPU, stream) that appears: a flag per GPU
  // stream, read in (GPU, stream) order.
  std::vector<char> used_streams(static_cast<std::size_t>(run.graph.gpu_count) * kStreamCount, 0);
  const auto use = [&](int gpu, Stream stream) {
    used_streams[static_cast<std::size_t>(gpu) * kStreamCount + static_cast<std::size_t>(stream)] = 1;
  };
  for (int gpu = 0; gpu < run.graph.gpu_count; ++gpu)
    if (is_shown(gpu))
      use(gpu, Stream::compute);
  const auto for_each_shown_record = [&](const auto& on) {
    for (const auto& first : timeline.records.recorded()) {
      if (!shown_records.any(first.gpu))
        continue;
      const int n = timeline.records.images_of(first);
      for (const int k : shown_records.of(first.gpu)) {
        if (k >= n)
          break;
        on(timeline.records.image(first, k));
      }
    }
  };
  for_each_shown_record([&](const TaskRecord& r) {
    if (!is_shown(r.gpu))
      return;
    use(r.gpu, r.stream);
    const auto& task = run.graph[r.task];
    if (task.kind == workloads::TaskKind::send && is_shown(task.peer))
      use(task.peer, r.stream);
  });
  std::vector<std::pair<int, Stream>> used;
  for (std::size_t i = 0; i < used_streams.size(); ++i)
    if (used_streams[i] != 0)
      used.emplace_back(static_cast<int>(i / kStreamCount), static_cast<Stream>(i % kStreamCount));
  std::set<int> used_nodes;
  for (const auto& [gpu, stream] : used)
    used_nodes.insert(cluster.locate(gpu).node);
  for (int node : used_nodes) {
    int first_gpu = 0;
    while (cluster.locate(first_gpu).node != node)
      ++first_gpu;
    fmt::format_to(
        w.next(),
        FMT_COMPILE("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":{}}}}}"), node,
        json_string(fmt::format(FMT_COMPILE("{}: node {} ({})"), run.scenario_name, node,
                                cluster.gpu_of(first_gpu).name)));
    fmt::format_to(
        w.next(),
        FMT_COMPILE(
            "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"args\":{{\"sort_index\":{}}}}}"),
        node, node + 1);
  }
  for (const auto& [gpu, stream] : used) {
    const auto t = thread_of(cluster, gpu, stream);
    fmt::format_to(
        w.next(),
        FMT_COMPILE(
            "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":{},\"args\":{{\"name\":\"GPU {} "
            "stream {} {} (stage {})\"}}}}"),
        t.pid, t.tid, gpu, kineto_stream_id(stream), stream_role(stream), run.plan.pp_rank_of(gpu));
    fmt::format_to(
        w.next(),
        FMT_COMPILE("{{\"ph\":\"M\",\"name\":\"thread_sort_index\",\"pid\":{},\"tid\":{},\"args\":{{\"sort_"
                    "index\":{}}}}}"),
        t.pid, t.tid, t.tid);
  }

  long flow_id = 0;
  // A class's images are read one after the other and share their record's
  // times; the ones whose tasks write the same row fields (images_alike.hpp)
  // and make the same collective choice share its label and arguments too:
  // what they share is formatted once, checked for each image, not assumed.
  struct Shared {
    bool times = false, row = false;
    double start_s = 0, end_s = 0;
    Ns ts{}, dur{}, arrival{};  // us(start), dur(start, end), us(end)
    workloads::TaskId task = 0;
    std::optional<CollectiveChoice> choice;
    std::string label, collective_args;
    std::string middle;  // "ts" .. "bytes": the times and the row's fields
  } c;
  const auto same_choice = [](const std::optional<CollectiveChoice>& a, const CollectiveChoice* b) {
    return a.has_value() == (b != nullptr) &&
           (b == nullptr || (a->algorithm == b->algorithm && a->channels == b->channels &&
                             a->fidelity == b->fidelity && a->representation == b->representation));
  };
  for_each_shown_record([&](const TaskRecord& r) {
    if (!is_shown(r.gpu))
      return;
    const auto& task = run.graph[r.task];
    const auto t = thread_of(cluster, r.gpu, r.stream);
    const bool on_path = critical.count(r.task) > 0;
    const bool new_times = !c.times || !(r.start_s == c.start_s && r.end_s == c.end_s);
    if (new_times) {
      c.times = true;
      c.start_s = r.start_s;
      c.end_s = r.end_s;
      c.ts = us(r.start_s);
      c.dur = dur(r.start_s, r.end_s);
      c.arrival = us(r.end_s);
    }
    // Only collective tasks have a choice (Timeline::collectives).
    const auto* choice =
        task.kind == workloads::TaskKind::collective ? timeline.collective_choice(r.task) : nullptr;
    const bool new_row = !c.row || !same_choice(c.choice, choice) ||
                         !(r.task == c.task || same_row_fields(run.graph, c.task, r.task));
    if (new_row) {
      c.row = true;
      c.task = r.task;
      c.label = workloads::task_label(run.graph, r.task);
      c.choice = choice != nullptr ? std::optional<CollectiveChoice>(*choice) : std::nullopt;
      c.collective_args.clear();
      if (choice != nullptr)
        c.collective_args =
            fmt::format(FMT_COMPILE(",\"algorithm\":\"{}\",\"channels\":{},\"fidelity\":\"{}\""),
                        to_string(choice->algorithm), choice->channels, to_string(choice->fidelity));
    }
    if (new_times || new_row)
      c.middle = fmt::format(
          FMT_COMPILE("\"ts\":{},\"dur\":{},\"args\":{{\"micro_batch\":{},\"stage\":{},\"bytes\":{}"), c.ts,
          c.dur, task.micro_batch, task.stage, Fixed0{task.bytes});
    fmt::format_to(
        w.next(),
        FMT_COMPILE(
            "{{\"ph\":\"X\",\"name\":\"{}\",\"cat\":\"{}\",\"pid\":{},\"tid\":{},{},\"critical\":{}{}}}}}"),
        c.label, to_string(task.kind), t.pid, t.tid, c.middle, on_path, c.collective_args);
    if (task.kind != workloads::TaskKind::send || !is_shown(task.peer))
      return;
    // The receive side of a send, and an arrow from the start of the send to
    // the arrival. Chrome DevTools binds a flow event to the event with the
    // same (ts, pid, tid, cat): the send slice, and an "arrived" instant;
    // Perfetto and chrome://tracing bind to the enclosing slice.
    const auto d = thread_of(cluster, task.peer, r.stream);
    fmt::format_to(
        w.next(),
        FMT_COMPILE("{{\"ph\":\"X\",\"name\":\"recv mb{}\",\"cat\":\"send\",\"pid\":{},\"tid\":{},\"ts\":{},"
                    "\"dur\":{},\"args\":{{\"from_gpu\":{},\"critical\":{}}}}}"),
        task.micro_batch, d.pid, d.tid, c.ts, c.dur, r.gpu, on_path);
    ++flow_id;
    fmt::format_to(
        w.next(),
        FMT_COMPILE(
            "{{\"ph\":\"s\",\"name\":\"p2p\",\"cat\":\"send\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":{}}}"),
        flow_id, t.pid, t.tid, c.ts);
    fmt::format_to(
        w.next(),
        FMT_COMPILE(
            "{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"p2p\",\"cat\":\"send\",\"id\":{},\"pid\":{},\"tid\":{},"
            "\"ts\":{}}}"),
        flow_id, d.pid, d.tid, c.arrival);
    fmt::format_to(
        w.next(),
        FMT_COMPILE(
            "{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"arrived mb{}\",\"cat\":\"send\",\"pid\":{},\"tid\":{},"
            "\"ts\":{}}}"),
        task.micro_batch, d.pid, d.tid, c.arrival);
  });

  // Collective steps: an arrow per flow, from the sender's stream at the
  // flow's start to the receiver's at its end, each end on an instant event
  // (what DevTools binds it to; the others bind to the collective's slice).
  std::size_t arrows = 0;
  const auto write_arrow = [&](const FlowRecord& f) {
    const auto& task = run.graph[f.task];
    if (task.kind != workloads::TaskKind::collective || !is_shown(f.src_gpu) || !is_shown(f.dst_gpu))
      return true;
    if (++arrows > kMaxCollectiveArrows)
      return false;
    const auto stream = stream_of(task);
    const auto a = thread_of(cluster, f.src_gpu, stream);
    const auto b = thread_of(cluster, f.dst_gpu, stream);
    const std::string name = fmt::format(FMT_COMPILE("{} {} step"), workloads::to_string(task.comm),
                                         workloads::to_string(task.op));
    ++flow_id;
    fmt::format_to(
        w.next(),
        FMT_COMPILE(
            "{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"{} send\",\"cat\":\"collective\",\"pid\":{},\"tid\":{},"
            "\"ts\":{},\"args\":{{\"to_gpu\":{},\"bytes\":{}}}}}"),
        name, a.pid, a.tid, us(f.start_s), f.dst_gpu, Fixed0{f.bytes});
    fmt::format_to(
        w.next(),
        FMT_COMPILE(
            "{{\"ph\":\"i\",\"s\":\"t\",\"name\":\"{} recv\",\"cat\":\"collective\",\"pid\":{},\"tid\":{},"
            "\"ts\":{},\"args\":{{\"from_gpu\":{}}}}}"),
        name, b.pid, b.tid, us(f.end_s), f.src_gpu);
    fmt::format_to(
        w.next(),
        FMT_COMPILE(
            "{{\"ph\":\"s\",\"name\":\"{}\",\"cat\":\"collective\",\"id\":{},\"pid\":{},\"tid\":{},\"ts\":"
            "{}}}"),
        name, flow_id, a.pid, a.tid, us(f.start_s));
    fmt::format_to(w.next(),
                   FMT_COMPILE("{{\"ph\":\"f\",\"bp\":\"e\",\"name\":\"{}\",\"cat\":\"collective\",\"id\":{},"
                               "\"pid\":{},\"tid\":{},"
                               "\"ts\":{}}}"),
                   name, flow_id, b.pid, b.tid, us(f.end_s));
    return true;
  };
  for (bool more = true; const auto& first : timeline.flows.recorded()) {
    if (!shown_flows.any(first.src_gpu))
      continue;
    const int n = timeline.flows.images_of(first);
    for (const int k : shown_flows.of(first.src_gpu)) {
      if (k >= n || !(more = write_arrow(timeline.flows.image(first, k))))
        break;
    }
    if (!more)
      break;
  }

  // Memory counters, one track per GPU in its node's process.
  for (const auto& m : report.memory.gpus) {
    if (!is_shown(m.gpu))
      continue;
    const int pid = cluster.locate(m.gpu).node;
    for (const auto& sample : m.samples())
      fmt::format_to(
          w.next(),
          FMT_COMPILE(
              "{{\"ph\":\"C\",\"name\":\"memory GPU {}\",\"cat\":\"memory\",\"pid\":{},\"ts\":{},\"args\":{{"
              "\"GiB\":{:.6f}}}}}"),
          m.gpu, pid, us(sample.time_s), sample.bytes / (1024.0 * 1024 * 1024));
  }

  // The critical path.
  fmt::format_to(
      w.next(), FMT_COMPILE("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":{}}}}}"),
      critical_pid, json_string(fmt::format(FMT_COMPILE("{}: critical path"), run.scenario_name)));
  fmt::format_to(
      w.next(),
      FMT_COMPILE(
          "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"args\":{{\"sort_index\":0}}}}"),
      critical_pid);
  fmt::format_to(
      w.next(),
      FMT_COMPILE(
          "{{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":{},\"tid\":0,\"args\":{{\"name\":\"critical "
          "path\"}}}}"),
      critical_pid);
  for (const auto& seg : report.critical_path.segments) {
    const std::string label = seg.is_task ? workloads::task_label(run.graph, seg.task) : "wait";
    std::string where;
    if (seg.gpu >= 0)
      where = fmt::format(FMT_COMPILE("GPU {}"), seg.gpu);
    else if (seg.link >= 0)
      where = timeline.links[static_cast<std::size_t>(seg.link)].name;
    fmt::format_to(
        w.next(),
        FMT_COMPILE("{{\"ph\":\"X\",\"name\":{},\"cat\":\"critical_path\",\"pid\":{},\"tid\":0,\"ts\":{},"
                    "\"dur\":{},"
                    "\"args\":{{\"blame\":{},\"where\":{}}}}}"),
        json_string(label), critical_pid, us(seg.start_s), dur(seg.start_s, seg.end_s),
        json_string(seg.blame_kind), json_string(where));
  }

  // The hottest links: active flows and throughput over time.
  const auto& ut = report.utilization;
  if (!ut.hottest.empty()) {
    fmt::format_to(
        w.next(),
        FMT_COMPILE("{{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":{},\"args\":{{\"name\":{}}}}}"),
        links_pid, json_string(fmt::format(FMT_COMPILE("{}: hottest links"), run.scenario_name)));
    fmt::format_to(
        w.next(),
        FMT_COMPILE(
            "{{\"ph\":\"M\",\"name\":\"process_sort_index\",\"pid\":{},\"args\":{{\"sort_index\":{}}}}}"),
        links_pid, nodes + 2);
    // Each hot link's events, found by link index; a flow's images share
    // its times and rate and cross the images of its route.
    using Events = std::vector<std::pair<double, std::pair<int, double>>>;
    std::map<std::uint32_t, Events> events;
    for (int l : ut.hottest)
      events[static_cast<std::uint32_t>(l)];
    std::vector<Events*> events_of(timeline.links.size(), nullptr);
    for (auto& [link, ev] : events)
      if (link < events_of.size())
        events_of[link] = &ev;
    // Whether a route (by its first link) crosses a hot link: most cross
    // none, and a route is shared by many flows and images.
    std::vector<std::int8_t> route_hot(timeline.flow_links.size() + 1, -1);
    const auto crosses_hot = [&](std::uint32_t first_link, std::uint32_t link_count) {
      auto& hot = route_hot[first_link];
      if (hot < 0) {
        hot = 0;
        for (std::uint32_t k = 0; k < link_count; ++k) {
          const std::uint32_t link = timeline.flow_links[first_link + k];
          hot = static_cast<std::int8_t>(hot || (link < events_of.size() && events_of[link] != nullptr));
        }
      }
      return hot != 0;
    };
    const FoldImages* flow_images = timeline.flows.fold_images();
    // Whether any image of a recorded route crosses a hot link: most flows'
    // images cross none, and a recorded route is shared by many flows, so a
    // flow is then skipped without computing its m images' routes.
    std::vector<std::int8_t> images_hot(flow_images != nullptr ? timeline.flow_links.size() + 1 : 0, -1);
    const auto any_image_hot = [&](const FlowRecord& first, int n) {
      auto& hot = images_hot[first.first_link];
      if (hot < 0) {
        hot = 0;
        for (int j = 0; j < n; ++j)
          hot = static_cast<std::int8_t>(
              hot || crosses_hot(j == 0 ? first.first_link : flow_images->route_image(first.first_link, j),
                                 first.link_count));
      }
      return hot != 0;
    };
    for (const auto& first : timeline.flows.recorded()) {
      const int n = timeline.flows.images_of(first);
      if (n > 1 && !any_image_hot(first, n))
        continue;
      const double rate = first.end_s > first.start_s ? first.bytes / (first.end_s - first.start_s) : 0;
      for (int j = 0; j < n; ++j) {
        // Image j's route (its times are the record's).
        const std::uint32_t first_link =
            j == 0 ? first.first_link : flow_images->route_image(first.first_link, j);
        if (!crosses_hot(first_link, first.link_count))
          continue;
        for (std::uint32_t k = 0; k < first.link_count; ++k) {
          const std::uint32_t link = timeline.flow_links[first_link + k];
          Events* ev = link < events_of.size() ? events_of[link] : nullptr;
          if (ev == nullptr)
            continue;
          ev->push_back({first.start_s, {+1, rate}});
          ev->push_back({first.end_s, {-1, -rate}});
        }
      }
    }
    for (int l : ut.hottest) {
      auto& ev = events[static_cast<std::uint32_t>(l)];
      std::sort(ev.begin(), ev.end());
      const std::string name =
          json_string(fmt::format(FMT_COMPILE("link {}"), ut.links[static_cast<std::size_t>(l)].name));
      int flows = 0;
      double rate = 0;
      for (std::size_t i = 0; i < ev.size();) {
        const double time = ev[i].first;
        for (; i < ev.size() && ev[i].first == time; ++i) {
          flows += ev[i].second.first;
          rate += ev[i].second.second;
        }
        fmt::format_to(
            w.next(),
            FMT_COMPILE(
                "{{\"ph\":\"C\",\"name\":{},\"cat\":\"link\",\"pid\":{},\"ts\":{},\"args\":{{\"flows\":{},"
                "\"GBps\":{:.6f}}}}}"),
            name, links_pid, us(time), flows, flows > 0 ? std::max(0.0, rate) / 1e9 : 0.0);
      }
    }
  }
  w.flush();
  out << "\n]}\n";
}

}  // namespace trainsim::analysis
