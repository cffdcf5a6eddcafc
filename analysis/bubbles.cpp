#include "analysis/bubbles.hpp"

#include <algorithm>
#include <cstdint>
#include <span>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "analysis/content_hash.hpp"
#include "analysis/execution_index.hpp"
#include "analysis/fold_classes.hpp"
#include "analysis/gpu_power.hpp"
#include "analysis/intervals.hpp"

namespace trainsim::analysis {

using workloads::Task;
using workloads::TaskId;
using workloads::TaskKind;

std::string_view to_string(BubbleCause cause) {
  switch (cause) {
    case BubbleCause::warmup_cooldown:
      return "warmup_cooldown";
    case BubbleCause::p2p_wait:
      return "p2p_wait";
    case BubbleCause::collective_wait:
      return "collective_wait";
    case BubbleCause::straggler:
      return "straggler";
    case BubbleCause::dp_comm:
      return "dp_comm";
    case BubbleCause::optimizer:
      return "optimizer";
    case BubbleCause::expert_imbalance:
      return "expert_imbalance";
  }
  return "?";
}

std::string_view describe(BubbleCause cause) {
  switch (cause) {
    case BubbleCause::warmup_cooldown:
      return "pipeline warm-up / cool-down (and stage imbalance)";
    case BubbleCause::p2p_wait:
      return "waiting for a pipeline p2p transfer";
    case BubbleCause::collective_wait:
      return "waiting for a collective";
    case BubbleCause::straggler:
      return "waiting behind a slower peer (straggler)";
    case BubbleCause::dp_comm:
      return "exposed DP gradient communication";
    case BubbleCause::optimizer:
      return "optimizer step";
    case BubbleCause::expert_imbalance:
      return "waiting for the busiest expert GPU (expert imbalance)";
  }
  return "?";
}

std::vector<BubbleCause> reported_causes(const BubbleReport& report) {
  std::vector<BubbleCause> causes(kBubbleCauses.begin(), kBubbleCauses.end());
  if (report.expert_imbalance_modelled)
    causes.push_back(BubbleCause::expert_imbalance);
  return causes;
}

namespace {

bool is_forward_backward(TaskKind kind) {
  return workloads::is_compute(kind) && kind != TaskKind::optimizer;
}

// What a GPU waiting on `task` is waiting for.
BubbleCause cause_of(const Task& task) {
  switch (task.kind) {
    case TaskKind::optimizer:
      return BubbleCause::optimizer;
    case TaskKind::send:
      return BubbleCause::p2p_wait;
    case TaskKind::collective:
      return task.comm == workloads::CommKind::dp ? BubbleCause::dp_comm : BubbleCause::collective_wait;
    default:
      return BubbleCause::warmup_cooldown;
  }
}

std::size_t at(BubbleCause cause) {
  return static_cast<std::size_t>(cause);
}

// Reference duration of every compute task: the fastest nominal duration of
// the same task (kind, stage, chunk, micro-batch, and its place among that
// op's tasks on its GPU: the builder splits an op into the same pieces on
// every GPU, and the pieces differ in length) on any GPU, capped by its own
// actual duration. Nominal durations are under balanced routing (less the
// task's imbalance_s).
// `orbits`, when given, are GPU classes whose compute orders map onto their
// representatives' (compute_orders_are_images): an image GPU's tasks have
// its representative's ops in the same order, so their pieces are copied.
std::vector<double> reference_durations(const workloads::TaskGraph& graph, const ExecutionIndex& index,
                                        const GpuClasses* orbits) {
  using Op = std::tuple<int, int, int, int>;
  auto op_of = [](const Task& t) { return Op{static_cast<int>(t.kind), t.stage, t.chunk, t.micro_batch}; };
  // A task's piece: how many tasks of its op ran before it on its GPU (its
  // GPU's tasks sorted by op, then by their place in the compute order).
  std::vector<int> piece(graph.size(), 0);
  std::vector<std::pair<Op, std::uint32_t>> ops;
  for (int gpu = 0; gpu < graph.gpu_count; ++gpu) {
    const auto& order = index.compute_order(gpu);
    if (orbits != nullptr && !orbits->is_representative(static_cast<std::size_t>(gpu)))
      continue;
    ops.clear();
    for (std::uint32_t i = 0; i < order.size(); ++i)
      ops.emplace_back(op_of(graph[order[i]]), i);
    std::sort(ops.begin(), ops.end());
    for (std::size_t k = 1; k < ops.size(); ++k)
      if (ops[k].first == ops[k - 1].first)
        piece[order[ops[k].second]] = piece[order[ops[k - 1].second]] + 1;
  }
  for (int gpu = 0; orbits != nullptr && gpu < graph.gpu_count; ++gpu) {
    const auto rep = orbits->representative(static_cast<std::size_t>(gpu));
    if (rep == static_cast<std::size_t>(gpu))
      continue;
    const auto& order = index.compute_order(gpu);
    const auto& theirs = index.compute_order(static_cast<int>(rep));
    for (std::size_t i = 0; i < order.size(); ++i)
      piece[order[i]] = piece[theirs[i]];
  }
  // Each (op, piece) gets a slot, looked up once per task: the task keeps
  // its slot (`piece` reused), and the fastest duration sits in the slot.
  // (Hashed: a 16k-GPU run looks up half a million compute tasks among a
  // few hundred slots, which a tree's comparisons of five numbers made the
  // costliest part of the bubbles; the slots' order is not read.)
  struct OpPieceHash {
    std::size_t operator()(const std::tuple<Op, int>& key) const {
      const auto& [op, piece_of_op] = key;
      ContentHash h;
      h.add(static_cast<std::uint64_t>(std::get<0>(op)) << 32 | static_cast<std::uint32_t>(std::get<1>(op)));
      h.add(static_cast<std::uint64_t>(std::get<2>(op)) << 32 | static_cast<std::uint32_t>(std::get<3>(op)));
      h.add(static_cast<std::uint64_t>(static_cast<std::uint32_t>(piece_of_op)));
      return static_cast<std::size_t>(h.value());
    }
  };
  std::unordered_map<std::tuple<Op, int>, int, OpPieceHash> slot_of;
  std::vector<double> fastest;
  for (TaskId v = 0; v < graph.size(); ++v) {
    const Task& t = graph[v];
    if (!workloads::is_compute(t.kind) || !index.ran(v))
      continue;
    const double nominal = t.duration_s - t.imbalance_s;
    const auto [it, inserted] =
        slot_of.try_emplace(std::make_tuple(op_of(t), piece[v]), static_cast<int>(fastest.size()));
    if (inserted)
      fastest.push_back(nominal);
    else
      fastest[static_cast<std::size_t>(it->second)] =
          std::min(fastest[static_cast<std::size_t>(it->second)], nominal);
    piece[v] = it->second;
  }
  std::vector<double> ref(graph.size(), 0.0);
  for (TaskId v = 0; v < graph.size(); ++v) {
    if (!index.ran(v))
      continue;
    const double actual = index.end_s(v) - index.start_s(v);
    ref[v] = workloads::is_compute(graph[v].kind)
                 ? std::min(actual, fastest[static_cast<std::size_t>(piece[v])])
                 : actual;
  }
  return ref;
}

// The recorded schedule re-timed with reference durations: same order on
// every compute stream, same dependencies, communication as recorded.
double retimed_iteration_s(const workloads::TaskGraph& graph, const ExecutionIndex& index,
                           const std::vector<double>& duration_s) {
  std::vector<double> end(graph.size(), 0.0);
  double t_end = 0;
  for (TaskId v : index.topological_order()) {
    double ready = -1;
    auto consider = [&](TaskId u) {
      if (u == ExecutionIndex::kNone || !index.ran(u))
        return;
      ready = std::max(ready, end[u]);
    };
    for (auto [e, e_end] = boost::in_edges(workloads::task_vertex(v), graph.dependencies()); e != e_end; ++e)
      consider(boost::source(*e, graph.dependencies()));
    consider(index.stream_predecessor(v));
    double start = index.start_s(v);
    // When it was released as recorded: its releaser is the latest-ending of
    // the same candidates (ExecutionIndex), so its end is their latest.
    if (ready >= 0)
      start = ready + std::max(0.0, index.start_s(v) - index.end_s(index.releaser(v)));
    end[v] = start + duration_s[v];
    t_end = std::max(t_end, end[v]);
  }
  return t_end;
}

class GapWalker {
 public:
  GapWalker(const workloads::TaskGraph& graph, const ExecutionIndex& index) : graph_(graph), index_(index) {}

