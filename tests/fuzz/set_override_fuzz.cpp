// Fuzz target: `--set` values on a fixed valid scenario. The input is one
// or more assignments KEY=VALUE separated by NUL bytes, applied by
// platforms::apply_override (as `trainsim run --set`) to the scenario below,
// which is then loaded and checked. Bad input must end in
// platforms::InputError (exit 1); anything else escaping, a crash or a
// sanitizer report is a bug.
#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "platforms/input_error.hpp"
#include "platforms/yaml_reader.hpp"
#include "sim/scenario/document.hpp"

namespace {

// scenarios/quickstart.yaml with a section of each kind the override can
// reach into (a list of maps under perturbations), so random keys
// find maps, lists and scalars in the way.
constexpr const char* kScenario = R"(name: quickstart
seed: 1
cluster:
  gpu: A100-80GB
  nodes: 2
  gpus_per_node: 8
  nvlink: {bandwidth: 300GBps, latency: 2us}
  nic: {bandwidth: 200Gbps, latency: 5us}
  fabric: {topology: fat_tree, nodes_per_leaf: 1, oversubscription: 1, spine_latency: 1us}
model:
  preset: gpt3-1.3b
plan:
  dp: 2
  tp: 2
  pp: 4
  micro_batch_size: 2
  global_batch_size: 64
  schedule: 1f1b
  recompute: none
perturbations:
  slow_gpus:
    - {stages: 0, dp_rank: 0, speed: 0.8}
)";

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> assignments;
  for (std::size_t start = 0;;) {
    const auto nul = input.find('\0', start);
    assignments.push_back(input.substr(start, nul - start));
    if (nul == std::string::npos)
      break;
    start = nul + 1;
  }
  namespace platforms = trainsim::platforms;
  static const std::string text = kScenario;
  YAML::Node root = YAML::Load(text);
  platforms::InputSource source("fuzz.yaml");
  platforms::ErrorList errors;
  try {
    for (const auto& a : assignments)
      platforms::apply_override(root, a, source, errors);
    errors.throw_if_any();
    (void)trainsim::scenario::load_scenario_document(root, source, {.check_memory = true});
  } catch (const platforms::InputError&) {
  }
  return 0;
}
