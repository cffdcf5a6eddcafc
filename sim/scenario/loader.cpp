// Scenario YAML -> Scenario. Three steps, as everywhere in trainsim: parse
// every section (collecting all errors), validate across sections, then hand
// plain specs to the layers below. Nothing here touches SimGrid, so bad input
// can never reach the engine.
#include <fmt/format.h>

#include <filesystem>
#include <limits>

#include "platforms/input_file.hpp"
#include "platforms/names.hpp"
#include "platforms/yaml_document.hpp"
#include "platforms/yaml_reader.hpp"
#include "sim/scenario/checks.hpp"
#include "sim/scenario/document.hpp"
#include "sim/scenario/infeasible_plan.hpp"
#include "sim/scenario/memory_check.hpp"
#include "sim/scenario/run_size.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/scenario_keys.hpp"
#include "sim/scenario/sections.hpp"

namespace trainsim::scenario {
namespace {

std::optional<platforms::MapReader> required_map(platforms::MapReader& parent, std::string_view key,
                                                 std::string_view expected) {
  if (!parent.has(key)) {
    parent.accept(key);
    parent.error(key, fmt::format("missing section (expected a map with {})", expected));
    return std::nullopt;
  }
  return parent.map(key);
}

Scenario load_document(const YAML::Node& root, const platforms::InputSource& source,
                       const LoadOptions& options) {
  const std::string& file = source.file();
  platforms::ErrorList errors;
  Scenario scenario;
  scenario.file = file;
  platforms::MapReader top(root, "", source, errors, &scenario_keys());
  // The name is the run's default folder (runs/<name>/): a name as
  // platforms/names.hpp says, or one made from the file's stem.
  scenario.name = top.label("name").value_or(
      platforms::name_from_text(std::filesystem::path(file).stem().string(), "scenario"));
  top.text("description");
  if (auto seed = top.integer("seed", 0, std::numeric_limits<long long>::max()))
    scenario.seed = static_cast<std::uint64_t>(*seed);
  // A study file given to `run`: say which command runs it rather than
  // calling its section an unknown key.
  for (const char* key : kStudySectionKeys) {
    if (!top.has(key))
      continue;
    top.accept(key);
    top.error(key, fmt::format("`trainsim run` simulates one scenario, and this file is a study; run it "
                               "with `trainsim {} {}` (or take this section out to run the base scenario)",
                               std::string_view(key) == "sweep" ? "sweep" : "compare", file));
  }

  bool ok = true;
  auto cluster = required_map(top, "cluster", "a preset or gpu, nodes, gpus_per_node, nvlink, nic, fabric");
  ok = cluster && read_cluster_section(*cluster, scenario) && ok;
  // A trace replaces the model and the plan (sim/scenario/workload_section.cpp).
  const bool trace = top.has("workload");
  std::optional<platforms::MapReader> plan;
  if (trace) {
    for (const char* key : {"model", "plan"})
      if (top.has(key)) {
        top.accept(key);
        top.error(key,
                  "a scenario with a `workload` section replays that trace, which brings its own work and "
                  "parallelism; take this section out");
      }
    auto workload = top.map("workload");
    ok = workload && cluster && ok && read_workload_section(*workload, scenario) && ok;
  } else {
    auto model = required_map(top, "model", "a preset or layers, hidden, heads, seq_len, vocab");
    ok = model && read_model_section(*model, scenario) && ok;
    plan = required_map(top, "plan", "dp, tp, pp, micro_batch_size, global_batch_size, schedule");
    ok = plan && read_plan_section(*plan, scenario) && ok;
  }
  if (top.has("perturbations"))
    if (auto perturbations = top.map("perturbations"); perturbations && ok)
      ok = read_perturbations_section(*perturbations, scenario) && ok;
  top.finish();
  errors.throw_if_any();
  // A replayed trace has no plan to check (sim/scenario/workload_section.cpp).
  if (ok && !trace) {
    // Typed checks (sim/scenario/checks.hpp), each problem located at the
    // key's value in this document or the --set option that gave it.
    auto problems = resolve_plan(scenario);
    if (problems.empty())
      problems = check(scenario);
    for (const auto& problem : problems)
      errors.add(platforms::locate_problem(root, source, problem));
    // Everything found from here on is a well-formed plan that cannot run on
    // this cluster and model: a sweep drops such points (sim/scenario/infeasible_plan.hpp).
    try {
      errors.throw_if_any();
    } catch (const platforms::InputError& e) {
      throw InfeasiblePlan(Infeasibility::invalid_plan, e.problems());
    }
    // A plan too large to simulate here: refused before anything big is built.
    if (options.max_run_memory_bytes > 0) {
      const RunSize size = estimate_run_size(scenario, options.iterations, options.fold_from_gpus);
      if (options.estimate)
        *options.estimate = size;
      check_run_size(scenario, size, options);
    }
    // A plan that runs, but not in the GPUs' memory.
    if (options.check_memory) {
      for (const auto& problem : memory_problems(scenario))
        errors.add(platforms::locate_problem(root, source,
                                             {"plan", problem + ", or --allow-oom to simulate anyway"}));
      try {
        errors.throw_if_any();
      } catch (const platforms::InputError& e) {
        throw InfeasiblePlan(Infeasibility::does_not_fit_in_memory, e.problems());
      }
    }
  }
  return scenario;
}

Scenario load_from(const std::string& text, const std::string& file,
                   const std::vector<std::string>& overrides, const LoadOptions& options) {
  YAML::Node root = platforms::load_yaml_document(text, file);
  if (!root || root.IsNull())
    root = YAML::Node(YAML::NodeType::Map);

  platforms::InputSource source(file);
  platforms::ErrorList errors;
  for (const auto& o : overrides)
    platforms::apply_override(root, o, source, errors);
  errors.throw_if_any();
  return load_document(root, source, options);
}

}  // namespace

Scenario load_scenario(const std::string& path, const std::vector<std::string>& overrides,
                       const LoadOptions& options) {
  return load_from(platforms::read_input_file(path, "scenario file", platforms::kMaxYamlInputBytes), path,
                   overrides, options);
}

Scenario parse_scenario_text(const std::string& yaml, const std::string& file,
                             const std::vector<std::string>& overrides, const LoadOptions& options) {
  return load_from(yaml, file, overrides, options);
}

Scenario load_scenario_document(const YAML::Node& root, const platforms::InputSource& source,
                                const LoadOptions& options) {
  return load_document(root, source, options);
}

}  // namespace trainsim::scenario
