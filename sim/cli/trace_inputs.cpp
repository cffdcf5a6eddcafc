#include "sim/cli/trace_inputs.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "platforms/yaml_document.hpp"
#include "platforms/yaml_reader.hpp"
#include "sim/scenario/document.hpp"
#include "workloads/kineto/trace_file.hpp"

namespace trainsim::cli {

LoadedScenario load_scenario_for_traces(const std::string& path, const std::vector<std::string>& overrides,
                                        const scenario::LoadOptions& options) {
  YAML::Node root = platforms::load_yaml_document(
      platforms::read_input_file(path, "scenario file", platforms::kMaxYamlInputBytes), path);
  if (!root || root.IsNull())
    root = YAML::Node(YAML::NodeType::Map);
  platforms::InputSource source(path);
  platforms::ErrorList errors;
  for (const auto& o : overrides)
    platforms::apply_override(root, o, source, errors);
  errors.throw_if_any();
  auto s = scenario::load_scenario_document(YAML::Clone(root), source, options);
  return {root, std::move(s)};
}

kineto::KernelClassTable kernel_class_table(const std::string& file) {
  if (file.empty())
    return kineto::KernelClassTable::builtin();
  return kineto::KernelClassTable::parse(
      platforms::read_input_file(file, "kernel class table", platforms::kMaxYamlInputBytes), file);
}

std::vector<kineto::RankTrace> read_measured_traces(const std::vector<std::string>& paths,
                                                    const kineto::KernelClassTable& classes) {
  auto traces = kineto::read_traces(kineto::find_trace_files(paths), classes);
  std::vector<std::string> problems;
  for (const auto& t : traces) {
    std::size_t in_steps = 0;
    for (const auto& k : t.kernels)
      in_steps += k.step >= 0;
    if (t.kernels.empty())
      problems.push_back(
          fmt::format("{}: no GPU kernels (a CPU-only trace: profile with activities=[ProfilerActivity.CPU, "
                      "ProfilerActivity.CUDA])",
                      t.path));
    else if (in_steps == 0)
      problems.push_back(fmt::format(
          "{}: none of its {} kernels falls in a ProfilerStep span (expected kernels launched during the "
          "profiled steps)",
          t.path, t.kernels.size()));
  }
  if (!problems.empty())
    throw platforms::InputError(problems);
  return traces;
}

namespace {

std::string lower_alnum(std::string_view s) {
  std::string out;
  for (char c : s)
    if (std::isalnum(static_cast<unsigned char>(c)))
      out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::vector<std::string> check_traces_against(const std::vector<kineto::RankTrace>& traces,
                                              const scenario::Scenario& scenario) {
  std::vector<std::string> notes, problems;
  const int gpus = scenario.cluster.gpu_count();
  for (const auto& t : traces) {
    if (t.rank >= gpus)
      problems.push_back(fmt::format(
          "{}: rank {} is beyond the scenario's {} GPUs (expected a cluster with at least {} GPUs: "
          "--set cluster.nodes=N)",
          t.path, t.rank, gpus, t.rank + 1));
    for (const auto& n : t.notes)
      notes.push_back(fmt::format("{}: {}", t.path, n));
  }
  if (!problems.empty())
    throw platforms::InputError(problems);
  // The traced GPU against the scenario's ("NVIDIA H100 80GB HBM3" and
  // "H100-SXM" share "h100").
  for (const auto& t : traces) {
    if (t.gpu_name.empty())
      continue;
    const std::string simulated = scenario.cluster.gpu_of(t.rank).name;
    std::string family = lower_alnum(simulated);
    family = family.substr(0, std::min<std::size_t>(4, family.size()));
    if (lower_alnum(t.gpu_name).find(family) == std::string::npos) {
      notes.push_back(
          fmt::format("{}: traced on {}, the scenario's GPU is {}", t.path, t.gpu_name, simulated));
      break;
    }
  }
  return notes;
}

std::string describe_ranks(const std::vector<kineto::RankTrace>& traces) {
  if (traces.size() == 1)
    return fmt::format("rank {}", traces.front().rank);
  bool contiguous = true;
  for (std::size_t i = 1; i < traces.size(); ++i)
    contiguous = contiguous && traces[i].rank == traces[i - 1].rank + 1;
  if (contiguous)
    return fmt::format("ranks {}-{}", traces.front().rank, traces.back().rank);
  std::string s = "ranks ";
  for (std::size_t i = 0; i < traces.size(); ++i)
    s += fmt::format("{}{}", i ? ", " : "", traces[i].rank);
  return s;
}

}  // namespace trainsim::cli
