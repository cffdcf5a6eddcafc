#include "workloads/moe_token_sort.hpp"

#include <algorithm>

namespace trainsim::workloads {
namespace {

constexpr double kSortedElementBytes = 2 + 2;      // read and write one BF16 element
constexpr double kSortedProbabilityBytes = 4 + 4;  // read and write one FP32 routing probability

TransformerOp sort_kernel(std::string name, OpPass pass, double bytes) {
  return {.name = std::move(name), .kind = OpKind::elementwise, .pass = pass, .bytes = bytes};
}

}  // namespace

const std::vector<DispatcherSortTraits>& dispatcher_sort_table() {
  static const std::vector<DispatcherSortTraits> table = {
      {MoeDispatcher::all_to_all, true},
      {MoeDispatcher::deepep, false},
  };
  return table;
}

bool sorts_by_local_expert(MoeDispatcher dispatcher) {
  const auto& table = dispatcher_sort_table();
  const auto it =
      std::find_if(table.begin(), table.end(), [&](const auto& t) { return t.dispatcher == dispatcher; });
  return it != table.end() && it->sorts_by_local_expert;
}

std::vector<TransformerOp> expert_sort_ops(MoeDispatcher dispatcher, double local_experts, double rows,
                                           double hidden, OpPass pass, SortSide side) {
  if (!sorts_by_local_expert(dispatcher) || local_experts <= 1 || pass == OpPass::backward_weight)
    return {};
  const double tokens = rows * hidden * kSortedElementBytes;
  // The forward sort carries the routing probabilities with the tokens; the
  // unsort moves only the experts' outputs. The backward runs the inverse
  // copies in the mirrored places (the gradient of the unsort before the
  // experts' backward, the sort's after it); the probabilities' gradient
  // travels with the sort's.
  const bool sort = (side == SortSide::after_dispatch);
  const double bytes = sort ? tokens + rows * kSortedProbabilityBytes : tokens;
  std::string name = sort ? "sort_by_expert" : "unsort_by_expert";
  if (pass == OpPass::backward_input)
    name += ".bwd";
  return {sort_kernel(std::move(name), pass, bytes)};
}

}  // namespace trainsim::workloads
