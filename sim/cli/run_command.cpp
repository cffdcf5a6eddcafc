#include "sim/cli/run_command.hpp"

#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <new>
#include <optional>

#include <nlohmann/json.hpp>

#include "analysis/repeated_runs.hpp"
#include "analysis/reporters/run_archive.hpp"
#include "analysis/reporters/run_folder.hpp"
#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "platforms/interruption.hpp"
#include "platforms/units.hpp"
#include "sim/cli/balance_run.hpp"
#include "sim/cli/replay_progress.hpp"
#include "sim/cli/report_command.hpp"
#include "sim/replay/simulation.hpp"
#include "sim/scenario/memory_check.hpp"
#include "sim/scenario/run_size.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

CLI::App* add_run_command(CLI::App& app, RunOptions& options) {
  auto* cmd = app.add_subcommand("run", "Simulate one training iteration of a scenario");
  cmd->add_option("scenario", options.scenario, "scenario::Scenario YAML file")->required();
  cmd->add_option("-o,--out", options.out_dir,
                  "Directory for the outputs (summary.json, CSV tables, trace.json, SVG plots, run.trainsim; "
                  "default: runs/<scenario name>)");
  cmd->add_option(
      "-s,--set", options.overrides,
      "Override a scenario value, KEY=VALUE with a dotted key (repeatable), e.g. --set plan.pp=4");
  cmd->add_flag("--html", options.html, "Also write report.html, one self-contained page");
  cmd->add_flag("-q,--quiet", options.quiet, "Do not print the summary table");
  cmd->add_flag(
      "--allow-oom", options.allow_oom,
      "Simulate even when the plan does not fit in GPU memory (the summary still reports the peak)");
  cmd->add_option("--iterations", options.iterations,
                  "Replay N consecutive iterations (stragglers differ per iteration); summary.json gets an "
                  "`iterations` block (the reports describe the first iteration)")
      ->check(CLI::Range(1, 100000));
  cmd->add_option("--seeds", options.seeds,
                  "Repeat with K seeds (scenario seed .. seed+K-1; one process each with random stragglers, "
                  "otherwise one replay and K failure runs) and report the mean iteration time (and "
                  "goodput) with its 95% confidence interval")
      ->check(CLI::Range(1, 10000));
  cmd->add_option(
      "--max-memory", options.max_memory,
      "Refuse a run whose estimated memory exceeds SIZE (e.g. 8GiB; default: the memory available "
      "on this machine)");
  cmd->add_option("--balance", options.balance,
                  "auto: search the layers per pipeline stage (and micro-batches per DP replica on mixed "
                  "clusters) that equalise stage times on the cluster's GPUs, simulate it and the even split "
                  "(into OUT/even/), and report the gain; off (default): the scenario as written")
      ->check(CLI::IsMember({"auto", "off"}));
  add_trace_option(*cmd, options.trace);
  auto* fold = cmd->add_flag(
      "--fold", options.fold,
      "Replay one data-parallel replica per class of identical ones and expand the "
      "outputs to every GPU, where a rotation of the replicas is a symmetry of the "
      "run (the default from 4,096 GPUs on; docs/performance.md, \"The fold\", says where it was "
      "checked exact and the bound where not)");
  cmd->add_flag("--no-fold", options.no_fold,
                "Replay every replica (the full replay; the default below 4,096 GPUs)")
      ->excludes(fold);
  cmd->add_flag("--progress", options.progress,
                "Show the progress line on stderr even when it is not a terminal (one line every 10 s)");
  cmd->add_option("--chakra", options.chakra,
                  "Replay a Chakra execution trace (a folder of <name>.<rank>.et files, their prefix, or one "
                  ".et file) on the scenario's cluster: the scenario's workload.chakra, for a scenario "
                  "without model and plan");
  return cmd;
}