  // Blames [a, b) of GPU `gpu` on what `waiter` (starting at b) waited for;
  // waiter == kNone stands for the end of the iteration. `ties`, when given,
  // gets every task of the walk whose releaser was chosen among tasks that
  // ended at the same instant (ExecutionIndex::tied), up to the first task
  // that is its own image under `fixed` (a spanning collective: the walks of
  // its members' images go on from it as this one does).
  void walk(double a, double b, TaskId waiter, const std::vector<Interval>& all_comm,
            const std::vector<Interval>& all_waits, GpuBubbles& out, std::vector<TaskId>* ties = nullptr,
            const PermutationPowers* fixed = nullptr) const {
    // Every piece blamed lies within [a, b): the intervals that can cover
    // one are found once per walk.
    const auto comm = within(all_comm, a, b);
    const auto waits = within(all_waits, a, b);
    double hi = b;
    TaskId cur = waiter;
    while (hi > a) {
      if (ties != nullptr && cur != ExecutionIndex::kNone) {
        if (fixed->fixed(cur))
          ties = nullptr;
        else if (index_.tied(cur))
          ties->push_back(cur);
      }
      const TaskId p = cur == ExecutionIndex::kNone ? index_.last_task() : index_.releaser(cur);
      const BubbleCause own =
          cur == ExecutionIndex::kNone ? BubbleCause::warmup_cooldown : cause_of(graph_[cur]);
      if (p == ExecutionIndex::kNone) {
        add(own, a, hi, comm, waits, out);  // a first task that started late
        return;
      }
      const double p_end = std::min(index_.end_s(p), hi);
      if (p_end < hi) {  // started later than released (a launch delay)
        add(own, std::max(a, p_end), hi, comm, waits, out);
        hi = std::max(a, p_end);
        if (hi <= a)
          return;
      }
      const double lo = std::max(a, index_.start_s(p));
      add(cause_of(graph_[p]), lo, hi, comm, waits, out);
      hi = lo;
      cur = p;
    }
  }

