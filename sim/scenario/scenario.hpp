#pragma once
// A scenario: the cluster, the model and the parallel plan of one what-if,
// loaded from YAML, validated, and ready to simulate.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "platforms/cluster_spec.hpp"
#include "sim/scenario/perturbations.hpp"
#include "workloads/layer_split.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::scenario {

struct RunSize;  // sim/scenario/run_size.hpp

// A workload recorded or generated elsewhere (the `workload` section),
// replayed instead of a model and a plan: one Chakra execution trace file
// per GPU rank (sim/scenario/trace_workload.hpp).
struct TraceWorkload {
  std::string chakra;       // the trace: a folder, a file prefix or one .et file (absolute)
  std::string comm_groups;  // ASTRA-sim's communicator groups file (absolute; empty: none)
  int ranks = 0;            // rank files found
};

struct Scenario {
  std::string name;
  std::string file;
  std::uint64_t seed = 1;
  // The task graph itself draws from the seed: MoE routing drawn with the
  // scenario's seed (model.moe.routing zipf / dirichlet, no routing_seed).
  bool graph_depends_on_seed() const {
    return model.is_moe() && model.moe.routing.drawn() && model.moe.routing.seed_from_scenario;
  }
  // Another seed for the same scenario (`run --seeds`): the perturbations'
  // draws, and the routing's when it follows the scenario's.
  void reseed(std::uint64_t new_seed) {
    seed = new_seed;
    if (model.moe.routing.seed_from_scenario)
      model.moe.routing.seed = new_seed;
  }
  platforms::ClusterSpec cluster;
  workloads::ModelSpec model;
  workloads::ParallelPlan plan;
  // Megatron's ways of asking for a partition without listing it
  // (first_stage_layers, embedding_in_split, pipeline_layout, ...):
  // resolve_plan turns them into plan.stage_layers.
  workloads::LayerSplitRequest layer_split;
  // Overrides every GPU's matmul efficiency in the cost model when set.
  std::optional<double> compute_efficiency;
  // Slow GPUs, stragglers, link faults, failures (the `perturbations` section).
  Perturbations perturbations;
  // What the loader did that the user may not expect (a preset chosen with
  // --set replacing the file's cluster keys): the CLI prints each as a note.
  std::vector<std::string> notes;
  // Set when the scenario replays a trace; `model` then only names it and
  // `plan` is data parallelism over every GPU (one pipeline stage).
  std::optional<TraceWorkload> workload;
};

struct LoadOptions {
  // Check that the plan fits in GPU memory (the memory model's static
  // estimate, sim/scenario/memory_check.hpp) and throw InfeasiblePlan
  // (does_not_fit_in_memory) when it does not. `trainsim run --allow-oom`
  // turns it off.
  bool check_memory = true;
  // The size guard (sim/scenario/run_size.hpp), checked before the memory
  // model walks every rank's op list: refuse a run whose estimated memory
  // exceeds `max_run_memory_bytes` (0: no guard).
  double max_run_memory_bytes = 0;
  std::string memory_limit_from{};  // "--max-memory 8GiB", "the memory available on this machine"
  int iterations = 1;               // replayed (`run --iterations N`)
  // The size guard counts a folded run's records as the fold holds them
  // from this many GPUs on (0: never; `run` sets sim::kFoldByDefaultGpus, 1
  // with --fold, 0 with --no-fold).
  int fold_from_gpus = 0;
  // Where the size guard puts its estimate when it makes one (max_run_memory_bytes
  // > 0): `run` says it again for a long run without counting the graph twice.
  RunSize* estimate = nullptr;
};

// Reads `path`, applies the `--set KEY=VALUE` overrides in order, then parses
// and validates everything. Throws platforms::InputError listing every problem found.
Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides = {},
                       const LoadOptions& options = {});
// The same from YAML text (tests; `file` names it in messages).
Scenario parse_scenario_text(const std::string& yaml, const std::string& file,
                             const std::vector<std::string>& overrides = {}, const LoadOptions& options = {});

}  // namespace trainsim::scenario
