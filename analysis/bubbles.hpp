#pragma once
// Why GPUs are not computing: every second of each GPU's iteration that is
// not forward or backward compute ("lost time") is blamed on one cause.
//
// Lost time = iteration time - forward/backward compute time
//           = own optimizer step + exposed communication + idle (the
//             summary's three-way split), so the causes add up to it exactly.
//
// How: the GPU's own optimizer step is "optimizer". Every gap in its compute
// stream is explained by what the compute op after the gap waited for (the
// trailing gap by what ended the iteration), walking the chain of releasers
// backwards (analysis/execution_index.hpp) until the gap is covered: the part
// of the gap during which the awaited work was
//   - another GPU's forward/backward compute -> warm-up / cool-down (the
//     schedule's fill and drain, including any imbalance between stages);
//   - a pipeline send in flight                  -> p2p wait;
//   - a TP (or other non-DP) collective          -> collective wait;
//   - a DP gradient collective (DP/ZeRO/FSDP)     -> exposed DP communication;
//   - another GPU's optimizer step               -> optimizer.
// Expert imbalance (a MoE run whose routing is not balanced,
// workloads/expert_routing.hpp): the compute waits are first split into
// expert imbalance by re-timing the recorded schedule twice, once with
// every compute op at its balanced-routing reference duration and once
// with the imbalance each op's experts add (Task::imbalance_s) put back: a
// GPU's expert-imbalance time is how much more it lost in the second than
// in the first (capped by its compute waits), the wait at each MoE layer's
// all-to-all for the EP group's busiest GPU. Stragglers are then what it
// lost beyond the second.
// Stragglers: the compute waits are then split into warm-up / cool-down and
// straggler by re-timing the recorded schedule with every compute op at its
// reference duration (the fastest nominal duration of the same op on any
// GPU, never more than its own actual duration; communication keeps its
// recorded duration). A GPU's straggler time is how much more time it lost
// than in that re-timed iteration (capped by its compute waits): the wait a
// slow peer imposed on it. A slow GPU itself shows little straggler time: it
// is busy computing.
//
// Each cause is also split into its idle part (nothing at all ran on the
// GPU) and the rest (its own communication was running, exposed): the idle
// parts add up to the summary's idle time, the rest to exposed
// communication plus the own optimizer step.
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "analysis/execution_index.hpp"
#include "analysis/fold_classes.hpp"
#include "analysis/intervals.hpp"
#include "analysis/timeline.hpp"
#include "workloads/parallel_plan.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

enum class BubbleCause : std::uint8_t {
  warmup_cooldown,
  p2p_wait,
  collective_wait,
  straggler,
  dp_comm,
  optimizer,
  expert_imbalance
};
inline constexpr int kBubbleCauseCount = 7;
// The causes every report lists; expert_imbalance joins them in runs that
// model it (reported_causes), so that other runs keep their outputs.
inline constexpr std::array<BubbleCause, 6> kBubbleCauses{
    BubbleCause::warmup_cooldown, BubbleCause::p2p_wait, BubbleCause::collective_wait,
    BubbleCause::straggler,       BubbleCause::dp_comm,  BubbleCause::optimizer};
// Stable key for files: "warmup_cooldown", "p2p_wait", "collective_wait",
// "straggler", "dp_comm", "optimizer", "expert_imbalance".
std::string_view to_string(BubbleCause cause);
// For people: "pipeline warm-up / cool-down", ...
std::string_view describe(BubbleCause cause);

using CauseSeconds = std::array<double, kBubbleCauseCount>;

struct GpuBubbles {
  int gpu = 0;
  int stage = 0;
  double forward_backward_s = 0;  // forward/backward compute
  double lost_s = 0;              // iteration time - forward_backward_s
  CauseSeconds cause_s{};         // adds up to lost_s
  CauseSeconds idle_part_s{};     // the part of each cause with nothing running; adds up to idle
  CauseSeconds waiting_part_s{};  // of idle_part_s, the part the GPU waits in NCCL (gpu_power.hpp)
  double idle_s = 0;              // nothing ran on the GPU (the summary's bubble)
  double exposed_comm_s = 0;      // own communication ran, no compute
  double optimizer_s = 0;         // own optimizer step
};

struct StageBubbles {
  int stage = 0;
  int gpus = 0;
  // Means over the stage's GPUs, seconds.
  double lost_s = 0;
  CauseSeconds cause_s{};
  CauseSeconds idle_part_s{};
  double idle_s = 0;
};

struct BubbleReport {
  double iteration_time_s = 0;
  // The iteration re-timed with every compute op at its reference duration
  // (with its expert imbalance, when the run models imbalance).
  double reference_iteration_time_s = 0;
  // A run with imbalanced expert routing (some Task::imbalance_s): the
  // iteration re-timed with every compute op at its reference duration
  // under balanced routing as well; equal to reference_iteration_time_s
  // otherwise.
  bool expert_imbalance_modelled = false;
  double balanced_routing_iteration_time_s = 0;
  std::vector<GpuBubbles> gpus;
  std::vector<StageBubbles> stages;
  CauseSeconds total_cause_s{};  // summed over GPUs (GPU-seconds)
  double total_lost_s = 0;       // summed over GPUs (GPU-seconds)
  // GPUs whose figures are their representative's in a folded run (its
  // walks map onto theirs: analyze_bubbles), not walked on their own.
  std::size_t gpus_from_representative = 0;
};

// The causes a report shows, in order: kBubbleCauses, then
// expert_imbalance when the run modelled it.
std::vector<BubbleCause> reported_causes(const BubbleReport& report);

BubbleReport analyze_bubbles(const workloads::TaskGraph& graph, const Timeline& timeline,
                             const workloads::ParallelPlan& plan);
// The same, on an index already built for the timeline (analysis/report.cpp
// builds one for every analysis).
BubbleReport analyze_bubbles(const workloads::TaskGraph& graph, const Timeline& timeline,
                             const workloads::ParallelPlan& plan, const ExecutionIndex& index);
// The same, on the GPU orbits already built (GpuClasses::of(graph, timeline,
// graph.gpu_count)), and with `nccl_waits` = nccl_wait_spans(graph, timeline,
// classes) already computed (analysis/gpu_power.hpp) and `comm_busy` the
// representatives' merged communication intervals as analyze_utilization
// gives them for these classes (analysis/utilization.hpp); either null, or
// not one list per GPU: computed here.
BubbleReport analyze_bubbles(const workloads::TaskGraph& graph, const Timeline& timeline,
                             const workloads::ParallelPlan& plan, const ExecutionIndex& index,
                             const GpuClasses& classes,
                             const std::vector<std::vector<Interval>>* nccl_waits = nullptr,
                             const SharedIntervalLists* comm_busy = nullptr);

}  // namespace trainsim::analysis
