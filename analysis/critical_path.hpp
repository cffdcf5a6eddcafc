#pragma once
// The critical path of the iteration: the chain of tasks and transfers that
// set the iteration time, found by following releasers back from the task
// that finished last (analysis/execution_index.hpp), with its time blamed per
// task kind ("stage 3 compute", "pp p2p", "dp all_reduce", ...), per GPU
// (compute segments) and per link (communication segments, each blamed on
// the most loaded link its flows crossed while it ran). The segments tile
// [0, iteration end]; a stretch where the next task started later than its
// releaser finished is a "wait" segment. Under imbalanced expert routing, a
// MoE piece on the path splits into its stage's compute and the "expert
// imbalance" its experts' extra load adds (Task::imbalance_s).
#include <span>
#include <string>
#include <vector>

#include "analysis/execution_index.hpp"
#include "analysis/flow_index.hpp"
#include "analysis/fold_classes.hpp"
#include "analysis/timeline.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

struct CriticalSegment {
  bool is_task = true;  // false: a wait between tasks
  workloads::TaskId task = 0;
  double start_s = 0;
  double end_s = 0;
  std::string blame_kind;  // "stage 3 compute", "pp p2p", "dp all_reduce", "expert imbalance", "wait"
  int gpu = -1;            // compute segments: the GPU
  int link = -1;           // communication segments: index into Timeline::links, or -1
};

struct Blame {
  std::string name;
  double seconds = 0;
  double fraction = 0;  // of the iteration time
};

struct CriticalPath {
  double length_s = 0;
  std::vector<CriticalSegment> segments;  // in time order
  // Each sorted by seconds, largest first (ties by name). by_kind adds up to
  // the iteration time; by_gpu covers compute segments, by_link
  // communication segments.
  std::vector<Blame> by_kind;
  std::vector<Blame> by_gpu;
  std::vector<Blame> by_link;
};

// Blame category of a task on the critical path.
std::string blame_kind(const workloads::Task& task);

CriticalPath critical_path(const workloads::TaskGraph& graph, const Timeline& timeline);
// The same, on an index already built for the timeline.
CriticalPath critical_path(const workloads::TaskGraph& graph, const Timeline& timeline,
                           const ExecutionIndex& index);
// The same, on the link orbits already built for the timeline
// (LinkClasses::of), which it takes over: it sorts the flows of the link
// orbits it reads by start, so an analysis that reads them in the
// timeline's order reads them before.
CriticalPath critical_path(const workloads::TaskGraph& graph, const Timeline& timeline,
                           const ExecutionIndex& index, LinkClasses links);

// For a communication task: the link its flows loaded most (bytes it carried
// from any flow while the task ran, over its bandwidth), or -1 without flows.
// A link orbit is made ready when first read (see make_ready): one thread
// at a time.
class LinkLoadIndex {
 public:
  explicit LinkLoadIndex(const Timeline& timeline);
  // On the link orbits already built for the timeline (LinkClasses::of).
  LinkLoadIndex(const Timeline& timeline, LinkClasses links);
  // The same, indexing by task only the flows of the tasks it will be asked
  // about (`asked`, any order; a task outside them is still answered, from
  // the index over every flow then built).
  LinkLoadIndex(const Timeline& timeline, LinkClasses links, const std::vector<workloads::TaskId>& asked);
  int busiest_link(workloads::TaskId task, double start_s, double end_s) const;
  // Flow indices of a task.
  std::vector<std::size_t> flows_of(workloads::TaskId task) const;

 private:
  // Puts representative link `rep`'s flows in order of start and finds its
  // longest flow, the first time a task's flows cross its orbit: a critical
  // path reads the links of a few hundred tasks, a 16,384-GPU run has
  // tens of thousands of link orbits and millions of flows on them.
  void make_ready(std::size_t rep) const;

  const Timeline& timeline_;
  // Each link orbit's flows, sorted by start once read (analysis/
  // fold_classes.hpp: an image link's load is its representative's).
  mutable LinkClasses links_;
  mutable std::vector<double> longest_flow_s_;  // per representative link, once ready
  mutable std::vector<char> ready_;             // per representative link
  // A task's flows from flows_by_task_ (folded: a recorded task's recorded
  // flows).
  std::span<const std::uint32_t> flows_of_key(workloads::TaskId task) const;

  // Folded: each recorded task's recorded flows; else each task's flows.
  // Built for `asked_` only (key i: asked_[i]) when `among_asked_`.
  std::vector<workloads::TaskId> asked_;  // sorted
  mutable FlowIndex flows_by_task_;
  mutable bool among_asked_ = false;
};

}  // namespace trainsim::analysis
