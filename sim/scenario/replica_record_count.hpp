#pragma once
// What the size guard counts instead of guessing where it can: the timeline
// records of one iteration, counted on the task graph of the same plan with
// fewer data-parallel replicas and scaled to the plan's. The formula of
// run_size.cpp (records per GPU, micro-batch and layer of a stage) missed
// plans whose ops are split into pieces 5-10x (Megatron-LM's interleaved
// weak-scaling rows with TP overlap: ~11 records per GPU, micro-batch and
// chunk against the formula's 0.5 per layer; docs/reliability.md "Size
// guard"), so `--max-memory` let through runs it should have refused.
//
// Why scaling is exact enough: every task of a replica is built per GPU of
// that replica, and a data-parallel collective records once per member, so
// a graph's records grow linearly with the replicas when the rest of the plan
// (tp, pp, cp, micro-batches per replica, shard group, expert groups) is
// kept; the shrunk plan keeps all of them.
#include <optional>

#include "sim/scenario/scenario.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::scenario {

// Records (compute and send tasks once, a collective once per member) of
// one iteration of `scenario`, counted on a plan of d < dp replicas (the
// smallest divisor of dp that keeps the plan valid and whole nodes) times
// dp / d; on the plan itself when it has at most `whole_up_to_gpus` GPUs.
// A graph beyond the counting budget of 2e5 GPU x micro-batch x
// stage-layer units (checked before it is built) is counted with fewer
// micro-batches per replica (the largest divisor of their count within
// the budget) times the ratio. nullopt where no such plan exists (a trace
// workload, several node groups, uneven micro-batches per replica, a plan
// whose smaller variants are all refused, more than 4,096 GPUs in the
// smallest): the caller keeps its formula.
// The records of one iteration of a built graph: compute ops and sends once,
// a collective once per member (what the timeline writes).
double timeline_records(const workloads::TaskGraph& graph);

// The flows of one iteration's expert-parallel exchanges (the MoE dispatch
// and combine), which the per-record flow count of run_size.cpp does not
// see: every pair of an all_to_all group, n (n - 1) flows per exchange
// (recorded per pair whatever the fidelity, and a folded exchange's passes
// as one set); a deepep exchange's distinct relayed edges, n (nodes - 1)
// over RDMA (to and from the same local rank of every other node) and
// n (members per node - 1) over NVLink. `cluster` places the members.
double exchange_flows(const workloads::TaskGraph& graph, const platforms::ClusterSpec& cluster);

struct IterationCount {
  double records = 0;
  double exchange_flows = 0;
};
std::optional<IterationCount> counted_iteration(const Scenario& scenario, int whole_up_to_gpus = 64);
// Its records alone.
std::optional<double> counted_iteration_records(const Scenario& scenario, int whole_up_to_gpus = 64);

// The task graph's counts (tasks, dependencies, memory events) for the
// plan's dp replicas, from the graphs of the two smallest valid shrunk plans
// (d1 < d2 replicas): each count is a + b x replicas (a replica's tasks,
// dependencies and events per GPU, plus the data-parallel collectives, one
// per group and bucket whatever the replicas, their dependencies and events
// one per member), so the line through the two is the plan's count. What
// the builder reserves before building at scale (workloads::GraphCounts);
// nullopt where counted_iteration_records has no shrunk plan, or where the
// two counts are not on a line with the plan's replicas.
std::optional<workloads::GraphCounts> counted_graph_counts(const Scenario& scenario);

}  // namespace trainsim::scenario
