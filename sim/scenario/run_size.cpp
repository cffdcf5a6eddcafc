#include "sim/scenario/run_size.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "platforms/input_error.hpp"
#include "platforms/units.hpp"
#include "sim/scenario/replica_record_count.hpp"
#include "sim/scenario/tree_all_reduce_load.hpp"

namespace trainsim::scenario {
namespace {

// Calibration (docs/reliability.md "Size guard"): measured on the shipped
// scenarios, peak RSS and wall time of `trainsim run` on the 2-core machine.
constexpr double kRecordsPerUnit = 0.5;  // records per (GPU x micro-batch x layer of its stage)
// ZeRO-3 (FSDP) adds per layer of every micro-batch its gathers and
// reduce-scatter and splits the compute into pieces: scale-512 writes 1.04M
// timeline rows with it, 95k without.
constexpr double kFsdpRecordsPerUnit = 5;
constexpr double kFlowsPerRecord = 2.5;  // p2p and TP flows per record
// `fast` records one flow per ring edge instead of every step (an 8-rank TP
// ring: 8 flows, not 56): scale-16k's plan at 16,384 and 65,536 GPUs records
// 1.56M and 6.2M flows under `fast`, 12M and 98M under `auto`.
constexpr double kFastFlowsPerRecord = kFlowsPerRecord / 7;
constexpr double kFlowsPerDpStep = 8;  // flows per DP ring step, GPU and layer (ZeRO-3: x3)
// Memory of a run replayed whole. Refitted 2026-12-06 (14:00) on unfolded
// peak RSS once the task graph was sealed into compressed rows
// (docs/reliability.md, "Size guard"): quickstart 41 MiB, zero-fsdp 54 MiB,
// moe-mixtral 43 MiB, scale-512 91 MiB (with ZeRO-3 509 MiB),
// perturb-falcon-stragglers 76 MiB, perturb-mtbf-checkpoints 572 MiB,
// scale-16k --no-fold 1.17 GiB, scale-16k-hsdp-70b with 8 layers --no-fold
// 2.18 GiB: with 56 MiB, 250 B per record and 250 per flow they read
// 1.03-1.94x (500 B per record, 200 per flow and 40 MiB read 0.87x on
// zero-fsdp and 0.93x on the HSDP run, whose recorded ring steps are 6x
// and 3.4x the flows counted here, and 2.2x on scale-512 with ZeRO-3).
constexpr double kBytesPerRecord = 250;  // graph task, timeline record, outputs' share
constexpr double kBytesPerFlow = 250;    // flow record, SimGrid activity while it runs
// Expert-parallel exchanges (replica_record_count.hpp, exchange_flows): many
// short flows per record, every pair of an EP group's all_to_all, which the
// per-record count above does not see. Fitted 2026-12-06 on
// `moe-deepseek-v3.yaml --no-fold --set plan.global_batch_size=2048` (EP 64
// over 8 nodes; docs/reliability.md "Size guard"): 4.18M exchange flows
// counted beside 2.0e5 records (the replay recorded 8.36M flows in all,
// about twice the count: the constants are per counted flow); peak 836 MiB
// against the 252 MiB estimated without them, ~146 B a counted flow; 81.5-
// 114.5 s of CPU against 0.9 s, ~19-27 us a counted flow.
constexpr double kBytesPerExchangeFlow = 200;
constexpr double kRunSecondsPerExchangeFlow = 2e-5;
constexpr double kBaseBytes = 56.0 * (1 << 20);
// A folded run holds one class's records and flows and reads the others as
// their images (analysis/record_list.hpp), and its analyses and writers work
// per GPU and link orbit (analysis/fold_classes.hpp): what stays per record
// of the whole run is the task graph (built whole) and the per-GPU
// intervals; the flows are held once per class and indexed per link orbit,
// so the whole run's flow count adds little. Refitted 2026-12-06 (13:00) on
// folded peak RSS once the task graph was sealed into compressed rows
// (~145 B per task instead of ~385; docs/performance.md, "The task graph in
// compressed rows"): scale-512 with --fold 75 MiB (9.5e4 records, 3.4e5
// flows), the same with ZeRO-3 379 MiB (1.0e6, 2.9e6; m = 2, the most flows
// held per record), scale-16k 582 MiB (2.1e6, 7.3e6), scale-16k-hsdp-70b
// 1.45 GiB (7.9e6, 8.3e7), the 16,384-GPU proxy of scale-131k 443 MiB
// (1.9e6, 6.8e6), scale-131k under `auto` 3.31 GiB (1.7e7, 5.8e7). With
// 160 MiB, 200 B per record and 35 B per flow they read 2.5x, 1.2x, 1.4x,
// 3.1x, 1.7x and 1.6x: never below (the ZeRO-3 run bounds the record's cost,
// the smallest run the base; 470 B per record before the graph shrank). A
// folded run is estimated at no more than the same run unfolded.
// The flows' share is not fitted on these: the class size m is not
// known before the replay finds the fold, and a run's flows are held once
// per class, so a flow of the whole run costs its record (~70 B) / m; the
// estimate takes m = 2, the smallest fold, so that a run of few classes and
// many flows is not let through (scale-16k with detailed collectives, m = 4:
// 2.7e8 flows, ~4 GiB of flow records; at 2 B per flow it was estimated at
// 1.6 GiB), and overestimates runs of many classes (the HSDP run, m = 64).
constexpr double kFoldedBaseBytes = 160.0 * (1 << 20);
constexpr double kFoldedBytesPerRecord = 200;
constexpr double kFoldedBytesPerFlow = 35;
// `trainsim collective` (one collective's flows, step by step): its memory
// keeps the constants of `run` before the 2026-12-06 refit (40 MiB, 200 B
// per flow, 500 per record; measured on it 2026-12-02 only, docs/reliability.md).
constexpr double kCollectiveBaseBytes = 40.0 * (1 << 20);
constexpr double kCollectiveBytesPerFlow = 200;
constexpr double kCollectiveBytesPerRecord = 500;
constexpr double kSecondsPerRecord = 30e-6;
constexpr double kSecondsPerFlow = 40e-6;
// `trainsim run`, refitted 2026-12-02 on the weak-scaling series of
// docs/performance.md (1,024 to 16,384 GPUs: 1.7 s to 44.6 s of wall time)
// and scale-16k (24 s) once the replay restarted finished activities and
// computed uncontended collectives without flows: a record costs more as
// the cluster grows (SimGrid's solver and the analyses see more at once).
constexpr double kRunSecondsPerRecord = 2.5e-6;
constexpr double kRunSecondsPerRecordAndGpu = 4.3e-10;
constexpr double kRunSecondsPerFlow = 1e-6;
// A folded run replays one class (the quotient: 4,096 GPUs for scale-16k's
// plan at 16,384, 131,072 and 1,048,576 GPUs), so the per-GPU term above,
// SimGrid's and the analyses' view of the whole cluster, does not apply to
// it; what grows with the machine is building and checking the whole task
// graph and expanding every record into the analyses and the files, linear
// in the records. Fitted 2026-12-06 on folded runs of scale-16k's plan
// (docs/performance.md, "Towards 1,048,576 GPUs"): scale-16k 9.0-10.1 s
// wall idle (2.1e6 records), scale-131k 45-47 s user idle (1.7e7 records);
// scale-16k-hsdp-70b (7.9e6 records, 8.3e7 flows, m = 64) 18.0 s user. The
// old formula said 27 s, 17 min and 1.3 h for them. The class size m is not
// known before the replay finds the fold: a fold of few classes of a large
// cluster (m = 2 at 100k GPUs) replays a larger quotient than this counts.
constexpr double kFoldedRunSecondsPerRecord = 3e-6;
// Tree all-reduces that contend (tree_all_reduce_load.hpp): each of their
// flows costs SimGrid's max-min solver in proportion to the flows in flight
// with it, those of every group sharing the fabric (kTreeFlowsInFlight of a
// tree's 4 (members - 1) edge flows per group at a time).
constexpr double kRunSecondsPerTreeFlowAndFlowInFlight = 3e-8;
constexpr double kTreeFlowsInFlight = 1.0;

// `known_folded`: the fold was found (estimate_folded_run_size);
// `known`: one iteration's records and exchange flows, counted on the graph
// already built.
RunSize estimate(const Scenario& scenario, int iterations, int fold_from_gpus, bool known_folded,
                 std::optional<IterationCount> known = std::nullopt) {
  const auto& plan = scenario.plan;
  const double gpus = scenario.cluster.gpu_count();
  const double micro_batches = std::max(1, plan.micro_batches());
  const double layers_per_stage = std::max(1.0, double(scenario.model.layers) / std::max(1, plan.pp));
  const double layers = std::max(1, scenario.model.layers);
  RunSize s;
  const double per_unit = kRecordsPerUnit + (plan.zero_stage == 3 ? kFsdpRecordsPerUnit : 0.0);
  // Counted on the plan's graph with fewer replicas where that can be built
  // (replica_record_count.hpp), else the formula.
  const auto counted = known ? known : counted_iteration(scenario);
  s.records_counted = counted.has_value();
  s.records = iterations * (counted ? counted->records
                                    : per_unit * gpus * micro_batches * layers_per_stage + gpus * layers);
  // Where the graph could not be counted a MoE plan's exchanges stay
  // uncounted (the formula's case: several node groups, a trace, ...).
  const double exchange = iterations * (counted ? counted->exchange_flows : 0.0);
  // Detailed collectives are replayed step by step: one flow per ring step,
  // GPU and channel. Fast and automatic ones are one flow per ring edge (fast)
  // or computed without flows unless a contending flow displaces them
  // (automatic), so their count does not grow with the ring's length; the
  // estimate takes the fast count for both (scale-16k under automatic
  // measured 2.7 GiB and 58 s of CPU, estimated 3.3 GiB and ~7 min; as
  // detailed it was estimated at 52 GiB).
  const bool stepwise = scenario.cluster.collectives.fidelity == platforms::Fidelity::detailed;
  const double dp_steps = plan.dp > 1 ? (stepwise ? 2.0 * (plan.dp - 1) : 2.0) : 0.0;
  const bool fast = scenario.cluster.collectives.fidelity == platforms::Fidelity::fast;
  s.flows =
      iterations * ((fast ? kFastFlowsPerRecord : kFlowsPerRecord) * s.records / iterations +
                    kFlowsPerDpStep * gpus * dp_steps * layers_per_stage * (plan.zero_stage == 3 ? 3 : 1));
  const double other_flows = s.flows;
  s.flows += exchange;
  // Gradient all-reduces the tuner runs as trees across nodes and that
  // contend: every flow of the tree pipeline is a SimGrid flow, solved
  // against every other in flight.
  const TreeAllReduceLoad tree = tree_all_reduce_load(scenario);
  double tree_flows = 0, tree_in_flight = 0;
  if (tree.tree && tree.groups_per_rail > 1) {
    tree_flows = iterations * tree.flows;
    tree_in_flight = kTreeFlowsInFlight * tree.groups * 2 * 2 * (tree.members - 1);
    s.flows += tree_flows;
  }
  // A tree all-reduce across the replicas is no image of itself under a
  // rotation, so it stops the fold: such a run is counted whole.
  s.folded = known_folded ||
             (fold_from_gpus > 0 && gpus >= fold_from_gpus && !scenario.perturbations.touches_gpus() &&
              scenario.perturbations.links.empty() && !scenario.workload && plan.dp >= 2 && !tree.tree);
  // A folded run holds no more than the full replay would (a small one is
  // mostly the folded base).
  const double whole_bytes = kBaseBytes + kBytesPerRecord * s.records + kBytesPerFlow * other_flows +
                             kBytesPerExchangeFlow * exchange;
  s.memory_bytes = s.folded ? std::min(whole_bytes, kFoldedBaseBytes + kFoldedBytesPerRecord * s.records +
                                                        kFoldedBytesPerFlow * s.flows)
                            : whole_bytes;
  const double whole_s = (kRunSecondsPerRecord + kRunSecondsPerRecordAndGpu * gpus) * s.records +
                         kRunSecondsPerFlow * other_flows + kRunSecondsPerExchangeFlow * exchange +
                         kRunSecondsPerTreeFlowAndFlowInFlight * tree_flows * tree_in_flight;
  // No longer than the full replay (a small run with --fold).
  s.replay_s = s.folded ? std::min(whole_s, kFoldedRunSecondsPerRecord * s.records) : whole_s;
  return s;
}

}  // namespace

RunSize estimate_run_size(const Scenario& scenario, int iterations, int fold_from_gpus) {
  return estimate(scenario, iterations, fold_from_gpus, false);
}

RunSize estimate_folded_run_size(const Scenario& scenario, int iterations,
                                 std::optional<IterationCount> iteration) {
  return estimate(scenario, iterations, 0, true, iteration);
}

RunSize estimate_collective_size(int ranks, std::size_t sizes, platforms::Fidelity fidelity) {
  constexpr double kChannels = 8;  // an upper bound of NCCL's channels per collective
  const double n = std::max(2, ranks);
  const bool stepwise = fidelity != platforms::Fidelity::fast;
  RunSize s;
  s.flows = kChannels * (stepwise ? 2 * (n - 1) * n : 2 * n);
  s.records = n;
  s.memory_bytes =
      kCollectiveBaseBytes + kCollectiveBytesPerFlow * s.flows + kCollectiveBytesPerRecord * s.records;
  s.replay_s = double(sizes) * (kSecondsPerFlow * s.flows + kSecondsPerRecord * s.records);
  s.flows *= double(sizes);
  s.records *= double(sizes);
  return s;
}

LoadOptions with_size_guard(LoadOptions load) {
  const MemoryLimit limit = process_memory_limit();
  load.max_run_memory_bytes = limit.left_bytes;
  load.memory_limit_from = limit.from;
  return load;
}

std::string out_of_memory_message(std::string_view what, const RunSize* estimate) {
  // The limit the allocation met: the process's own, when it has one (the
  // memory it had taken is free again by now, so the limit, not what was
  // left, is what it may use), else the machine's.
  std::optional<MemoryLimit> met;
  for (const auto& l : memory_limits(this_process_memory_sources()))
    if (l.of_the_process && (!met || l.limit_bytes < met->limit_bytes))
      met = l;
  const std::string needed = met ? fmt::format("{} needed more than the {} the process may use ({})", what,
                                               units::format_bytes(met->limit_bytes), met->short_name)
                                 : fmt::format("{} needed more memory than this machine could give it", what);
  const std::string estimated = estimate ? fmt::format("; estimate: {}", describe(*estimate)) : std::string();
  return fmt::format("out of memory: {}{}; make it smaller{}", needed, estimated,
                     met ? fmt::format(" or raise the limit ({})", met->short_name) : std::string());
}

std::string describe(const RunSize& size) {
  const double minutes = size.replay_s / 60;
  return fmt::format("about {:.2g} records, {:.2g} flows, {} of memory, {}", size.records, size.flows,
                     units::format_bytes(size.memory_bytes),
                     minutes < 1    ? fmt::format("{:.0f} s", size.replay_s)
                     : minutes < 90 ? fmt::format("{:.0f} min", minutes)
                                    : fmt::format("{:.1f} h", minutes / 60));
}

void check_run_size(const Scenario& scenario, const RunSize& size, const LoadOptions& options) {
  const double limit_bytes = options.max_run_memory_bytes;
  if (limit_bytes <= 0 || size.memory_bytes <= limit_bytes)
    return;
  const auto& plan = scenario.plan;
  const std::string records =
      size.records_counted
          ? fmt::format("records counted on the plan's task graph: {:.3g} per GPU and micro-batch",
                        size.records / std::max(1, options.iterations) / scenario.cluster.gpu_count() /
                            std::max(1, plan.micro_batches()))
          : fmt::format("records ~ GPUs x micro-batches x layers per stage = {} x {} x {}",
                        scenario.cluster.gpu_count(), plan.micro_batches(),
                        scenario.model.layers / std::max(1, plan.pp));
  throw platforms::InputError({fmt::format(
      "{}: this run is too large for this machine: the estimate is {} ({}), more than the {} of {}; make it "
      "smaller (plan.global_batch_size for fewer micro-batches, cluster.nodes, model.layers)",
      scenario.file, describe(size), records, units::format_bytes(limit_bytes), options.memory_limit_from)});
}

void check_collective_size(int ranks, const RunSize& size, const MemoryLimit& limit) {
  if (limit.left_bytes <= 0 || size.memory_bytes <= limit.left_bytes)
    return;
  throw platforms::InputError({fmt::format(
      "--ranks {}: this collective is too large for this machine: the estimate is {}, more than the {} of "
      "{}; use fewer ranks, --fidelity fast (one flow per edge) or fewer sizes (--min, --max, "
      "--step-factor)",
      ranks, describe(size), units::format_bytes(limit.left_bytes), limit.from)});
}

}  // namespace trainsim::scenario
