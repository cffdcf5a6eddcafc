#pragma once
// Every analysis of one run, computed once from the task graph and the
// timeline, for the reporters to write.
#include "analysis/bubbles.hpp"
#include "analysis/collective_usage.hpp"
#include "analysis/critical_path.hpp"
#include "analysis/energy.hpp"
#include "analysis/memory.hpp"
#include "analysis/repeated_runs.hpp"
#include "analysis/run_context.hpp"
#include "analysis/summary.hpp"
#include "analysis/timeline.hpp"
#include "analysis/utilization.hpp"

namespace trainsim::analysis {

struct Report {
  Summary summary;
  BubbleReport bubbles;
  CriticalPath critical_path;
  Utilization utilization;
  MemoryReport memory;
  EnergyReport energy;
  std::vector<CollectiveUse> collectives;
  // More than one iteration or seed, perturbations, failures: what they
  // gave (summary.json's last blocks). Recorded by the run, not analysed.
  std::optional<RepeatedRuns> repeats;
};

// What the replay computed along with its summary for the same graph and
// timeline, which the report reads instead of computing it again (null:
// computed here).
struct ComputedWithSummary {
  const MemoryCurves* memory = nullptr;                // memory_curves(graph, timeline)
  const std::vector<GpuActivity>* activity = nullptr;  // gpu_activity(graph, timeline, cluster)
  // nccl_wait_spans(graph, timeline, classes) on the GPU orbits
  // GpuClasses::of(graph, timeline, graph.gpu_count) (gpu_activity's walk).
  const std::vector<std::vector<Interval>>* nccl_waits = nullptr;
};

// `summary`: the one the replay already computed for this timeline, if any
// (else it is computed here); each analysis is computed once.
Report build_report(const RunContext& run, const Timeline& timeline, const Summary* summary = nullptr,
                    std::optional<RepeatedRuns> repeats = std::nullopt, ComputedWithSummary computed = {});

// A cause of lost time, for the terminal and HTML summaries.
struct LostTimeCause {
  BubbleCause cause = BubbleCause::warmup_cooldown;
  double gpu_seconds = 0;  // summed over GPUs
  double fraction = 0;     // of all GPU time (GPUs x iteration time)
  int worst_stage = -1;    // the stage that loses most to it
  double worst_stage_fraction = 0;
};
// Causes with any time, largest first.
std::vector<LostTimeCause> top_lost_time_causes(const Report& report);

}  // namespace trainsim::analysis
