#pragma once
// The readers of each scenario section. Each one records every problem it
// finds through the platforms::MapReader and fills what it could read; validate_scenario
// then checks the rules that span sections. One file per section keeps each
// part of the format next to its documentation.
#include "platforms/yaml_reader.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::scenario {

// Each returns true when the section was read without error.
bool read_cluster_section(platforms::MapReader& cluster, Scenario& scenario);
bool read_model_section(platforms::MapReader& model, Scenario& scenario);
bool read_plan_section(platforms::MapReader& plan, Scenario& scenario);
// Read after the cluster and plan: its selectors name ranks, nodes, stages
// and links (scenario_perturbations.cpp).
bool read_perturbations_section(platforms::MapReader& perturbations, Scenario& scenario);

// The `workload` section (workload_section.cpp): a Chakra trace replayed
// instead of a model and plan; read after the cluster, whose GPU count the
// trace must fit. Fills scenario.workload, and the model and plan the
// reports describe it with.
bool read_workload_section(platforms::MapReader& workload, Scenario& scenario);

// The plan's parallelism options (scenario_plan_options.cpp): sequence and
// context parallelism, zero_stage, gradient buckets. Read with the plan
// section, validated with it.
void read_parallelism_options(platforms::MapReader& plan, Scenario& scenario);

// The heterogeneous-cluster keys, read with the plan section:
// stage_layers and dp_micro_batches (docs/heterogeneous.md).
void read_partition_options(platforms::MapReader& plan, Scenario& scenario);

// Integer ceiling for counts in scenario files.
inline constexpr long long kMaxCount = 1LL << 30;

}  // namespace trainsim::scenario
