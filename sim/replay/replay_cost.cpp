#include "sim/replay/replay_cost.hpp"

#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <utility>

#include "sim/collectives/collectives.hpp"
#include "sim/scenario/replica_record_count.hpp"
#include "sim/scenario/run_size.hpp"

namespace trainsim::sim {
namespace {

// Every flow the collective will start: from its shape where it knows it
// (Collective::flow_count), else by driving its state machine: each flow
// finishes once, in any order, and may release more.
std::size_t count_flows(Collective& collective) {
  if (const auto known = collective.flow_count())
    return *known;
  std::vector<FlowRequest> pending;
  collective.start(pending);
  std::size_t flows = 0;
  std::vector<FlowRequest> released;
  while (!pending.empty()) {
    const FlowRequest f = pending.back();
    pending.pop_back();
    ++flows;
    released.clear();
    collective.on_flow_done(f.tag, released);
    pending.insert(pending.end(), released.begin(), released.end());
  }
  return flows;
}

}  // namespace

double estimated_replay_time_s(std::size_t tasks, std::size_t flows, int gpus) {
  // Fitted to the weak-scaling series of docs/performance.md (GPT-3 175B,
  // `auto`, 2026-12-02: 1.7 s of CPU at 1,024 GPUs and 132k tasks, 20 s at
  // 8,192 and 1.06M, 44.5 s at 16,384 and 2.11M) and scale-16k (24 s at
  // 1.16M tasks): a task costs about 17 us and a little more as the cluster
  // grows (SimGrid's solver and the analyses see more at once); a SimGrid
  // flow about 2 us (the series' 4,096 GPUs under `detailed`: 4.4M flows,
  // 18.7 s in all). Before the replay restarted finished activities a flow
  // cost 11-39 us, growing with the cluster.
  return static_cast<double>(tasks) * (17e-6 + 2.4e-10 * gpus) + static_cast<double>(flows) * 2e-6;
}

double estimated_folded_replay_time_s(std::size_t replayed_tasks, std::size_t replayed_flows,
                                      int quotient_gpus, std::size_t tasks) {
  // The quotient's replay as above, plus what every task of the whole run
  // costs: the task graph built and checked whole, each record expanded
  // into its images for the analyses and files. Fitted 2026-12-06 on
  // scale-16k's plan folded at 16,384 to 131,072 GPUs (docs/performance.md,
  // "Towards 1,048,576 GPUs"): the same quotient (4,096 GPUs, 291k tasks)
  // at every size, 1.16M to 9.31M tasks, 9.5 s to ~46 s idle: ~4.5 us per
  // task of the whole run. Estimated whole, scale-131k was ~8 min.
  return estimated_replay_time_s(replayed_tasks, replayed_flows, quotient_gpus) +
         static_cast<double>(tasks) * 4.5e-6;
}

double estimated_replay_memory_bytes(std::size_t tasks, std::size_t recorded_flows) {
  // Refitted 2026-12-06 (14:00) on unfolded peak RSS once the task graph
  // was sealed into compressed rows (~240 B per task fewer; docs/reliability.md,
  // "Size guard"): quickstart, zero-fsdp, moe-mixtral, scale-512 with and
  // without ZeRO-3, perturb-falcon-stragglers, perturb-mtbf-checkpoints
  // (1.10M tasks, 1.0M recorded flows, 572 MiB), scale-16k (1.16M, 12.0M,
  // 1.17 GiB), scale-16k-hsdp-70b with 8 layers (301k, 29.2M, 2.18 GiB;
  // 1.53x) and moe-deepseek-v3 with 16 micro-batches per replica (132k
  // tasks, 8.4M recorded flows, 866 MiB): about 550 bytes per task (the
  // graph, the replay's per-task state, the analyses) and 115 per recorded
  // flow (its 48-byte record, 4 bytes per link it crosses in the link index,
  // the vectors' slack): 1.20-1.65x. The 2026-12-02 fit (710 and 56) read
  // 1.24-1.50x on the others but 0.68x on DeepSeek-V3, whose all-to-all
  // flows across nodes cross more links than a ring's. Every detailed step
  // of an automatic collective is recorded, computed alone or not.
  return 60e6 + 550.0 * static_cast<double>(tasks) + 115.0 * static_cast<double>(recorded_flows);
}

namespace {

// `fold`: only the replayed tasks are expanded; a representative's task
// (not a spanning collective) counts m times.
ReplayCost count_replay(const workloads::TaskGraph& graph, const ClusterZone& zone, int iterations,
                        const ReplicaFold* fold) {
  ReplayCost cost;
  cost.gpus = graph.gpu_count;
  cost.tasks = graph.size();
  cost.iterations = iterations;
  cost.detailed = zone.spec().collectives.fidelity == platforms::Fidelity::detailed;
  // Identical collectives (same group, op, size) expand identically.
  struct Counts {
    std::size_t flows = 0, fast = 0, recorded = 0;
  };
  std::map<std::tuple<int, int, double, int, int, int>, Counts> counted;
  for (workloads::TaskId v = 0; v < graph.size(); ++v) {
    std::size_t images = 1;
    if (fold != nullptr) {
      if (!fold->simulated[v])
        continue;
      images = fold->spanning[v] ? 1 : static_cast<std::size_t>(fold->order);
    }
    const auto& task = graph[v];
    if (task.kind == workloads::TaskKind::send) {
      cost.flows += images * (task.bytes > 0);
      cost.fast_flows += images * (task.bytes > 0);
      cost.recorded_flows += images * (task.bytes > 0);
      continue;
    }
    if (task.kind != workloads::TaskKind::collective || task.bytes <= 0)
      continue;
    const auto& gpus = graph.groups[static_cast<std::size_t>(task.group)];
    if (gpus.size() < 2)
      continue;
    const auto key = std::make_tuple(task.group, static_cast<int>(task.op), task.bytes, task.fold,
                                     static_cast<int>(task.algorithm), task.exchange);
    auto it = counted.find(key);
    if (it == counted.end()) {
      const CollectiveRequest request{
          task.op,
          gpus,
          task.bytes,
          task.fold,
          task.algorithm,
          task.exchange >= 0 ? &graph.exchanges[static_cast<std::size_t>(task.exchange)] : nullptr};
      const auto fidelity = zone.spec().collectives.fidelity;
      // Both fidelities from one expansion (the layout, the algorithm's
      // choice and its rings are the same); the fast one's flows counted
      // from its edges, or, where it is the step-by-step form too, on a copy
      // of the plan's machine before that is driven.
      CollectivePlan at;
      std::optional<std::size_t> fast_flows;  // none when the cluster's fidelity is fast
      if (fidelity != platforms::Fidelity::fast) {
        auto counted = make_collective_counting_fast(request, zone);
        at = std::move(counted.plan);
        fast_flows = counted.fast_flows ? *counted.fast_flows : count_flows(*at.flows->clone());
      } else {
        at = make_collective(request, zone);
      }
      // A spanning collective under the fold with a quotient form (the
      // quotient ring) is counted on it: each of its flows stands for itself
      // and its m - 1 images (an orbit of ring positions has m positions,
      // each doing every step), without running the whole machine. Where
      // the whole machine's flows are known from its shape
      // (Collective::flow_count) they are that count either way, and the
      // quotient is not built: it hands on one flow per orbit of m.
      std::unique_ptr<Collective> quotient;
      if (fold != nullptr && fold->spanning[v] && !at.flows->flow_count())
        quotient = at.flows->quotient({&fold->endpoint_image, &fold->representative, fold->order});
      std::size_t flows =
          quotient ? count_flows(*quotient) * static_cast<std::size_t>(fold->order) : count_flows(*at.flows);
      const std::size_t recorded = flows;
      const std::size_t fast = fast_flows.value_or(flows);
      // The automatic representation computes a collective without flows
      // unless a contending flow displaces it (then its remaining steps run
      // as detailed flows): its cost is nearer the fast count than the
      // detailed one (scale-16k: 58 s of CPU, where every detailed flow
      // would have been estimated at ~27 min).
      if (fidelity == platforms::Fidelity::automatic)
        flows = fast;
      it = counted.emplace(key, Counts{flows, fast, recorded}).first;
    }
    cost.flows += images * it->second.flows;
    cost.fast_flows += images * it->second.fast;
    cost.recorded_flows += images * it->second.recorded;
  }
  const auto n = static_cast<std::size_t>(std::max(iterations, 1));
  if (fold != nullptr) {
    // The quotient replays the representatives' tasks on 1/m of the GPUs and
    // starts 1/m of the flows (an image ends with its representative).
    const auto m = static_cast<std::size_t>(fold->order);
    const int quotient_gpus = cost.gpus / fold->order;
    cost.time_s = estimated_folded_replay_time_s(fold->simulated_count * n, cost.flows / m * n, quotient_gpus,
                                                 cost.tasks * n);
    cost.fast_time_s = estimated_folded_replay_time_s(fold->simulated_count * n, cost.fast_flows / m * n,
                                                      quotient_gpus, cost.tasks * n);
  } else {
    cost.time_s = estimated_replay_time_s(cost.tasks * n, cost.flows * n, cost.gpus);
    cost.fast_time_s = estimated_replay_time_s(cost.tasks * n, cost.fast_flows * n, cost.gpus);
  }
  // The flows of the first iteration are recorded; later ones only replayed.
  cost.memory_bytes = estimated_replay_memory_bytes(cost.tasks, cost.recorded_flows);
  return cost;
}

}  // namespace

ReplayCost estimate_replay_cost(const workloads::TaskGraph& graph, const ClusterZone& zone, int iterations) {
  return count_replay(graph, zone, iterations, nullptr);
}

ReplayCost estimate_replay_cost(const workloads::TaskGraph& graph, const ClusterZone& zone, int iterations,
                                const ReplicaFold& fold, const scenario::Scenario& scenario) {
  ReplayCost cost = count_replay(graph, zone, iterations, &fold);
  // The graph is built: its records are counted here, not on a shrunk one again.
  cost.memory_bytes = scenario::estimate_folded_run_size(
                          scenario, iterations,
                          scenario::IterationCount{scenario::timeline_records(graph),
                                                   scenario::exchange_flows(graph, scenario.cluster)})
                          .memory_bytes;
  return cost;
}

}  // namespace trainsim::sim
