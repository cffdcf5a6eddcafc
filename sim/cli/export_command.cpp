#include "sim/cli/export_command.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>

#include "analysis/reporters/atomic_file.hpp"
#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "platforms/names.hpp"
#include "platforms/yaml_document.hpp"
#include "platforms/yaml_reader.hpp"
#include "sim/cli/kineto_export.hpp"
#include "sim/replay/simulation.hpp"
#include "sim/scenario/document.hpp"
#include "sim/scenario/run_size.hpp"
#include "trainsim_version.hpp"
#include "workloads/chakra/trace_export.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

CLI::App* add_export_command(CLI::App& app, ExportOptions& options) {
  auto* cmd = app.add_subcommand(
      "export",
      "Write a scenario's task graph as a Chakra execution trace (one .et file per GPU, for ASTRA-sim)");
  cmd->add_option("scenario", options.scenario, "Scenario YAML file")->required();
  auto* chakra = cmd->add_option("--chakra", options.chakra_dir,
                                 "Directory for <name>.<rank>.et, <name>.comm_groups.json and <name>.yaml (a "
                                 "scenario replaying the trace with trainsim)");
  auto* kineto = cmd->add_option("--kineto", options.kineto_dir,
                                 "Directory for <name>.rank<r>.pt.trace.json: one simulated iteration as the "
                                 "PyTorch profiler traces of its GPUs (what trainsim calibrate reads)");
  chakra->excludes(kineto);
  cmd->add_option("--name", options.name, "File prefix (default: the scenario's name)");
  cmd->add_option(
      "-s,--set", options.overrides,
      "Override a scenario value, KEY=VALUE with a dotted key (repeatable), e.g. --set plan.pp=4");
  cmd->add_flag("--allow-oom", options.allow_oom, "Export even when the plan does not fit in GPU memory");
  return cmd;
}

namespace {

// The scenario that replays the exported trace: the same cluster (and
// perturbations), the trace instead of model and plan.
std::string replay_scenario(const YAML::Node& root, const scenario::Scenario& s, const std::string& name,
                            const std::string& source) {
  YAML::Node out(YAML::NodeType::Map);
  // A name of at most kMaxNameLength characters, as the replay reads it.
  out["name"] = name.substr(0, platforms::kMaxNameLength - 7) + "-chakra";
  out["description"] =
      fmt::format("{} as a Chakra trace, exported by trainsim {} from {}", s.name, version_string, source);
  out["seed"] = s.seed;
  out["cluster"] = root["cluster"];
  YAML::Node workload(YAML::NodeType::Map);
  workload["chakra"] = name;
  workload["comm_groups"] = name + ".comm_groups.json";
  if (s.plan.global_batch_size > 0 && s.model.seq_len > 0) {
    workload["global_batch_size"] = s.plan.global_batch_size;
    workload["seq_len"] = s.model.seq_len;
  }
  out["workload"] = workload;
  if (root["perturbations"])
    out["perturbations"] = root["perturbations"];
  YAML::Emitter emitter;
  emitter << out;
  return fmt::format(
      "# {} ({} x {}, {}) as a Chakra execution trace, one {}.<rank>.et file per GPU.\n"
      "# Replay it with trainsim (paths are relative to this file):\n"
      "#   trainsim run {}.yaml\n"
      "# or with ASTRA-sim: --workload-configuration=<this folder>/{} "
      "--comm-group-configuration=<this folder>/{}.comm_groups.json\n"
      "{}\n",
      s.name, s.model.name, s.cluster.gpu_count(),
      s.plan.dp > 0 ? fmt::format("dp {} tp {} pp {}", s.plan.dp, s.plan.tp, s.plan.pp) : "", name, name,
      name, name, emitter.c_str());
}

int export_kineto_traces(const scenario::Scenario& scenario, const std::string& name, const fs::path& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw platforms::InputError({fmt::format("{}: cannot create: {}", dir.string(), ec.message())});
  const auto out = export_kineto(scenario, dir, name, [](const fs::path& path, const auto& write) {
    analysis::write_file_atomically(path, write);
  });
  std::cout << fmt::format(
      "exported {}: one simulated iteration ({:.6g} s) as {} PyTorch profiler traces ({} kernels) into {}\n"
      "calibrate with: trainsim calibrate {} --scenario SCENARIO.yaml\n",
      scenario.name, out.iteration_s, out.files, out.kernels, dir.string(), dir.string());
  return 0;
}

}  // namespace