namespace {

// Runs one seed in a child process (SimGrid allows one engine per process)
// and reads back its iteration times and goodput. A signal stops the child
// with the parent (platforms/interruption.hpp).
analysis::SeedOutcome run_seed_in_child(scenario::Scenario scenario, std::uint64_t seed, int iterations) {
  int fds[2];
  if (pipe(fds) != 0)
    throw std::runtime_error("cannot create a pipe for a seed run");
  const pid_t pid = platforms::fork_stoppable_child();
  if (pid < 0)
    throw std::runtime_error("cannot fork a seed run");
  if (pid == 0) {
    close(fds[0]);
    int status = 0;
    std::string text;
    try {
      scenario.reseed(seed);
      const auto result =
          sim::simulate(scenario, {.iterations = iterations, .more_failure_seeds = {}, .observer = {}});
      nlohmann::ordered_json j = {{"times", result.iteration_times_s}};
      if (result.failures)
        j["failures"] = analysis::to_json(*result.failures);
      text = j.dump();
    } catch (const std::bad_alloc&) {
      text = "out of memory";
      status = 2;
    } catch (const std::exception& e) {
      text = std::string("error ") + e.what();
      status = 2;
    }
    for (std::size_t done = 0; done < text.size();) {
      const auto n = write(fds[1], text.data() + done, text.size() - done);
      if (n <= 0)
        break;
      done += static_cast<std::size_t>(n);
    }
    close(fds[1]);
    _exit(status);
  }
  close(fds[1]);
  std::string text;
  char buffer[4096];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<std::size_t>(n));
  close(fds[0]);
  int status = 0;
  platforms::wait_for_stoppable_child(pid, status);
  if (text == "out of memory")
    throw std::bad_alloc();  // run_command says so with its estimate
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || text.rfind("error", 0) == 0)
    throw std::runtime_error(fmt::format("the run with seed {} failed: {}", seed, text));
  // The child's figures, as it wrote them above.
  const auto j = nlohmann::json::parse(text);
  analysis::SeedOutcome r{.seed = seed, .iteration_times_s = j.at("times").get<std::vector<double>>()};
  if (j.contains("failures"))
    r.failures = analysis::job_failure_outcome_from_json(j.at("failures"));
  return r;
}

}  // namespace

void print_scenario_warnings(const scenario::Scenario& scenario, bool allow_oom) {
  for (const auto& note : scenario.notes)
    std::cerr << "note: " << note << '\n';
  if (allow_oom)
    for (const auto& problem : scenario::memory_problems(scenario))
      std::cerr << "warning: " << scenario.file << ": plan: " << problem
                << "; simulating it anyway (--allow-oom)\n";
}

namespace {
int fold_from_gpus(const RunOptions& options) {
  return sim::fold_from_gpus(sim::fold_mode(options.fold, options.no_fold));
}
}  // namespace

scenario::LoadOptions run_load_options(const RunOptions& options) {
  scenario::LoadOptions load = scenario::with_size_guard({.check_memory = !options.allow_oom,
                                                          .iterations = options.iterations * options.seeds,
                                                          .fold_from_gpus = fold_from_gpus(options)});
  load.memory_limit_from += " (--max-memory sets another limit)";
  if (!options.max_memory.empty()) {
    try {
      load.max_run_memory_bytes = units::parse_bytes(options.max_memory);
    } catch (const units::UnitError& e) {
      throw platforms::InputError({fmt::format("--max-memory {}: {}", options.max_memory, e.what())});
    }
    load.memory_limit_from = "--max-memory " + options.max_memory;
  }
  return load;
}

scenario::RunSize note_long_run(const scenario::Scenario& scenario, const RunOptions& options,
                                const scenario::RunSize* guarded) {
  const auto size = guarded ? *guarded
                            : scenario::estimate_run_size(scenario, options.iterations * options.seeds,
                                                          fold_from_gpus(options));
  if (size.replay_s > scenario::kLongRun_s)
    std::cerr << fmt::format("note: {}: a long run: {} (estimate)\n", scenario.file,
                             scenario::describe(size));
  return size;
}

namespace {
int run_scenario(const RunOptions& given, std::optional<scenario::RunSize>& estimate);
}  // namespace

int run_command(const RunOptions& given) {
  // An allocation that fails is the limits of this process or machine, not
  // a bug: exit status 1, with the estimate when it was made.
  std::optional<scenario::RunSize> estimate;
  try {
    return run_scenario(given, estimate);
  } catch (const std::bad_alloc&) {
    throw platforms::InputError(
        {scenario::out_of_memory_message("the run", estimate ? &*estimate : nullptr)});
  }
}

namespace {
int run_scenario(const RunOptions& given, std::optional<scenario::RunSize>& estimate) {
  RunOptions options = given;
  if (!options.chakra.empty()) {
    // A YAML single-quoted scalar: the path as written, from here.
    std::string path = fs::absolute(options.chakra).lexically_normal().string(), quoted = "'";
    for (char c : path)
      quoted += c == '\'' ? std::string("''") : std::string(1, c);
    options.overrides.push_back("workload.chakra=" + quoted + "'");
  }
  if (options.balance == "auto")
    return run_balanced(options);
  scenario::RunSize guarded;
  scenario::LoadOptions load = run_load_options(options);
  load.estimate = &guarded;
  const scenario::Scenario scenario = scenario::load_scenario(options.scenario, options.overrides, load);
  estimate = note_long_run(scenario, options, load.max_run_memory_bytes > 0 ? &guarded : nullptr);
  print_scenario_warnings(scenario, options.allow_oom);
  const fs::path out_dir =
      options.out_dir.empty() ? fs::path("runs") / scenario.name : fs::path(options.out_dir);
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec)
    throw platforms::InputError(
        {fmt::format("{}: cannot create the output directory: {}", out_dir.string(), ec.message())});

