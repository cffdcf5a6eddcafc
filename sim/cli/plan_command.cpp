#include "sim/cli/plan_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "analysis/reporters/atomic_file.hpp"
#include "analysis/studies/plan_report.hpp"
#include "platforms/input_error.hpp"
#include "platforms/interruption.hpp"
#include "platforms/names.hpp"
#include "platforms/presets.hpp"
#include "sim/study/plan_search.hpp"
#include "sim/study/point_runner.hpp"
#include "sim/study/progress.hpp"
#include "workloads/model_spec.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;

CLI::App* add_plan_command(CLI::App& app, PlanOptions& options) {
  auto* cmd = app.add_subcommand(
      "plan", "Search the parallel plans of a model on N GPUs: prune, estimate, simulate the best K, rank");
  cmd->add_option("-m,--model", options.model,
                  "Model preset (" + workloads::model_preset_names_for_message() +
                      ") or a YAML file whose `model` section is used");
  cmd->add_option("-c,--cluster", options.cluster,
                  "Cluster preset (" + platforms::cluster_preset_names() +
                      ") or a YAML file whose `cluster` section is used");
  cmd->add_option("--scenario", options.scenario,
                  "Base scenario: its model and cluster unless --model / --cluster, and its other plan keys "
                  "(context_parallel, overlap_grad_reduce, ...) for every plan");
  cmd->add_option("-g,--gpus", options.gpus, "GPU count (whole nodes of the cluster)")
      ->required()
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("-b,--global-batch", options.global_batch,
                  "Global batch in sequences (default: the base scenario's plan.global_batch_size)")
      ->check(CLI::Range(1, 1 << 30));
  cmd->add_option("--seq-len", options.seq_len, "Sequence length (default: the model's)")
      ->check(CLI::Range(1, 1 << 24));
  cmd->add_option("-k,--top", options.top,
                  "Plans to simulate, the best by estimate (default 8; 0: none, the estimate's ranking only)")
      ->check(CLI::Range(0, 100000));
  cmd->add_option("-j,--jobs", options.jobs, "Worker processes (default: one per processor)")
      ->check(CLI::Range(1, 4096));
  cmd->add_option("-o,--out", options.out_dir,
                  "Directory for plans.csv, plans.json and points/ (default: runs/plan-<model>-<gpus>)");
  cmd->add_option("-s,--set", options.overrides,
                  "Override a base value, KEY=VALUE with a dotted key (repeatable); on a searched plan key "
                  "(plan.tp, plan.schedule, ...) it fixes that axis: --set plan.zero_stage=[0,1]");
  cmd->add_option("--format", options.format, "table (default) or csv (the ranked table only, on stdout)")
      ->check(CLI::IsMember({"table", "csv"}));
  cmd->add_option("--fidelity", options.fidelity,
                  "cluster.collectives.fidelity of the simulations: fast (default), detailed, or cluster "
                  "(the cluster's own setting)")
      ->check(CLI::IsMember({"fast", "detailed", "cluster"}));
  cmd->add_option("--keep", options.keep, "Outputs kept per simulated plan: summary (default) or all")
      ->check(CLI::IsMember({"all", "summary"}));
  // The simulated plans are `trainsim run`s: they fold from 4,096 GPUs on
  // (docs/performance.md, "The fold"), which a search at that size needs.
  auto* fold = cmd->add_flag("--fold", options.fold,
                             "Simulate every plan folded where the fold applies (the default from "
                             "4,096 GPUs on, as trainsim run)");
  cmd->add_flag("--no-fold", options.no_fold, "Simulate every plan with the full replay")->excludes(fold);
  cmd->add_flag("-q,--quiet", options.quiet, "No progress display");
  cmd->add_flag("--progress", options.progress,
                "Show the progress line on stderr even when it is not a terminal (one line every 10 s)");
  return cmd;
}

