#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/graph_builder/iteration_builder_state.hpp"

namespace trainsim::workloads::detail {

TaskId IterationBuilder::add_pair_all_reduce(std::map<int, TaskId>& made, int first, int second, int rank,
                                             int gpu, TaskId after, double bytes) {
  auto [it, is_new] = made.try_emplace(first, kNone);
  if (is_new) {
    const int group = graph_.add_group({first, second});
    it->second = graph_.add(collective_task(CommKind::pp, CollectiveOp::all_reduce, group, rank, bytes));
  }
  const TaskId id = it->second;
  if (after != kNone)
    graph_.depend(after, id);
  if (last_[idx(gpu)] != kNone && last_[idx(gpu)] != after)
    graph_.depend(last_[idx(gpu)], id);
  return id;
}

}  // namespace trainsim::workloads::detail