  static void add(BubbleCause cause, double lo, double hi, std::span<const Interval> comm,
                  std::span<const Interval> waits, GpuBubbles& out) {
    if (hi <= lo)
      return;
    out.cause_s[at(cause)] += hi - lo;
    out.idle_part_s[at(cause)] += (hi - lo) - covered_length(comm, lo, hi);
    out.waiting_part_s[at(cause)] += covered_length(waits, lo, hi);
  }

 private:
  const workloads::TaskGraph& graph_;
  const ExecutionIndex& index_;
};

// Whether every image GPU's compute tasks are, in order, the images of its
// representative's under its power of the rotation (so are their stream
// predecessors).
bool compute_orders_are_images(const workloads::TaskGraph& graph, const ExecutionIndex& index,
                               const GpuClasses& classes) {
  const FoldImages* images = classes.images();
  if (images == nullptr || images->tasks.size() < graph.size())
    return false;
  for (std::size_t g = 0; g < classes.size(); ++g) {
    const auto rep = classes.representative(g);
    if (rep == g)
      continue;
    const auto& mine = index.compute_order(static_cast<int>(g));
    const auto& theirs = index.compute_order(static_cast<int>(rep));
    if (mine.size() != theirs.size())
      return false;
    const int k = classes.step(g);
    for (std::size_t i = 0; i < mine.size(); ++i)
      if (images->tasks.power(theirs[i], k) != mine[i])
        return false;
  }
  return true;
}

// Whether GPU `g`'s gaps are blamed as its representative's, the walks from
// its compute tasks being the images of the representative's walks (the walk
// from the end of the iteration is the same on every GPU): given the compute
// orders' images above, a task's releaser that was the only latest-ending of
// its candidates has an image that is the image's only latest-ending
// candidate (the fold maps dependencies onto dependencies; an image ends when
// its record does); a releaser chosen among tasks that ended at one instant
// (`ties`: those of the representative's walks) is compared image to image.
bool walks_are_images(const ExecutionIndex& index, const FoldImages& images, int k,
                      const std::vector<TaskId>& ties) {
  const auto image = [&](TaskId t) {
    return t == ExecutionIndex::kNone ? t : static_cast<TaskId>(images.tasks.power(t, k));
  };
  for (const TaskId t : ties)
    if (index.releaser(image(t)) != image(index.releaser(t)))
      return false;
  return true;
}

}  // namespace

BubbleReport analyze_bubbles(const workloads::TaskGraph& graph, const Timeline& timeline,
                             const workloads::ParallelPlan& plan) {
  return analyze_bubbles(graph, timeline, plan, ExecutionIndex(graph, timeline));
}

BubbleReport analyze_bubbles(const workloads::TaskGraph& graph, const Timeline& timeline,
                             const workloads::ParallelPlan& plan, const ExecutionIndex& index) {
  return analyze_bubbles(graph, timeline, plan, index,
                         GpuClasses::of(graph, timeline, static_cast<std::size_t>(graph.gpu_count)));
}

BubbleReport analyze_bubbles(const workloads::TaskGraph& graph, const Timeline& timeline,
                             const workloads::ParallelPlan& plan, const ExecutionIndex& index,
                             const GpuClasses& classes, const std::vector<std::vector<Interval>>* nccl_waits,
                             const SharedIntervalLists* comm_busy) {
  const auto gpus = static_cast<std::size_t>(graph.gpu_count);
  if (classes.size() != gpus)
    return analyze_bubbles(graph, timeline, plan, index);
  const double t = timeline.end_s;
  BubbleReport report;
  report.iteration_time_s = t;

  // Communication busy intervals per GPU (a send counts for both ends),
  // merged; per GPU orbit (analysis/fold_classes.hpp): an image GPU's are its
  // representative's. Given, they come from utilisation's pass over the same
  // records (analysis/report.cpp), which then is the only one.
  SharedIntervalLists computed_comm;
  if (comm_busy == nullptr || comm_busy->size() != gpus) {
    auto& lists = computed_comm.lists;
    lists.resize(gpus);
    classes.for_each_record([&](const TaskRecord& r) {
      if (r.stream == Stream::compute)
        return;
      if (classes.is_representative(static_cast<std::size_t>(r.gpu)))
        lists[static_cast<std::size_t>(r.gpu)].emplace_back(r.start_s, r.end_s);
      const Task& task = graph[r.task];
      if (task.kind == TaskKind::send && task.peer >= 0 &&
          classes.is_representative(static_cast<std::size_t>(task.peer)))
        lists[static_cast<std::size_t>(task.peer)].emplace_back(r.start_s, r.end_s);
    });
    computed_comm.list_of.resize(gpus);
    for (std::size_t g = 0; g < gpus; ++g) {
      computed_comm.list_of[g] = static_cast<std::uint32_t>(g);
      if (classes.is_representative(g))
        lists[g] = merge_intervals(std::move(lists[g]));
    }
    comm_busy = &computed_comm;
  }
  const SharedIntervalLists& comm = *comm_busy;

  // Reference durations under balanced routing, and with each task's
  // expert imbalance put back (the same when the run has none).
  // (A copy over every task only when some task has an imbalance.)
  // Per GPU orbit too when the compute orders map onto each other: an image
  // GPU's figures are then its representative's, computed from the images
  // of its tasks, times and causes (walks_are_images), and its tasks'
  // pieces are its representative's.
  const bool per_orbit = classes.folded() && compute_orders_are_images(graph, index, classes);
  const std::vector<double> balanced = reference_durations(graph, index, per_orbit ? &classes : nullptr);
  std::vector<double> imbalanced;
  for (TaskId v = 0; v < graph.size(); ++v)
    if (graph[v].imbalance_s != 0 && index.ran(v)) {
      if (!report.expert_imbalance_modelled)
        imbalanced = balanced;
      report.expert_imbalance_modelled = true;
      imbalanced[v] = std::max(0.0, balanced[v] + graph[v].imbalance_s);
    }
  const std::vector<double>& reference = report.expert_imbalance_modelled ? imbalanced : balanced;
  report.reference_iteration_time_s = retimed_iteration_s(graph, index, reference);
  report.balanced_routing_iteration_time_s = report.expert_imbalance_modelled
                                                 ? retimed_iteration_s(graph, index, balanced)
                                                 : report.reference_iteration_time_s;

  const GapWalker walker(graph, index);
  std::vector<std::vector<Interval>> computed_waits;
  if (nccl_waits == nullptr || nccl_waits->size() != gpus) {
    computed_waits = nccl_wait_spans(graph, timeline, classes);
    nccl_waits = &computed_waits;
  }
  const auto& waits = *nccl_waits;
  std::vector<std::vector<TaskId>> ties(per_orbit ? gpus : 0);
  report.gpus.resize(gpus);
  for (std::size_t g = 0; g < gpus; ++g) {
    auto& out = report.gpus[g];
    const std::size_t rep = classes.representative(g);
    if (per_orbit && rep != g && walks_are_images(index, *classes.images(), classes.step(g), ties[rep])) {
      out = report.gpus[rep];
      out.gpu = static_cast<int>(g);
      out.stage = plan.pp_rank_of(out.gpu);
      for (std::size_t c = 0; c < kBubbleCauseCount; ++c)
        report.total_cause_s[c] += out.cause_s[c];
      report.total_lost_s += out.lost_s;
      ++report.gpus_from_representative;
      continue;
    }
    out.gpu = static_cast<int>(g);
    out.stage = plan.pp_rank_of(out.gpu);
    std::vector<TaskId>* my_ties = per_orbit && rep == g ? &ties[g] : nullptr;
    const auto& merged_comm = comm.of(rep);
    double prev_end = 0, compute_s = 0, forward_backward_ref_s = 0, forward_backward_balanced_s = 0;
    std::vector<Interval> compute;
    for (TaskId v : index.compute_order(out.gpu)) {
      const double s = index.start_s(v), e = index.end_s(v);
      if (s > prev_end)
        walker.walk(prev_end, s, v, merged_comm, waits[rep], out, my_ties,
                    per_orbit ? &classes.images()->tasks : nullptr);
      compute.emplace_back(s, e);
      if (is_forward_backward(graph[v].kind)) {
        out.forward_backward_s += e - s;
        forward_backward_ref_s += reference[v];
        forward_backward_balanced_s += balanced[v];
      } else {
        out.optimizer_s += e - s;
        out.cause_s[at(BubbleCause::optimizer)] += e - s;
      }
      compute_s += e - s;
      prev_end = std::max(prev_end, e);
    }
    if (t > prev_end)
      walker.walk(prev_end, t, ExecutionIndex::kNone, merged_comm, waits[rep], out);
    out.lost_s = t - out.forward_backward_s;
    const auto merged_compute = merge_intervals(std::move(compute));
    out.exposed_comm_s = total_length(merged_comm) - overlap_length(merged_compute, merged_comm);
    out.idle_s = std::max(0.0, t - total_length(merged_compute) - out.exposed_comm_s);

    // Expert imbalance: the extra time this GPU lost in the re-timed
    // iteration with imbalance over the one under balanced routing; then
    // straggler: the extra it lost over the former. Both are taken out of
    // its waits on other GPUs' compute.
    const double lost_ref = report.reference_iteration_time_s - forward_backward_ref_s;
    auto& wait = out.cause_s[at(BubbleCause::warmup_cooldown)];
    auto& wait_idle = out.idle_part_s[at(BubbleCause::warmup_cooldown)];
    auto move_wait = [&](BubbleCause to, double seconds) {
      if (seconds <= 0)
        return;
      const double idle_share = wait > 0 ? wait_idle * (seconds / wait) : 0;
      out.cause_s[at(to)] += seconds;
      out.idle_part_s[at(to)] += idle_share;
      wait -= seconds;
      wait_idle -= idle_share;
    };
    if (report.expert_imbalance_modelled) {
      const double lost_balanced = report.balanced_routing_iteration_time_s - forward_backward_balanced_s;
      move_wait(BubbleCause::expert_imbalance, std::clamp(lost_ref - lost_balanced, 0.0, wait));
    }
    move_wait(BubbleCause::straggler, std::clamp(out.lost_s - lost_ref, 0.0, wait));
    for (std::size_t c = 0; c < kBubbleCauseCount; ++c)
      report.total_cause_s[c] += out.cause_s[c];
    report.total_lost_s += out.lost_s;
  }

  report.stages.resize(static_cast<std::size_t>(std::max(plan.pp, 1)));
  for (std::size_t s = 0; s < report.stages.size(); ++s)
    report.stages[s].stage = static_cast<int>(s);
  for (const auto& g : report.gpus) {
    if (g.stage < 0 || static_cast<std::size_t>(g.stage) >= report.stages.size())
      continue;
    auto& st = report.stages[static_cast<std::size_t>(g.stage)];
    ++st.gpus;
    st.lost_s += g.lost_s;
    st.idle_s += g.idle_s;
    for (std::size_t c = 0; c < kBubbleCauseCount; ++c) {
      st.cause_s[c] += g.cause_s[c];
      st.idle_part_s[c] += g.idle_part_s[c];
    }
  }
  for (auto& st : report.stages) {
    if (st.gpus == 0)
      continue;
    st.lost_s /= st.gpus;
    st.idle_s /= st.gpus;
    for (std::size_t c = 0; c < kBubbleCauseCount; ++c) {
      st.cause_s[c] /= st.gpus;
      st.idle_part_s[c] /= st.gpus;
    }
  }
  return report;
}

}  // namespace trainsim::analysis