namespace {

// A MoE model's plans say their expert parallelism; a dense model's keep
// their keys.
nlohmann::ordered_json plan_json(const workloads::ParallelPlan& p, bool moe) {
  nlohmann::ordered_json j = {{"tp", p.tp},
                              {"pp", p.pp},
                              {"dp", p.dp},
                              {"context_parallel", p.cp},
                              {"virtual_stages", p.virtual_stages},
                              {"micro_batch_size", p.micro_batch_size},
                              {"global_batch_size", p.global_batch_size},
                              {"schedule", std::string(to_string(p.schedule))},
                              {"recompute", std::string(to_string(p.recompute))},
                              {"zero_stage", p.zero_stage},
                              {"sequence_parallel", p.sequence_parallel}};
  if (moe)
    j["expert_parallel"] = p.ep;
  if (p.expert_tp_folded())
    j["expert_tensor_parallel"] = p.expert_tp();
  if (p.hybrid_sharded())
    j["dp_shard"] = p.dp_shard;
  if (!p.stage_layers.empty())  // an uneven split: the layers of every virtual stage
    j["stage_layers"] = p.stage_layers;
  return j;
}

double figure(const nlohmann::ordered_json& summary, const char* key) {
  const auto it = summary.find(key);
  return it != summary.end() && it->is_number() ? it->get<double>() : 0.0;
}

}  // namespace

