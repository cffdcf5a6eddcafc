#include "sim/cli/sweep_command.hpp"

#include <fmt/format.h>

#include <chrono>
#include <iostream>
#include <map>
#include <set>
#include <thread>

#include "platforms/input_error.hpp"
#include "platforms/interruption.hpp"
#include "sim/scenario/run_size.hpp"
#include "sim/study/point_runner.hpp"
#include "sim/study/slurm_submission.hpp"
#include "sim/study/study_file.hpp"
#include "sim/study/study_folder.hpp"
#include "sim/study/study_points.hpp"
#include "sim/study/study_results.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

CLI::App* add_sweep_command(CLI::App& app, SweepOptions& options) {
  auto* cmd =
      app.add_subcommand("sweep", "Run every point of a study's sweep in parallel and gather the results");
  cmd->add_option("study", options.study, "Study YAML file (a scenario with a `sweep` section)")->required();
  cmd->add_option("-o,--out", options.out_dir,
                  "Directory for results.csv, results.json, plots/ and points/ (default: runs/<study name>)");
  cmd->add_option("-j,--jobs", options.jobs, "Worker processes (default: one per processor)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("--shard", options.shard,
                  "Run only shard I of N (I/N, 0 <= I < N; point i belongs to shard i mod N), then combine "
                  "the shards with `trainsim merge`");
  cmd->add_option("-s,--set", options.overrides,
                  "Override a scenario value in every point, KEY=VALUE with a dotted key (repeatable)");
  cmd->add_option("--only", options.only,
                  "Run a subset: keep only these values of one swept column, COLUMN=V1,V2 (a swept key or "
                  "variant; repeatable), e.g. --only cluster.nodes=1,8 --only variant=fsdp");
  cmd->add_option("--keep", options.keep,
                  "Outputs kept per point: all (summary.json, timeline.csv, trace.json) or summary")
      ->check(CLI::IsMember({"all", "summary"}));
  cmd->add_flag("--html", options.html,
                "Also write report.html: the plots and the results table in one page");
  cmd->add_flag("-q,--quiet", options.quiet, "No progress display");
  cmd->add_flag("--allow-oom", options.allow_oom,
                "Simulate the points whose plan does not fit in GPU memory instead of dropping them (each "
                "summary still reports its peak and fits_in_memory: false)");
  cmd->add_option("--slurm", options.slurm_shards,
                  "Submit the study to Slurm instead of running it here: a job array of N `--shard I/N` "
                  "tasks and a merge job after them (scripts and logs in OUT/slurm/)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--sbatch", options.sbatch_arguments,
                  "With --slurm: one more sbatch option for both jobs (repeatable), e.g. "
                  "--sbatch=--partition=cpu --sbatch=--cpus-per-task=8 --sbatch=--time=2:00:00");
  return cmd;
}