int export_command(const ExportOptions& options) {
  if (options.chakra_dir.empty() && options.kineto_dir.empty())
    throw platforms::InputError(
        {"export: expected --chakra DIR (the task graph as a Chakra trace) or --kineto DIR "
         "(a simulated iteration as PyTorch profiler traces)"});
  // The reader and the size guard of `run`: the task graph is what a run
  // builds first.
  YAML::Node root = platforms::load_yaml_document(
      platforms::read_input_file(options.scenario, "scenario file", platforms::kMaxYamlInputBytes),
      options.scenario);
  if (!root || root.IsNull())
    root = YAML::Node(YAML::NodeType::Map);
  platforms::InputSource source(options.scenario);
  platforms::ErrorList errors;
  for (const auto& o : options.overrides)
    platforms::apply_override(root, o, source, errors);
  errors.throw_if_any();
  const scenario::Scenario scenario = scenario::load_scenario_document(
      root, source, scenario::with_size_guard({.check_memory = !options.allow_oom}));
  // The prefix of every file written: a name (platforms/names.hpp), so
  // that it stays inside --chakra DIR.
  if (const auto message = platforms::invalid_name_message(options.name);
      !options.name.empty() && !message.empty())
    throw platforms::InputError({fmt::format("--name {}: {}", options.name, message)});
  const std::string name = options.name.empty() ? scenario.name : options.name;
  if (!options.kineto_dir.empty())
    return export_kineto_traces(scenario, name, options.kineto_dir);
  const auto graph = sim::build_task_graph(scenario);
  const auto trace = chakra::export_trace(graph, fmt::format("trainsim {}", version_string));
  const fs::path dir(options.chakra_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw platforms::InputError({fmt::format("{}: cannot create: {}", dir.string(), ec.message())});
  const std::string replay = replay_scenario(root, scenario, name, options.scenario);
  // Each file atomic (a full disk leaves no truncated .et under its name);
  // NAME.yaml, the scenario that replays the trace, last. When a file
  // cannot be written, the files this export already wrote go too (with the
  // NAME.yaml of an earlier export they replaced), so nothing is left that
  // looks like a complete export.
  std::vector<fs::path> written;
  const auto write_file = [&](const fs::path& path, const std::function<void(std::ostream&)>& write) {
    analysis::write_file_atomically(path, write);
    written.push_back(path);
  };
  try {
    chakra::write_trace(dir, name, trace, write_file);
    write_file(dir / (name + ".yaml"), [&](std::ostream& o) { o << replay; });
  } catch (const platforms::InputError& e) {
    if (written.empty())
      throw;
    written.push_back(dir / (name + ".yaml"));
    for (const auto& path : written)
      fs::remove(path, ec);
    auto problems = e.problems();
    problems.push_back(
        fmt::format("{}: removed the {} files of {} this export had written; nothing of it is left",
                    dir.string(), written.size() - 1, name));
    throw platforms::InputError(problems);
  }

  std::size_t nodes = 0;
  for (const auto& rank : trace.ranks)
    nodes += rank.nodes.size();
  std::cout << fmt::format(
      "exported {}: {} tasks as {} Chakra nodes in {} rank files ({} communicator groups{}) into {}\n"
      "replay with: trainsim run {}\n",
      scenario.name, graph.size(), nodes, trace.ranks.size(), trace.comm_groups.size(),
      trace.dependency_pairs ? fmt::format(", {} dependency-only send/recv pairs", trace.dependency_pairs)
                             : "",
      dir.string(), written.back().string());
  return 0;
}

}  // namespace trainsim::cli