  const std::string scenario_text =
      platforms::read_input_file(options.scenario, "scenario file", platforms::kMaxYamlInputBytes);
  // When the replay depends on the seed (random stragglers, or MoE routing
  // drawn with the scenario's seed), the other seeds run first, in child
  // processes, before this process starts its own SimGrid engine. Otherwise
  // one replay serves every seed: only the job-level failure run differs,
  // and it runs once per seed after the replay (a 16,384-GPU iteration is
  // replayed once, not K times).
  const bool one_replay =
      !scenario.perturbations.replay_depends_on_seed() && !scenario.graph_depends_on_seed();
  sim::SimulationOptions simulation_options{.fold = sim::fold_mode(options.fold, options.no_fold),
                                            .iterations = options.iterations,
                                            .more_failure_seeds = {},
                                            .observer = {}};
  std::vector<analysis::SeedOutcome> seeds;
  for (int k = 1; k < options.seeds; ++k) {
    const std::uint64_t seed = scenario.seed + static_cast<std::uint64_t>(k);
    if (one_replay)
      simulation_options.more_failure_seeds.push_back(seed);
    else
      seeds.push_back(run_seed_in_child(scenario, seed, options.iterations));
  }
  // The progress line's ticker starts after the seed children are forked.
  sim::ProgressLine line(std::cerr, sim::progress_wanted(options.progress), sim::stderr_is_terminal());
  simulation_options.observer = observe_replay(line, "--set cluster.collectives.fidelity=fast");
  line.update("building the task graph");
  line.start_ticker();
  const sim::SimulationResult result = sim::simulate(scenario, simulation_options);
  // The line stays up while the outputs are written, unless the summary is
  // printed then (it would land on the line).
  if (options.quiet)
    line.update("writing the outputs");
  else
    line.close();
  if (options.seeds > 1)
    seeds.insert(seeds.begin(), {scenario.seed, result.iteration_times_s, result.failures});
  const auto& more_seeds = simulation_options.more_failure_seeds;
  for (std::size_t i = 0; i < more_seeds.size(); ++i)
    seeds.push_back({more_seeds[i], result.iteration_times_s,
                     result.failures ? std::optional(result.more_failures[i]) : std::nullopt});
  // Only a run of more than one iteration or seed, or with perturbations,
  // has these blocks.
  std::optional<analysis::RepeatedRuns> repeats;
  if (options.iterations > 1 || options.seeds > 1 || !scenario.perturbations.empty()) {
    repeats = analysis::RepeatedRuns{.seed = scenario.seed,
                                     .iteration_times_s = result.iteration_times_s,
                                     .perturbations = std::nullopt,
                                     .failures = result.failures,
                                     .seeds = std::move(seeds),
                                     .graph_depends_on_seed = scenario.graph_depends_on_seed()};
    const auto& p = scenario.perturbations;
    if (!p.empty())
      repeats->perturbations = analysis::PerturbationOutcome{.slow_gpu_rules = p.slow_gpus.size(),
                                                             .throttling_rules = p.throttling.size(),
                                                             .stragglers = p.stragglers.enabled,
                                                             .link_faults = p.links.size(),
                                                             .stats = result.perturbations};
  }
  const analysis::RunMetadata archive{.trainsim_version = {},
                                      .scenario_file = scenario.file,
                                      .overrides = options.overrides,
                                      .scenario_yaml = scenario_text,
                                      .balance = std::nullopt,
                                      .repeats = repeats};
  // The earlier run's outputs stay complete until this one starts writing.
  analysis::RunFolder folder(out_dir);
  write_run(folder,
            {.scenario = scenario,
             .graph = result.graph,
             .timeline = result.timeline,
             .summary = &result.summary,
             .computed = {.memory = &result.memory_curves,
                          .activity = &result.gpu_activity,
                          .nccl_waits = &result.nccl_waits},
             .repeats = repeats,
             .archive = &archive,
             .trace = trace_detail(options.trace)},
            options.html, options.quiet);
  line.close();
  return 0;
}
}  // namespace

}  // namespace trainsim::cli
