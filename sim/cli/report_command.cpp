#include "sim/cli/report_command.hpp"

#include <fmt/format.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>

#include "analysis/report.hpp"
#include "analysis/reporters/output_files.hpp"
#include "analysis/reporters/reporters.hpp"
#include "analysis/reporters/run_archive.hpp"
#include "platforms/input_error.hpp"
#include "sim/replay/simulation.hpp"
#include "trainsim_version.hpp"
#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

namespace {
constexpr const char* kRunSchema = "trainsim.run/1";

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
  return cmd;
}

void save_run(const fs::path& dir, const scenario::Scenario& scenario, const std::string& scenario_text,
              const std::vector<std::string>& overrides, const workloads::TaskGraph& graph,
              const analysis::Timeline& timeline, const analysis::BalanceOutcome* balance) {
  nlohmann::ordered_json meta = {{"schema", kRunSchema},
                                 {"trainsim_version", version_string},
                                 {"scenario_file", scenario.file},
                                 {"overrides", overrides},
                                 {"scenario_yaml", scenario_text}};
  if (balance)
    meta["balance"] = analysis::to_json(*balance);
  const fs::path path = dir / analysis::kRunArchiveFile;
  std::ofstream out(path, std::ios::binary);
  if (!out)
    throw std::runtime_error(fmt::format("cannot write {}", path.string()));
  analysis::write_run_archive(out, meta.dump(), graph, timeline);
  out.flush();
  if (!out)
    throw std::runtime_error(fmt::format("error while writing {}", path.string()));
}

void write_reports(const fs::path& dir, const scenario::Scenario& scenario, const workloads::TaskGraph& graph,
                   const analysis::Timeline& timeline, bool html, bool quiet,
                   const std::vector<std::string>& also_written, const analysis::BalanceOutcome* balance) {
  const analysis::RunContext run{scenario.name, scenario.file, scenario.cluster, scenario.model,
                                 scenario.plan, graph,         balance};
  const analysis::Report report = analysis::build_report(run, timeline);
  auto written = analysis::write_output_files(dir, run, timeline, report, html);
  if (!quiet) {
    analysis::write_terminal_summary(std::cout, run, report);
    written.insert(written.end(), also_written.begin(), also_written.end());
    std::cout << fmt::format("\nwrote {}/{{{}}}\n", dir.string(), join(written));
  }
}

int report_command(const ReportOptions& options) {
  const fs::path run_dir(options.run_dir);
  const fs::path archive_path = run_dir / analysis::kRunArchiveFile;
  std::ifstream in(archive_path, std::ios::binary);
  if (!in)
    throw platforms::InputError(
        {fmt::format("{}: no saved run here (expected {}); `trainsim run SCENARIO --out {}` saves one",
                     run_dir.string(), analysis::kRunArchiveFile, run_dir.string())});
  analysis::RunArchive archive;
  nlohmann::json meta;
  std::optional<analysis::BalanceOutcome> balance;
  try {
    archive = analysis::read_run_archive(in);
    meta = nlohmann::json::parse(archive.metadata_json);
    if (meta.value("schema", "") != kRunSchema)
      throw std::runtime_error(fmt::format("metadata schema is not {}", kRunSchema));
    if (meta.contains("balance"))
      balance = analysis::balance_outcome_from_json(meta.at("balance"));
  } catch (const std::exception& e) {
    throw platforms::InputError({fmt::format("{}: {}", archive_path.string(), e.what())});
  }
  const auto overrides = meta.value("overrides", std::vector<std::string>{});
  // The run already passed (or, with --allow-oom, waived) the memory check.
  const scenario::Scenario scenario = scenario::parse_scenario_text(
      meta.value("scenario_yaml", std::string{}), meta.value("scenario_file", std::string{}), overrides,
      {.check_memory = false});
  // The graph is rebuilt, not stored; a different trainsim may build a
  // different one, and the timeline would then not match it.
  const workloads::TaskGraph graph = sim::build_task_graph(scenario);
  if (graph.gpu_count != archive.gpu_count || graph.size() != archive.task_count ||
      workloads::graph_fingerprint(graph) != archive.graph_fingerprint)
    throw platforms::InputError({fmt::format(
        "{}: saved by trainsim {}, whose task graph for this scenario differs from this trainsim's "
        "({} tasks on {} GPUs saved, {} tasks on {} GPUs now); run the scenario again",
        archive_path.string(), meta.value("trainsim_version", std::string("?")), archive.task_count,
        archive.gpu_count, graph.size(), graph.gpu_count)});
  const fs::path out_dir = options.out_dir.empty() ? run_dir : fs::path(options.out_dir);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    throw platforms::InputError(
        {fmt::format("{}: cannot create the output directory: {}", out_dir.string(), ec.message())});
  // Another folder becomes a run folder too (`trainsim report OUT` works on it).
  std::vector<std::string> also_written;
  if (!fs::equivalent(out_dir, run_dir, ec)) {
    fs::copy_file(archive_path, out_dir / analysis::kRunArchiveFile, fs::copy_options::overwrite_existing,
                  ec);
    if (ec)
      throw std::runtime_error(
          fmt::format("cannot copy {} to {}: {}", archive_path.string(), out_dir.string(), ec.message()));
    also_written.push_back(analysis::kRunArchiveFile);
  }
  write_reports(out_dir, scenario, graph, archive.timeline, options.html, options.quiet, also_written,
                balance ? &*balance : nullptr);
  return 0;
}

}  // namespace trainsim::cli
