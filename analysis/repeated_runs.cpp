#include "analysis/repeated_runs.hpp"

#include "analysis/iteration_stats.hpp"

namespace trainsim::analysis {
using nlohmann::ordered_json;

namespace {

ordered_json stats_json(const IterationStats& s) {
  return {{"count", s.times_s.size()}, {"times_s", s.times_s}, {"mean_s", s.mean_s}, {"p50_s", s.p50_s},
          {"p95_s", s.p95_s},          {"p99_s", s.p99_s},     {"max_s", s.max_s},   {"min_s", s.min_s}};
}

// The five parts of the run's wall clock, as fractions of it (they add up to 1).
ordered_json share_json(const JobFailureOutcome& f) {
  const double run = f.run_time_s > 0 ? f.run_time_s : 1;
  return {{"useful", f.useful_s / run},
          {"lost_work", f.lost_work_s / run},
          {"restart", f.restart_s / run},
          {"checkpoint", f.checkpoint_s / run},
          {"unfinished", f.unfinished_s / run}};
}

ordered_json failures_block(const JobFailureOutcome& f) {
  return {{"model",
           "job-level event simulation on SimGrid timers; iterations take the replayed iterations' times"},
          {"run_time_s", f.run_time_s},
          {"failures", f.failures},
          {"checkpoints", f.checkpoints},
          {"checkpoint_bytes", f.checkpoint_bytes},
          {"checkpoint_write_s", f.checkpoint_write_s},
          {"useful_iterations", f.useful_iterations},
          {"lost_iterations", f.lost_iterations},
          {"goodput_tokens_per_hour", f.goodput_tokens_per_hour},
          {"ideal_tokens_per_hour", f.ideal_tokens_per_hour},
          {"goodput_fraction",
           f.ideal_tokens_per_hour > 0 ? f.goodput_tokens_per_hour / f.ideal_tokens_per_hour : 0},
          {"time_s",
           {{"useful", f.useful_s},
            {"lost_work", f.lost_work_s},
            {"restart", f.restart_s},
            {"checkpoint", f.checkpoint_s},
            {"unfinished", f.unfinished_s}}},
          {"share", share_json(f)}};
}

// `depends_on_seed`: whether anything random reaches the iteration (random
// stragglers, MoE routing drawn from the seed); without it a zero spread is
// exact, not luck, and says so.
ordered_json seeds_block(const std::vector<SeedOutcome>& seeds, bool depends_on_seed) {
  std::vector<double> means;
  std::vector<double> goodputs;
  ordered_json list = ordered_json::array();
  ordered_json share_mean = ordered_json::object();
  for (const auto& s : seeds) {
    const auto st = iteration_stats(s.iteration_times_s);
    means.push_back(st.mean_s);
    ordered_json e = {{"seed", s.seed}, {"mean_iteration_time_s", st.mean_s}, {"p99_s", st.p99_s}};
    if (s.failures) {
      goodputs.push_back(s.failures->goodput_tokens_per_hour);
      e["goodput_tokens_per_hour"] = s.failures->goodput_tokens_per_hour;
      e["failures"] = s.failures->failures;
      e["share"] = share_json(*s.failures);
      for (const auto& [part, value] : e["share"].items())
        share_mean[part] =
            share_mean.value(part, 0.0) + value.get<double>() / static_cast<double>(seeds.size());
    }
    list.push_back(e);
  }
  const auto ci = confidence_interval_95(means);
  ordered_json j = {{"count", seeds.size()},
                    {"iteration_depends_on_seed", depends_on_seed},
                    {"runs", list},
                    {"mean_iteration_time_s", ci.mean},
                    {"ci95_half_width_s", ci.half_width},
                    {"ci95_low_s", ci.low()},
                    {"ci95_high_s", ci.high()}};
  if (!goodputs.empty()) {
    const auto g = confidence_interval_95(goodputs);
    j["goodput_tokens_per_hour"] = {
        {"mean", g.mean}, {"ci95_half_width", g.half_width}, {"ci95_low", g.low()}, {"ci95_high", g.high()}};
    j["share_mean"] = share_mean;
  }
  return j;
}

}  // namespace

ordered_json summary_blocks(const RepeatedRuns& runs) {
  ordered_json j = ordered_json::object();
  j["iterations"] = stats_json(iteration_stats(runs.iteration_times_s));
  j["iterations"]["seed"] = runs.seed;
  if (runs.perturbations) {
    const auto& p = *runs.perturbations;
    const auto& st = p.stats;
    j["perturbations"] = {{"slow_gpu_rules", p.slow_gpu_rules},
                          {"throttling_rules", p.throttling_rules},
                          {"stragglers", p.stragglers},
                          {"straggler_episodes", st.straggler_episodes},
                          {"straggler_gpu_seconds", st.straggler_gpu_seconds},
                          {"episodes_per_iteration", st.episodes_per_iteration},
                          {"link_faults", p.link_faults},
                          {"link_changes", st.link_changes},
                          {"rerouted_link_downs", st.rerouted_downs},
                          {"stalled_flows", st.stalled_flows},
                          {"longest_stall_s", st.longest_stall_s}};
  }
  if (runs.failures)
    j["failures"] = failures_block(*runs.failures);
  if (runs.seeds.size() > 1)
    j["seeds"] = seeds_block(
        runs.seeds, runs.graph_depends_on_seed || (runs.perturbations && runs.perturbations->stragglers));
  return j;
}

ordered_json to_json(const JobFailureOutcome& f) {
  return {{"run_time_s", f.run_time_s},
          {"failures", f.failures},
          {"checkpoints", f.checkpoints},
          {"useful_iterations", f.useful_iterations},
          {"lost_iterations", f.lost_iterations},
          {"checkpoint_write_s", f.checkpoint_write_s},
          {"checkpoint_bytes", f.checkpoint_bytes},
          {"useful_s", f.useful_s},
          {"lost_work_s", f.lost_work_s},
          {"restart_s", f.restart_s},
          {"checkpoint_s", f.checkpoint_s},
          {"unfinished_s", f.unfinished_s},
          {"tokens_per_iteration", f.tokens_per_iteration},
          {"goodput_tokens_per_hour", f.goodput_tokens_per_hour},
          {"ideal_tokens_per_hour", f.ideal_tokens_per_hour}};
}

JobFailureOutcome job_failure_outcome_from_json(const nlohmann::json& j) {
  return {.run_time_s = j.at("run_time_s").get<double>(),
          .failures = j.at("failures").get<int>(),
          .checkpoints = j.at("checkpoints").get<int>(),
          .useful_iterations = j.at("useful_iterations").get<long long>(),
          .lost_iterations = j.at("lost_iterations").get<long long>(),
          .checkpoint_write_s = j.at("checkpoint_write_s").get<double>(),
          .checkpoint_bytes = j.at("checkpoint_bytes").get<double>(),
          .useful_s = j.at("useful_s").get<double>(),
          .lost_work_s = j.at("lost_work_s").get<double>(),
          .restart_s = j.at("restart_s").get<double>(),
          .checkpoint_s = j.at("checkpoint_s").get<double>(),
          .unfinished_s = j.at("unfinished_s").get<double>(),
          .tokens_per_iteration = j.at("tokens_per_iteration").get<double>(),
          .goodput_tokens_per_hour = j.at("goodput_tokens_per_hour").get<double>(),
          .ideal_tokens_per_hour = j.at("ideal_tokens_per_hour").get<double>()};
}

ordered_json to_json(const RepeatedRuns& runs) {
  ordered_json j = {{"seed", runs.seed}, {"iteration_times_s", runs.iteration_times_s}};
  if (runs.perturbations) {
    const auto& p = *runs.perturbations;
    const auto& st = p.stats;
    j["perturbations"] = {{"slow_gpu_rules", p.slow_gpu_rules},
                          {"throttling_rules", p.throttling_rules},
                          {"stragglers", p.stragglers},
                          {"link_faults", p.link_faults},
                          {"straggler_episodes", st.straggler_episodes},
                          {"straggler_gpu_seconds", st.straggler_gpu_seconds},
                          {"episodes_per_iteration", st.episodes_per_iteration},
                          {"link_changes", st.link_changes},
                          {"stalled_flows", st.stalled_flows},
                          {"longest_stall_s", st.longest_stall_s},
                          {"rerouted_downs", st.rerouted_downs}};
  }
  if (runs.failures)
    j["failures"] = to_json(*runs.failures);
  ordered_json seeds = ordered_json::array();
  for (const auto& s : runs.seeds) {
    ordered_json e = {{"seed", s.seed}, {"iteration_times_s", s.iteration_times_s}};
    if (s.failures)
      e["failures"] = to_json(*s.failures);
    seeds.push_back(e);
  }
  j["seeds"] = seeds;
  if (runs.graph_depends_on_seed)  // only then: other archives keep their bytes
    j["graph_depends_on_seed"] = true;
  return j;
}

RepeatedRuns repeated_runs_from_json(const nlohmann::json& j) {
  RepeatedRuns runs;
  runs.seed = j.at("seed").get<std::uint64_t>();
  runs.iteration_times_s = j.at("iteration_times_s").get<std::vector<double>>();
  if (j.contains("perturbations")) {
    const auto& p = j.at("perturbations");
    runs.perturbations = PerturbationOutcome{
        .slow_gpu_rules = p.at("slow_gpu_rules").get<std::size_t>(),
        .throttling_rules = p.at("throttling_rules").get<std::size_t>(),
        .stragglers = p.at("stragglers").get<bool>(),
        .link_faults = p.at("link_faults").get<std::size_t>(),
        .stats = {.straggler_episodes = p.at("straggler_episodes").get<int>(),
                  .straggler_gpu_seconds = p.at("straggler_gpu_seconds").get<double>(),
                  .episodes_per_iteration = p.at("episodes_per_iteration").get<std::vector<int>>(),
                  .link_changes = p.at("link_changes").get<int>(),
                  .stalled_flows = p.at("stalled_flows").get<int>(),
                  .longest_stall_s = p.at("longest_stall_s").get<double>(),
                  .rerouted_downs = p.at("rerouted_downs").get<int>()}};
  }
  if (j.contains("failures"))
    runs.failures = job_failure_outcome_from_json(j.at("failures"));
  for (const auto& e : j.at("seeds")) {
    SeedOutcome s{.seed = e.at("seed").get<std::uint64_t>(),
                  .iteration_times_s = e.at("iteration_times_s").get<std::vector<double>>(),
                  .failures = std::nullopt};
    if (e.contains("failures"))
      s.failures = job_failure_outcome_from_json(e.at("failures"));
    runs.seeds.push_back(std::move(s));
  }
  runs.graph_depends_on_seed = j.value("graph_depends_on_seed", false);
  return runs;
}

}  // namespace trainsim::analysis
