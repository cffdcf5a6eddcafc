#include "sim/cli/report_command.hpp"

#include <fmt/format.h>

#include <iostream>

#include "analysis/report.hpp"
#include "analysis/reporters/reporters.hpp"
#include "analysis/reporters/run_archive.hpp"
#include "analysis/reporters/run_outputs.hpp"
#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "sim/replay/simulation.hpp"
#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

namespace {
std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}
}  // namespace

CLI::App* add_report_command(CLI::App& app, ReportOptions& options) {
  auto* cmd = app.add_subcommand("report", "Regenerate every output of a saved run (no new simulation)");
  cmd->add_option("run_dir", options.run_dir, "Output directory of an earlier `trainsim run`")->required();
  cmd->add_option("-o,--out", options.out_dir, "Where to write the outputs (default: RUN_DIR)");
  cmd->add_flag("--html", options.html, "Also write report.html, one self-contained page");
  cmd->add_flag("-q,--quiet", options.quiet, "Do not print the summary table");
  add_trace_option(*cmd, options.trace);
  return cmd;
}

void add_trace_option(CLI::App& command, std::string& trace) {
  command
      .add_option("--trace", trace,
                  "What trace.json holds: full (every GPU), replica (the GPUs of data-parallel replica 0, "
                  "the whole critical path and hottest links) or auto (default: full unless it would pass "
                  "~200 MB, what Perfetto's UI opens)")
      ->check(CLI::IsMember({"auto", "full", "replica"}));
}

analysis::TraceDetail trace_detail(const std::string& trace) {
  if (trace == "full")
    return analysis::TraceDetail::full;
  if (trace == "replica")
    return analysis::TraceDetail::replica;
  return analysis::TraceDetail::automatic;
}

void write_run(analysis::RunFolder& folder, const RunToWrite& r, bool html, bool quiet) {
  const analysis::RunContext run{r.scenario.name, r.scenario.file, r.scenario.cluster, r.scenario.model,
                                 r.scenario.plan, r.graph,         r.balance};
  const auto written = analysis::write_run_outputs(folder, {.run = run,
                                                            .timeline = r.timeline,
                                                            .summary = r.summary,
                                                            .computed = r.computed,
                                                            .fold = r.fold,
                                                            .repeats = r.repeats,
                                                            .archive = r.archive,
                                                            .keep_archive = r.keep_archive,
                                                            .html = html,
                                                            .trace = r.trace,
                                                            .kept_folders = r.kept_folders});
  if (r.trace == analysis::TraceDetail::automatic && written.trace == analysis::TraceDetail::replica)
    std::cerr << fmt::format(
        "note: trace.json holds data-parallel replica 0 only ({} GPUs of {}): the full trace would be ~{} "
        "MB, "
        "more than Perfetto's UI opens; --trace full writes it\n",
        run.plan.tp * run.plan.cp * run.plan.pp, run.graph.gpu_count,
        static_cast<long long>(analysis::estimated_full_trace_bytes(run, r.timeline, written.report) / 1e6));
  if (quiet)
    return;
  analysis::write_terminal_summary(std::cout, run, written.report);
  std::cout << fmt::format("\nwrote {}/{{{}}}\n", folder.dir().string(), join(written.files));
  if (written.report.repeats)
    analysis::write_repeated_runs_summary(std::cout, *written.report.repeats);
}

int report_command(const ReportOptions& options) {
  const fs::path run_dir(options.run_dir);
  const fs::path archive_path = run_dir / analysis::kRunArchiveFile;
  std::error_code ec;
  if (!fs::is_regular_file(archive_path, ec))
    throw platforms::InputError(
        {fmt::format("{}: no saved run here (expected {}); `trainsim run SCENARIO --out {}` saves one",
                     run_dir.string(), analysis::kRunArchiveFile, run_dir.string())});
  // The reader of every input (a regular file, the binary cap), then the
  // archive's own checks.
  const std::string bytes =
      platforms::read_binary_input_file(archive_path.string(), "saved run", platforms::kMaxBinaryInputBytes);
  analysis::RunArchive archive;
  analysis::RunMetadata meta;
  try {
    archive = analysis::parse_run_archive(bytes);
    meta = analysis::run_metadata_from_json(archive.metadata_json);
  } catch (const std::exception& e) {
    throw platforms::InputError({fmt::format("{}: {}", archive_path.string(), e.what())});
  }
  // The run already passed (or, with --allow-oom, waived) the memory check.
  const scenario::Scenario scenario = scenario::parse_scenario_text(meta.scenario_yaml, meta.scenario_file,
                                                                    meta.overrides, {.check_memory = false});
  // The graph is rebuilt, not stored; a different trainsim may build a
  // different one, and the timeline would then not match it.
  const workloads::TaskGraph graph = sim::build_task_graph(scenario);
  if (graph.gpu_count != archive.gpu_count || graph.size() != archive.task_count ||
      workloads::graph_fingerprint(graph, archive.fingerprint_hash) != archive.graph_fingerprint)
    throw platforms::InputError({fmt::format(
        "{}: saved by trainsim {}, whose task graph for this scenario differs from this trainsim's "
        "({} tasks on {} GPUs saved, {} tasks on {} GPUs now); run the scenario again",
        archive_path.string(), meta.trainsim_version, archive.task_count, archive.gpu_count, graph.size(),
        graph.gpu_count)});
  const fs::path out_dir = options.out_dir.empty() ? run_dir : fs::path(options.out_dir);
  const bool same_folder = fs::equivalent(out_dir, run_dir, ec);
  analysis::RunFolder folder(out_dir);
  write_run(folder,
            {.scenario = scenario,
             .graph = graph,
             .timeline = archive.timeline,
             .fold = archive.fold.considered ? &archive.fold : nullptr,
             .repeats = meta.repeats,
             .balance = meta.balance ? &*meta.balance : nullptr,
             // Another folder becomes a run folder too (`trainsim report OUT` works on it).
             .archive = same_folder ? nullptr : &meta,
             .keep_archive = same_folder,
             .trace = trace_detail(options.trace)},
            options.html, options.quiet);
  return 0;
}

}  // namespace trainsim::cli
