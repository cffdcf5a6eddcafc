#include "sim/cli/balance_run.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <new>

#include "analysis/balance_outcome.hpp"
#include "analysis/reporters/run_archive.hpp"
#include "analysis/reporters/run_folder.hpp"
#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "platforms/interruption.hpp"
#include "platforms/problem_list.hpp"
#include "sim/cli/report_command.hpp"
#include "sim/cli/run_command.hpp"
#include "sim/replay/simulation.hpp"
#include "sim/scenario/checks.hpp"
#include "sim/scenario/cost_model_choice.hpp"
#include "sim/scenario/memory_check.hpp"
#include "sim/scenario/run_size.hpp"
#include "sim/scenario/scenario.hpp"
#include "workloads/planning/stage_balance.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

namespace {

constexpr const char* kEvenDir = "even";

std::string list_text(const std::vector<int>& values) {
  return fmt::format("[{}]", fmt::join(values, ","));
}

// The balanced scenario: the user's overrides plus the partition found
// (only the keys that differ from the even split, so a tie is the user's
// own scenario).
std::vector<std::string> balanced_overrides(const RunOptions& options,
                                            const workloads::BalanceResult& found) {
  std::vector<std::string> overrides = options.overrides;
  if (found.balanced.stage_layers != found.even.stage_layers)
    overrides.push_back("plan.stage_layers=" + list_text(found.balanced.stage_layers));
  if (found.balanced.dp_micro_batches != found.even.dp_micro_batches)
    overrides.push_back("plan.dp_micro_batches=" + list_text(found.balanced.dp_micro_batches));
  return overrides;
}

// The balanced scenario built in code from the even one, checked by the
// loader's typed rules (sim/scenario/checks.hpp); the overrides above are
// what the saved run records, so that `trainsim report` rebuilds it.
scenario::Scenario balanced_scenario(const scenario::Scenario& even, const workloads::BalanceResult& found) {
  scenario::Scenario balanced = even;
  if (found.balanced.stage_layers != found.even.stage_layers)
    balanced.plan.stage_layers = found.balanced.stage_layers;
  if (found.balanced.dp_micro_batches != found.even.dp_micro_batches)
    balanced.plan.dp_micro_batches = found.balanced.dp_micro_batches;
  if (const auto problems = scenario::check(balanced); !problems.empty()) {
    std::vector<std::string> text;
    for (const auto& p : problems)
      text.push_back(fmt::format("{}: balanced split: {}: {}", even.file, p.key, p.message));
    throw platforms::InputError(text);
  }
  return balanced;
}

// The even split, simulated in a child process (one SimGrid engine per
// process) while the parent simulates the balanced one. The child writes its
// outputs into `dir` and its iteration time into the pipe.
struct EvenChild {
  pid_t pid = -1;
  int fd = -1;
};

EvenChild start_even_run(const scenario::Scenario& even, const RunOptions& options,
                         const std::string& scenario_text, const fs::path& dir) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw std::runtime_error(fmt::format("pipe failed: {}", std::strerror(errno)));
  std::cout.flush();
  std::cerr.flush();
  // Stopped with the parent on a signal; its own temporary files are its own.
  const pid_t pid = platforms::fork_stoppable_child();
  if (pid < 0)
    throw std::runtime_error(fmt::format("fork failed: {}", std::strerror(errno)));
  if (pid == 0) {
    ::close(fds[0]);
    int status = 0;
    try {
      const sim::SimulationResult result = sim::simulate(even);
      analysis::RunFolder folder(dir);
      const analysis::RunMetadata archive{.trainsim_version = {},
                                          .scenario_file = even.file,
                                          .overrides = options.overrides,
                                          .scenario_yaml = scenario_text,
                                          .balance = std::nullopt,
                                          .repeats = std::nullopt};
      write_run(folder,
                {.scenario = even,
                 .graph = result.graph,
                 .timeline = result.timeline,
                 .summary = &result.summary,
                 .archive = &archive,
                 .trace = trace_detail(options.trace)},
                options.html, true);
      const double t = result.summary.iteration_time_s;
      if (::write(fds[1], &t, sizeof t) != static_cast<ssize_t>(sizeof t))
        status = 2;
    } catch (const platforms::InputError& e) {
      for (const auto& problem : platforms::printed_problems(e))
        std::cerr << "error: even split: " << problem << '\n';
      status = 1;
    } catch (const std::bad_alloc&) {
      std::cerr << "error: even split: " << scenario::out_of_memory_message("the run", nullptr) << '\n';
      status = 1;
    } catch (const std::exception& e) {
      std::cerr << "internal error: even split: " << e.what() << '\n';
      status = 2;
    }
    std::cerr.flush();
    ::_exit(status);
  }
  ::close(fds[1]);
  return {pid, fds[0]};
}

double finish_even_run(const EvenChild& child) {
  double t = 0;
  const auto got = ::read(child.fd, &t, sizeof t);
  ::close(child.fd);
  int status = 0;
  if (platforms::wait_for_stoppable_child(child.pid, status) < 0)
    throw std::runtime_error(fmt::format("waitpid failed: {}", std::strerror(errno)));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || got != static_cast<ssize_t>(sizeof t)) {
    if (WIFEXITED(status) && WEXITSTATUS(status) == 1)
      throw platforms::InputError({"the even split could not be simulated (see above)"});
    throw std::runtime_error("the even split's simulation failed (see above)");
  }
  return t;
}

}  // namespace