namespace {

int worker_count(int requested) {
  if (requested > 0)
    return requested;
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void print_dropped(std::ostream& out, const std::vector<sim::StudyPoint>& points) {
  constexpr std::size_t kShown = 10;
  std::size_t shown = 0, dropped = 0;
  for (const auto& p : points) {
    if (!p.dropped)
      continue;
    ++dropped;
    if (shown++ < kShown)
      out << fmt::format("  dropped {} ({}): {}\n", p.id, p.label, *p.dropped);
  }
  if (dropped > kShown)
    out << fmt::format("  ... and {} more dropped points (see results.csv)\n", dropped - kShown);
}

// --slurm N: the points were checked here; the shards run them under Slurm.
int submit_to_slurm(const SweepOptions& options, const sim::StudyFile& study,
                    const std::vector<sim::StudyPoint>& points, const fs::path& out_dir) {
  if (!options.shard.empty())
    throw platforms::InputError(
        {"--slurm N submits every shard of the study itself; it cannot be combined "
         "with --shard I/N"});
  if (static_cast<std::size_t>(options.slurm_shards) > points.size())
    throw platforms::InputError(
        {fmt::format("--slurm {}: the study has only {} points; ask for at most {} "
                     "shards",
                     options.slurm_shards, points.size(), points.size())});
  sim::SlurmSweep sweep;
  sweep.trainsim_exe = sim::current_executable();
  sweep.study = options.study;
  sweep.study_name = study.name;
  sweep.out_dir = out_dir;
  sweep.working_dir = fs::current_path();
  sweep.shards = options.slurm_shards;
  for (const auto& o : options.overrides)
    sweep.sweep_arguments.insert(sweep.sweep_arguments.end(), {"--set", o});
  for (const auto& o : options.only)
    sweep.sweep_arguments.insert(sweep.sweep_arguments.end(), {"--only", o});
  sweep.sweep_arguments.insert(sweep.sweep_arguments.end(), {"--keep", options.keep});
  if (options.allow_oom)
    sweep.sweep_arguments.push_back("--allow-oom");
  if (options.jobs > 0)
    sweep.sweep_arguments.insert(sweep.sweep_arguments.end(), {"-j", std::to_string(options.jobs)});
  sweep.jobs_from_slurm = options.jobs == 0;
  sweep.html = options.html;
  sweep.sbatch_arguments = options.sbatch_arguments;
  const auto jobs = sim::submit_slurm_sweep(sweep);
  std::cout << fmt::format(
      "sweep {}: {} points in {} shards submitted to Slurm: array job {} (shards 0-{}), then merge job {}; "
      "results in {}\nwatch with: squeue -j {},{}   (scripts and logs in {})\n",
      study.name, points.size(), options.slurm_shards, jobs.array_job, options.slurm_shards - 1,
      jobs.merge_job, out_dir.string(), jobs.array_job, jobs.merge_job, (out_dir / "slurm").string());
  return 0;
}

}  // namespace

int sweep_command(const SweepOptions& options) {
  const auto started = std::chrono::steady_clock::now();
  sim::StudyFile study = sim::read_study_file(options.study);
  sim::narrow_study(study, options.only);
  if (!study.has_sweep && !study.has_variants)
    throw platforms::InputError({fmt::format(
        "{}: has neither a `sweep` nor a `variants` section, so there is nothing to sweep (simulate one "
        "scenario with `trainsim run {}`)",
        options.study, options.study)});
  std::optional<analysis::ShardInfo> shard;
  if (!options.shard.empty())
    shard = sim::parse_shard(options.shard);

  const auto points = sim::prepare_points(study, options.overrides,
                                          scenario::with_size_guard({.check_memory = !options.allow_oom}));
  std::map<std::string, std::size_t> dropped_by_reason;
  for (const auto& p : points)
    if (p.dropped)
      ++dropped_by_reason[p.dropped->substr(0, p.dropped->find(':'))];
  const std::size_t dropped = [&] {
    std::size_t n = 0;
    for (const auto& [reason, count] : dropped_by_reason)
      n += count;
    return n;
  }();
  if (dropped == points.size()) {
    std::vector<std::string> problems{fmt::format(
        "{}: every one of the study's {} points was dropped, so nothing would run:", options.study,
        points.size())};
    for (std::size_t i = 0; i < points.size() && i < 5; ++i)
      problems.push_back(
          fmt::format("  point {} ({}): {}", points[i].id, points[i].label, *points[i].dropped));
    throw platforms::InputError(problems);
  }

  const fs::path out_dir =
      options.out_dir.empty() ? fs::path("runs") / study.name : fs::path(options.out_dir);
  if (options.slurm_shards > 0)
    return submit_to_slurm(options, study, points, out_dir);
  std::error_code ec;
  fs::create_directories(out_dir / "points", ec);
  if (ec)
    throw platforms::InputError(
        {fmt::format("{}: cannot create the output directory: {}", out_dir.string(), ec.message())});

  // This run's points: the whole study or one shard of it.
  std::vector<const sim::StudyPoint*> mine;
  std::vector<sim::PointJob> jobs;
  std::vector<std::size_t> job_of(points.size(), SIZE_MAX);
  for (const auto& p : points) {
    if (shard && !sim::in_shard(p.index, *shard))
      continue;
    mine.push_back(&p);
    if (!p.dropped) {
      job_of[p.index] = jobs.size();
      jobs.push_back(sim::PointJob{p.id, p.label, p.scenario_yaml});
    }
  }

  sim::RunnerOptions runner;
  runner.root = out_dir / "points";
  runner.jobs = worker_count(options.jobs);
  runner.keep = options.keep == "summary" ? sim::KeepOutputs::summary : sim::KeepOutputs::all;
  runner.trainsim_exe = sim::current_executable();
  if (options.allow_oom)
    runner.run_arguments.push_back("--allow-oom");
  runner.progress = options.quiet ? sim::ProgressStyle::none : sim::default_progress_style();
  const std::size_t reused = sim::count_finished(jobs, runner.root);

  std::string dropped_text;
  for (const auto& [reason, count] : dropped_by_reason)
    dropped_text += fmt::format("{}{} {}", dropped_text.empty() ? "" : ", ", count, reason);
  std::cerr << fmt::format("sweep {}: {} points{}", study.name, points.size(),
                           dropped ? fmt::format(" ({} dropped: {})", dropped, dropped_text) : "");
  for (const auto& o : options.only)
    std::cerr << fmt::format(" --only {}", o);
  if (shard)
    std::cerr << fmt::format("; shard {}/{}: {} points", shard->index, shard->count, mine.size());
  std::cerr << fmt::format("; {} to simulate with {} worker{}", jobs.size() - reused, runner.jobs,
                           runner.jobs == 1 ? "" : "s");
  if (reused > 0)
    std::cerr << fmt::format(", {} finished earlier (reused)", reused);
  std::cerr << fmt::format("; outputs in {}\n", out_dir.string());

  std::vector<sim::PointOutcome> outcomes;
  try {
    outcomes = sim::run_points(jobs, runner, std::cerr);
  } catch (const sim::Interrupted& e) {
    std::cerr << platforms::interruption_message(
        e.signal(), fmt::format("{} of {} points finished and are kept in {}; run the same command again to "
                                "resume (the results tables are not updated)",
                                e.finished(), e.total(), runner.root.string()));
    return 128 + e.signal();
  }
  platforms::set_interruption_note(
      fmt::format("every point finished and is kept in {}; the results are not all written: run the same "
                  "command again (it reuses the points)",
                  runner.root.string()));

  // The study completed: the folder now holds this study alone
  // (sim/study/study_folder.hpp).
  std::set<std::string> ids;
  for (const auto& job : jobs)
    ids.insert(job.id);
  if (const auto removed = sim::describe_removed_points(sim::remove_other_points(runner.root, ids));
      !removed.empty())
    std::cerr << fmt::format("sweep {}: {}\n", study.name, removed);

  analysis::ResultsDocument doc;
  doc.study = sim::study_header(study, points);
  doc.shard = shard;
  int status = 0;
  std::size_t ok = 0, failed = 0;
  for (const auto* p : mine) {
    const sim::PointOutcome* outcome = p->dropped ? nullptr : &outcomes[job_of[p->index]];
    doc.rows.push_back(sim::point_row(*p, outcome));
    if (outcome && outcome->state == sim::PointState::failed) {
      ++failed;
      status = std::max(status, outcome->exit_status == 1 ? 1 : 2);
    } else if (outcome) {
      ++ok;
    }
  }
  // A shard draws no plots: they would show only part of the study.
  const auto plots = shard ? std::vector<analysis::PlotSpec>{} : study.plots;
  const auto outputs = sim::write_study_outputs(out_dir, doc, plots, options.html && !shard);
  sim::remove_stale_study_files(out_dir, outputs.written, options.html && !shard);
  platforms::set_interruption_note(fmt::format("the results in {} are complete", out_dir.string()));

  const double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::size_t mine_dropped = 0;
  for (const auto* p : mine)
    mine_dropped += p->dropped.has_value();
  std::cout << fmt::format("sweep {}: {} ok, {} failed, {} dropped ({} points{}) in {:.1f}s\n", study.name,
                           ok, failed, mine_dropped, mine.size(),
                           shard ? fmt::format(", shard {}/{}", shard->index, shard->count) : "", wall_s);
  for (const auto* p : mine)
    if (!p->dropped && outcomes[job_of[p->index]].state == sim::PointState::failed)
      std::cout << fmt::format("  failed {} ({}): {}\n", p->id, p->label, outcomes[job_of[p->index]].error);
  std::vector<sim::StudyPoint> mine_points;
  for (const auto* p : mine)
    mine_points.push_back(*p);
  print_dropped(std::cout, mine_points);
  std::cout << "wrote";
  for (const auto& f : outputs.written)
    std::cout << ' ' << f.string();
  std::cout << '\n';
  if (shard)
    std::cout << "combine the shards with: trainsim merge <the shard directories> --out DIR\n";
  for (const auto& n : outputs.plot_notes)
    std::cerr << fmt::format("note: {}: {}\n", options.study, n);
  for (const auto& e : outputs.plot_errors)
    std::cerr << fmt::format("error: {}: {}\n", options.study, e);
  if (!outputs.plot_errors.empty())
    status = std::max(status, 1);
  return status;
}

}  // namespace trainsim::cli