int plan_command(const PlanOptions& options) {
  sim::PlanSearchRequest request;
  request.model = options.model;
  request.cluster = options.cluster;
  request.scenario = options.scenario;
  request.gpus = options.gpus;
  request.global_batch_size = options.global_batch;
  request.seq_len = options.seq_len;
  request.overrides = options.overrides;
  request.fidelity = options.fidelity == "cluster" ? std::string() : options.fidelity;
  // Checking every plan with the loader and its memory model takes seconds
  // on a few hundred GPUs: a progress line while it runs (no ticker: the
  // simulations below fork).
  sim::ProgressLine line(std::cerr, !options.quiet && sim::progress_wanted(options.progress),
                         sim::stderr_is_terminal());
  request.on_progress = [&line](std::size_t checked, std::size_t total) {
    if (checked % 64 != 0)
      return;
    std::string text = fmt::format("checking and estimating plans: {}/{}", checked, total);
    if (checked > 0)
      text +=
          fmt::format(", ~{} left", sim::format_time_left(line.elapsed_s() / static_cast<double>(checked) *
                                                          static_cast<double>(total - checked)));
    line.update(text);
  };
  const sim::PlanSearch search = sim::prepare_plan_search(request);
  line.close();
  const auto& base = search.base;
  const int batch = search.ranked.empty() ? 0 : search.ranked.front().plan.global_batch_size;

  // Pruning, on stderr for csv (stdout holds the table alone).
  std::ostream& info = options.format == "csv" ? std::cerr : std::cout;
  const auto& group = base.cluster.groups.front();
  info << fmt::format("# trainsim plan: {} (seq {}) on {} x {} ({}), global batch {}\n", base.model.name,
                      base.model.seq_len, options.gpus, group.gpu.name, search.cluster_source,
                      batch > 0 ? batch : options.global_batch);
  std::size_t pruned_total = 0;
  for (auto n : search.pruned)
    pruned_total += n;
  info << fmt::format("# {} plans enumerated, {} pruned, {} feasible:\n", search.enumerated, pruned_total,
                      search.ranked.size());
  for (std::size_t r = 0; r < workloads::kPruneReasonCount; ++r)
    if (search.pruned[r] > 0)
      info << fmt::format("#   {:>7} {}\n", search.pruned[r],
                          describe(static_cast<workloads::PruneReason>(r)));
  if (search.ranked.empty()) {
    std::vector<std::string> problems{fmt::format("no plan of {} on {} GPUs at global batch {} is feasible",
                                                  base.model.name, options.gpus, options.global_batch)};
    if (!search.memory_pruned.empty())
      problems.push_back(fmt::format("for example {}: {}", search.memory_pruned.front().label,
                                     search.memory_pruned.front().message));
    for (const auto& e : search.invalid_examples)
      problems.push_back("for example: " + e);
    if (search.enumerated == 0)
      problems.push_back(
          "the search has no plan to try: tp must divide the GPUs per node and the GPU count, and pp the "
          "GPUs "
          "left (check the values fixed with --set)");
    problems.push_back("expected more GPUs, a smaller global batch or model, or fewer restrictions (--set)");
    throw platforms::InputError(problems);
  }

  const std::size_t top = std::min<std::size_t>(static_cast<std::size_t>(options.top), search.ranked.size());
  const fs::path out_dir =
      options.out_dir.empty()
          ? fs::path("runs") /
                platforms::name_from_text(fmt::format("plan-{}-{}", base.model.name, options.gpus), "plan")
          : fs::path(options.out_dir);
  std::error_code ec;
  fs::create_directories(out_dir / "points", ec);
  if (ec)
    throw platforms::InputError(
        {fmt::format("{}: cannot create the output directory: {}", out_dir.string(), ec.message())});

  std::vector<sim::PointJob> jobs;
  for (std::size_t i = 0; i < top; ++i)
    jobs.push_back(sim::PointJob{search.ranked[i].key, search.ranked[i].label,
                                 sim::scenario_yaml(search, search.ranked[i])});
  sim::RunnerOptions runner;
  runner.root = out_dir / "points";
  runner.jobs =
      options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  runner.keep = options.keep == "all" ? sim::KeepOutputs::all : sim::KeepOutputs::summary;
  runner.trainsim_exe = sim::current_executable();
  if (options.fold)
    runner.run_arguments.emplace_back("--fold");
  if (options.no_fold)
    runner.run_arguments.emplace_back("--no-fold");
  runner.progress = options.quiet ? sim::ProgressStyle::none : sim::default_progress_style();
  if (top == 0)
    info << fmt::format("# no plan simulated (--top 0); outputs in {}\n", out_dir.string());
  else
    info << fmt::format(
        "# simulating the best {} by estimate (collectives fidelity {}), {} worker{}; outputs in {}\n", top,
        search.fidelity.empty() ? std::string("as the cluster says") : search.fidelity, runner.jobs,
        runner.jobs == 1 ? "" : "s", out_dir.string());
  std::vector<sim::PointOutcome> outcomes;
  try {
    if (!jobs.empty())
      outcomes = sim::run_points(jobs, runner, std::cerr);
  } catch (const sim::Interrupted& e) {
    std::cerr << platforms::interruption_message(
        e.signal(), fmt::format("{} of {} plans finished and are kept in {}; run the same command again to "
                                "resume (plans.csv and plans.json are not updated)",
                                e.finished(), e.total(), runner.root.string()));
    return 128 + e.signal();
  }
  platforms::set_interruption_note(
      fmt::format("every plan finished and is kept in {}; plans.csv and plans.json are not all written: run "
                  "the same command again (it reuses the plans)",
                  runner.root.string()));
  const auto reused = static_cast<std::size_t>(std::count_if(
      outcomes.begin(), outcomes.end(), [](const auto& o) { return o.state == sim::PointState::reused; }));
  if (reused > 0)
    info << fmt::format("# {} of the {} reused from an earlier search in {} (their scenario is unchanged)\n",
                        reused, top, out_dir.string());

  analysis::PlanReport report;
  report.search = {{"model", base.model.name},
                   {"model_source", search.model_source},
                   {"cluster", base.cluster.name},
                   {"cluster_source", search.cluster_source},
                   {"gpu", group.gpu.name},
                   {"gpus", options.gpus},
                   {"global_batch_size", batch},
                   {"seq_len", base.model.seq_len},
                   {"top", top},
                   {"fidelity", search.fidelity.empty() ? std::string("cluster") : search.fidelity}};
  report.enumerated = search.enumerated;
  report.expert_columns = base.model.is_moe();
  for (std::size_t r = 0; r < workloads::kPruneReasonCount; ++r)
    report.pruned.emplace_back(std::string(to_string(static_cast<workloads::PruneReason>(r))),
                               search.pruned[r]);
  int status = 0;
  for (std::size_t i = 0; i < search.ranked.size(); ++i) {
    const auto& c = search.ranked[i];
    analysis::PlanRow row;
    row.key = c.key;
    row.label = c.label;
    row.plan = plan_json(c.plan, base.model.is_moe());
    row.estimate_rank = static_cast<int>(i + 1);
    row.estimate_s = c.estimate.iteration_s;
    row.estimate_bubble_s = c.estimate.bubble_s;
    row.estimate_tp_comm_s = c.estimate.tp_comm_s;
    row.estimate_pp_comm_s = c.estimate.pp_comm_s;
    row.estimate_ep_comm_s = c.estimate.ep_comm_s;
    row.estimate_dp_exposed_s = c.estimate.dp_exposed_s;
    row.estimate_compute_s = c.estimate.compute_s;
    if (i < top) {
      row.selected = true;
      row.folder = (fs::path("points") / c.key).string();
      const auto& outcome = outcomes[i];
      if (outcome.state == sim::PointState::failed) {
        row.failure =
            outcome.error.empty() ? fmt::format("exit status {}", outcome.exit_status) : outcome.error;
        status = std::max(status, outcome.exit_status == 1 ? 1 : 2);
      } else {
        const auto& s = outcome.summary;
        row.simulated = analysis::SimulatedPlan{
            figure(s, "iteration_time_s"),  figure(s, "tokens_per_s"),    figure(s, "mfu"),
            figure(s, "peak_memory_bytes"), figure(s, "bubble_fraction"), figure(s, "exposed_comm_fraction"),
            figure(s, "compute_fraction")};
        // The replay's verdict on memory, against the HBM of the GPU that
        // peaked: the static estimate admitted the plan, the replay may not.
        if (const auto fits = s.find("fits_in_memory");
            fits != s.end() && fits->is_boolean() && !fits->get<bool>()) {
          row.simulated->fits_in_memory = false;
          const int gpu = static_cast<int>(figure(s, "peak_memory_gpu"));
          row.simulated->memory_capacity_bytes =
              gpu >= 0 && gpu < base.cluster.gpu_count() ? base.cluster.gpu_of(gpu).hbm_bytes : 0.0;
        }
      }
    }
    report.rows.push_back(std::move(row));
  }
  for (const auto& m : search.memory_pruned)
    report.memory_pruned.push_back({{"key", m.key}, {"plan", m.label}, {"reason", m.message}});

  std::ostringstream csv, json;
  analysis::write_plans_csv(csv, report);
  analysis::write_plans_json(json, report);
  analysis::write_file_atomically(out_dir / "plans.csv", [&](std::ostream& o) { o << csv.str(); });
  analysis::write_file_atomically(out_dir / "plans.json", [&](std::ostream& o) { o << json.str(); });
  platforms::set_interruption_note(
      fmt::format("the search is complete in {} (plans.csv, plans.json)", out_dir.string()));

  if (options.format == "csv") {
    analysis::write_plan_table_csv(std::cout, report);
    return status;
  }
  if (top == 0) {
    // --top 0: a search too large to simulate (thousands of GPUs) still
    // says what the estimate prefers, with its terms.
    const double tokens = double(batch) * base.model.seq_len;
    std::cout << fmt::format("\n{:>4}  {:<44}  {:>10}  {:>14}  {:>9}  {:>9}  {:>9}  {:>9}\n", "est#", "plan",
                             "estimate", "tokens/s/GPU", "compute", "ep a2a", "bubble", "dp exp");
    for (std::size_t i = 0; i < std::min<std::size_t>(10, report.rows.size()); ++i) {
      const auto& row = report.rows[i];
      std::cout << fmt::format(
          "{:>4}  {:<44}  {:>9.3f}s  {:>14.0f}  {:>8.3f}s  {:>8.3f}s  {:>8.3f}s  {:>8.3f}s\n", i + 1,
          row.label, row.estimate_s, tokens / row.estimate_s / options.gpus, row.estimate_compute_s,
          row.estimate_ep_comm_s, row.estimate_bubble_s, row.estimate_dp_exposed_s);
    }
    std::cout << fmt::format("\nno plan simulated (--top 0); all {} feasible plans in {}, {}\n",
                             report.rows.size(), (out_dir / "plans.csv").string(),
                             (out_dir / "plans.json").string());
    return status;
  }
  std::cout << '\n';
  analysis::write_plan_table(std::cout, report);
  std::cout << '\n';
  for (const auto& line : analysis::explain_winner(report))
    std::cout << line << '\n';
  const auto ranking = analysis::simulated_ranking(report);
  if (!ranking.empty() && analysis::can_win(*ranking.front()))
    std::cout << fmt::format("\nall {} feasible plans in {}, {}; rerun the winner with: trainsim run {}\n",
                             report.rows.size(), (out_dir / "plans.csv").string(),
                             (out_dir / "plans.json").string(),
                             (out_dir / ranking.front()->folder / "scenario.yaml").string());
  return status;
}

}  // namespace trainsim::cli