int run_balanced(const RunOptions& options) {
  const scenario::LoadOptions load = run_load_options(options);
  const scenario::Scenario even = scenario::load_scenario(options.scenario, options.overrides, load);
  if (even.workload)
    throw platforms::InputError({fmt::format(
        "{}: workload: --balance auto balances a model's layers over pipeline stages, and a replayed trace "
        "brings its own partition; expected a scenario with model and plan (or run without --balance)",
        even.file)});
  if (even.layer_split.given())
    throw platforms::InputError({fmt::format(
        "{}: plan: a partition asked for (first_stage_layers / last_stage_layers, embedding_in_split / "
        "loss_in_split or pipeline_layout) with --balance auto, which searches the layer partition itself "
        "(it may leave the first and last virtual stages with the embedding or the loss alone); expected "
        "those keys left out, with layers that pp x virtual_stages divides (or run without --balance)",
        even.file)});
  if (even.plan.schedule == workloads::ScheduleKind::dualpipe)
    throw platforms::InputError({fmt::format(
        "{}: plan.schedule: dualpipe with --balance auto, whose search moves layers between the virtual "
        "stages of one pipeline, while DualPipe's two directions hold the same stages twice; expected "
        "schedule dualpipe_v (or run without --balance)",
        even.file)});
  if (!even.plan.stage_layers.empty() || !even.plan.dp_micro_batches.empty())
    throw platforms::InputError({fmt::format(
        "{}: plan.{}: given with --balance auto, which searches the layer partition and the DP micro-batch "
        "shares itself and compares them with the even split; expected the key left out (or run without "
        "--balance)",
        even.file, even.plan.stage_layers.empty() ? "dp_micro_batches" : "stage_layers")});
  print_scenario_warnings(even, options.allow_oom);

  // Search, then cap the stages that do not fit in memory and search again.
  const auto cost = scenario::make_cost_model(even);
  const int stages = even.plan.pp * even.plan.virtual_stages;
  std::vector<int> caps(static_cast<std::size_t>(stages), even.model.layers);
  std::vector<int> capped;
  workloads::BalanceResult found;
  std::vector<std::string> overrides;
  scenario::Scenario balanced;
  const workloads::PipelineSchedule layout{.ranks = even.plan.pp,
                                           .micro_batches = 1,
                                           .chunks = even.plan.virtual_stages,
                                           .placement = workloads::placement_of(even.plan.schedule),
                                           .per_rank = {},
                                           .evictions = {}};
  for (int attempt = 0;; ++attempt) {
    found = workloads::balance_stages(even.model, even.plan, even.cluster, *cost, caps);
    overrides = balanced_overrides(options, found);
    balanced = balanced_scenario(even, found);
    if (options.allow_oom)
      break;
    const std::vector<int> ranks = scenario::ranks_out_of_memory(balanced);
    if (ranks.empty())
      break;
    bool tightened = false;
    for (int rank : ranks)
      for (int chunk = 0; chunk < even.plan.virtual_stages; ++chunk) {
        const int vs = layout.virtual_stage(rank, chunk);
        const int layers = found.balanced.stage_layers[static_cast<std::size_t>(vs)];
        if (layers > 1 && caps[static_cast<std::size_t>(vs)] >= layers) {
          caps[static_cast<std::size_t>(vs)] = layers - 1;
          tightened = true;
          if (std::find(capped.begin(), capped.end(), vs) == capped.end())
            capped.push_back(vs);
        }
      }
    if (!tightened || attempt > even.model.layers * stages) {
      // Nothing left to cap: keep the even split, which fits (the loader
      // checked it).
      found.balanced = found.even;
      overrides = options.overrides;
      balanced = even;
      break;
    }
  }
  std::sort(capped.begin(), capped.end());

  const fs::path out_dir = options.out_dir.empty() ? fs::path("runs") / even.name : fs::path(options.out_dir);
  // Unfinished from here: the even split's folder inside it is rewritten first.
  analysis::RunFolder folder(out_dir);
  const std::string scenario_text =
      platforms::read_input_file(options.scenario, "scenario file", platforms::kMaxYamlInputBytes);

  const EvenChild child = start_even_run(even, options, scenario_text, out_dir / kEvenDir);
  sim::SimulationResult result;
  try {
    result = sim::simulate(balanced);
  } catch (...) {
    ::kill(child.pid, SIGTERM);
    int status = 0;
    platforms::wait_for_stoppable_child(child.pid, status);
    throw;
  }
  const double even_time_s = finish_even_run(child);

  analysis::BalanceOutcome outcome{
      .even = {.stage_layers = found.even.stage_layers,
               .dp_micro_batches = found.even.dp_micro_batches,
               .estimated_iteration_time_s = found.even.estimated_iteration_s,
               .iteration_time_s = even_time_s},
      .balanced = {.stage_layers = found.balanced.stage_layers,
                   .dp_micro_batches = found.balanced.dp_micro_batches,
                   .estimated_iteration_time_s = found.balanced.estimated_iteration_s,
                   .iteration_time_s = result.summary.iteration_time_s},
      .searched_dp_shares = found.searched_dp_shares,
      .memory_capped_stages = capped,
      .even_run_dir = kEvenDir};
  const analysis::RunMetadata archive{.trainsim_version = {},
                                      .scenario_file = balanced.file,
                                      .overrides = overrides,
                                      .scenario_yaml = scenario_text,
                                      .balance = outcome,
                                      .repeats = std::nullopt};
  write_run(folder,
            {.scenario = balanced,
             .graph = result.graph,
             .timeline = result.timeline,
             .summary = &result.summary,
             .balance = &outcome,
             .archive = &archive,
             .kept_folders = {kEvenDir},
             .trace = trace_detail(options.trace)},
            options.html, options.quiet);
  return 0;
}

}  // namespace trainsim::cli
