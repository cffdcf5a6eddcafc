#pragma once
// What `trainsim calibrate` and `trainsim diff` share: the kernel class table
// (built in, or --classes FILE), the measured traces (TRACE... as files or
// folders), and the scenario they are held against.
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "sim/scenario/scenario.hpp"
#include "workloads/kineto/kernel_classes.hpp"
#include "workloads/kineto/kineto_trace.hpp"

namespace trainsim::cli {

// The scenario file with its --set overrides applied: the document (which
// calibrate writes back out) and the checked Scenario.
struct LoadedScenario {
  YAML::Node document;
  scenario::Scenario scenario;
};
LoadedScenario load_scenario_for_traces(const std::string& path, const std::vector<std::string>& overrides,
                                        const scenario::LoadOptions& options);

// The built-in table, or the one in `file` (read through the input reader).
kineto::KernelClassTable kernel_class_table(const std::string& file);

// Every rank's trace, in rank order. Throws InputError listing every file's
// problems, and when no trace has a GPU kernel in a step.
std::vector<kineto::RankTrace> read_measured_traces(const std::vector<std::string>& paths,
                                                    const kineto::KernelClassTable& classes);

// Refuses traces the scenario cannot hold: a rank beyond its GPUs. Returns
// notes for the terminal (each trace's own notes, a GPU that differs from
// the scenario's).
std::vector<std::string> check_traces_against(const std::vector<kineto::RankTrace>& traces,
                                              const scenario::Scenario& scenario);

// "ranks 0-7" / "rank 3" / "ranks 0, 2, 5".
std::string describe_ranks(const std::vector<kineto::RankTrace>& traces);

}  // namespace trainsim::cli
