#include "sim/cli/diff_command.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <iostream>
#include <optional>

#include "analysis/kineto/diff_outputs.hpp"
#include "analysis/kineto/simulated_trace.hpp"
#include "analysis/reporters/atomic_file.hpp"
#include "platforms/input_error.hpp"
#include "sim/cli/trace_inputs.hpp"
#include "sim/replay/simulation.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

CLI::App* add_diff_command(CLI::App& app, DiffOptions& options) {
  auto* cmd = app.add_subcommand("diff",
                                 "Run a scenario and set it beside measured PyTorch profiler traces, rank by "
                                 "rank and kernel class by class");
  cmd->add_option("traces", options.traces,
                  "PyTorch profiler traces (*.json[.gz]), one per rank, or folders of them")
      ->required();
  cmd->add_option("--scenario", options.scenario,
                  "The scenario of the traced job (e.g. the one calibrate wrote)")
      ->required();
  cmd->add_option("--out", options.out_dir,
                  "Output folder for diff.csv, diff.json, report.html and trace.json (default "
                  "runs/diff-<scenario name>)");
  cmd->add_option("--classes", options.classes, "A kernel class table to use instead of the built-in one");
  cmd->add_option("-s,--set", options.overrides,
                  "Override a scenario value, KEY=VALUE with a dotted key (repeatable)");
  cmd->add_flag("--allow-oom", options.allow_oom, "Simulate even when the plan does not fit in GPU memory");
  cmd->add_flag("-q,--quiet", options.quiet, "Print only the files written");
  return cmd;
}

int diff_command(const DiffOptions& options) {
  const auto loaded =
      load_scenario_for_traces(options.scenario, options.overrides, {.check_memory = !options.allow_oom});
  const scenario::Scenario& s = loaded.scenario;
  const auto classes = kernel_class_table(options.classes);
  const auto traces = read_measured_traces(options.traces, classes);
  const auto notes = check_traces_against(traces, s);

  const auto result = sim::simulate(s);
  std::optional<kineto::TaskKernels> kernels;
  if (!s.workload && !s.compute_efficiency)
    kernels.emplace(s.model, s.plan);
  std::vector<int> ranks;
  for (const auto& t : traces)
    ranks.push_back(t.rank);
  const auto simulated =
      analysis::simulated_traces(result.graph, result.timeline, s.cluster, classes,
                                 {.name = s.name, .gpus = ranks, .kernels = kernels ? &*kernels : nullptr});
  const auto diff = analysis::diff_traces(traces, simulated, classes);

  std::size_t steps = 0;
  for (const auto& t : traces)
    steps += t.steps.size();
  const analysis::DiffHeader header{
      .title = fmt::format("{}: {} on {} x {}", s.name, s.model.name, s.cluster.gpu_count(),
                           s.cluster.gpu_description()),
      .measured =
          fmt::format("{} trace{} ({}, {}, {} steps)", traces.size(), traces.size() == 1 ? "" : "s",
                      describe_ranks(traces),
                      traces.front().gpu_name.empty() ? "GPU not recorded" : traces.front().gpu_name, steps),
      .trace_file = "trace.json"};
  const fs::path dir =
      options.out_dir.empty() ? fs::path("runs") / ("diff-" + s.name) : fs::path(options.out_dir);
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    throw platforms::InputError({fmt::format("{}: cannot create: {}", dir.string(), ec.message())});
  analysis::write_file_atomically(dir / "diff.csv", [&](std::ostream& o) { o << analysis::diff_csv(diff); });
  analysis::write_file_atomically(
      dir / "diff.json", [&](std::ostream& o) { o << analysis::diff_json(diff, header).dump(2) << "\n"; });
  analysis::write_file_atomically(dir / "trace.json", [&](std::ostream& o) {
    analysis::write_comparison_trace(o, traces, simulated, classes);
  });
  analysis::write_file_atomically(dir / "report.html",
                                  [&](std::ostream& o) { o << analysis::diff_html(diff, header); });
  if (!options.quiet) {
    for (const auto& n : notes)
      std::cerr << "note: " << n << "\n";
    std::cout << analysis::diff_terminal(diff, header);
  }
  std::cout << fmt::format("\nwrote {}, {}, {} and {} (both timelines: open it in Perfetto)\n",
                           (dir / "diff.csv").string(), (dir / "diff.json").string(),
                           (dir / "report.html").string(), (dir / "trace.json").string());
  return 0;
}

}  // namespace trainsim::cli
