#include "sim/cli/perturbation_report.hpp"

#include <fmt/format.h>

#include <fstream>
#include <stdexcept>

#include "analysis/iteration_stats.hpp"
#include "analysis/reporters/json_numbers.hpp"
#include "platforms/number_format.hpp"

namespace trainsim::cli {
namespace fs = std::filesystem;
using nlohmann::ordered_json;

namespace {

ordered_json stats_json(const analysis::IterationStats& s) {
  return {{"count", s.times_s.size()}, {"times_s", s.times_s}, {"mean_s", s.mean_s}, {"p50_s", s.p50_s},
          {"p95_s", s.p95_s},          {"p99_s", s.p99_s},     {"max_s", s.max_s},   {"min_s", s.min_s}};
}

// The five parts of the run's wall clock, as fractions of it (they add up to 1).
ordered_json share_json(const sim::JobFailureResult& f) {
  const double run = f.run_time_s > 0 ? f.run_time_s : 1;
  return {{"useful", f.useful_s / run},
          {"lost_work", f.lost_work_s / run},
          {"restart", f.restart_s / run},
          {"checkpoint", f.checkpoint_s / run},
          {"unfinished", f.unfinished_s / run}};
}

}  // namespace

ordered_json perturbation_blocks(const scenario::Scenario& scenario, const sim::SimulationResult& result,
                                 const std::vector<SeedResult>& seeds) {
  ordered_json j = ordered_json::object();
  const auto stats = analysis::iteration_stats(result.iteration_times_s);
  j["iterations"] = stats_json(stats);
  j["iterations"]["seed"] = scenario.seed;

  const auto& p = scenario.perturbations;
  if (!p.empty()) {
    const auto& st = result.perturbations;
    j["perturbations"] = {{"slow_gpu_rules", p.slow_gpus.size()},
                          {"throttling_rules", p.throttling.size()},
                          {"stragglers", p.stragglers.enabled},
                          {"straggler_episodes", st.straggler_episodes},
                          {"straggler_gpu_seconds", st.straggler_gpu_seconds},
                          {"episodes_per_iteration", st.episodes_per_iteration},
                          {"link_faults", p.links.size()},
                          {"link_changes", st.link_changes},
                          {"rerouted_link_downs", st.rerouted_downs},
                          {"stalled_flows", st.stalled_flows},
                          {"longest_stall_s", st.longest_stall_s}};
  }
  if (result.failures) {
    const auto& f = *result.failures;
    j["failures"] = {
        {"model",
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
  if (seeds.size() > 1) {
    std::vector<double> means;
    std::vector<double> goodputs;
    ordered_json list = ordered_json::array();
    ordered_json share_mean = ordered_json::object();
    for (const auto& s : seeds) {
      const auto st = analysis::iteration_stats(s.iteration_times_s);
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
    const auto ci = analysis::confidence_interval_95(means);
    j["seeds"] = {{"count", seeds.size()},
                  {"iteration_depends_on_seed", p.replay_depends_on_seed()},
                  {"runs", list},
                  {"mean_iteration_time_s", ci.mean},
                  {"ci95_half_width_s", ci.half_width},
                  {"ci95_low_s", ci.low()},
                  {"ci95_high_s", ci.high()}};
    if (!goodputs.empty()) {
      const auto g = analysis::confidence_interval_95(goodputs);
      j["seeds"]["goodput_tokens_per_hour"] = {{"mean", g.mean},
                                               {"ci95_half_width", g.half_width},
                                               {"ci95_low", g.low()},
                                               {"ci95_high", g.high()}};
      j["seeds"]["share_mean"] = share_mean;
    }
  }
  return j;
}

void add_to_summary_json(const fs::path& dir, const ordered_json& blocks) {
  const fs::path path = dir / "summary.json";
  ordered_json summary;
  {
    std::ifstream in(path);
    if (!in)
      throw std::runtime_error(fmt::format("cannot read {}", path.string()));
    summary = ordered_json::parse(in);
  }
  for (const auto& [key, value] : blocks.items())
    summary[key] = value;
  analysis::whole_numbers_as_integers(summary);
  std::ofstream out(path, std::ios::binary);
  out << summary.dump(2) << '\n';
  if (!out)
    throw std::runtime_error(fmt::format("error while writing {}", path.string()));
}

void print_perturbation_summary(std::ostream& out, const ordered_json& j) {
  const auto ms = [](double s) { return units::format_duration(s); };
  const auto& it = j["iterations"];
  if (it["count"].get<std::size_t>() > 1)
    out << fmt::format("\niterations        {} (seed {}): mean {}, p50 {}, p95 {}, p99 {}, max {}\n",
                       it["count"].get<std::size_t>(), it["seed"].get<std::uint64_t>(), ms(it["mean_s"]),
                       ms(it["p50_s"]), ms(it["p95_s"]), ms(it["p99_s"]), ms(it["max_s"]));
  if (j.contains("perturbations")) {
    const auto& p = j["perturbations"];
    out << fmt::format(
        "perturbations     straggler episodes {} ({} GPU-s), link changes {}, stalled flows {}"
        " (longest {}), rerouted link downs {}\n",
        p["straggler_episodes"].get<int>(), units::format_si(p["straggler_gpu_seconds"].get<double>(), ""),
        p["link_changes"].get<int>(), p["stalled_flows"].get<int>(), ms(p["longest_stall_s"]),
        p["rerouted_link_downs"].get<int>());
  }
  if (j.contains("seeds")) {
    const auto& s = j["seeds"];
    out << fmt::format("seeds             {}: mean iteration {} +/- {} (95% CI)\n",
                       s["count"].get<std::size_t>(), ms(s["mean_iteration_time_s"]),
                       ms(s["ci95_half_width_s"]));
    // A zero spread is not luck: nothing random reaches the iteration.
    if (!s.value("iteration_depends_on_seed", true))
      out << fmt::format(
          "                  (no spread: nothing in this scenario that changes the iteration "
          "is random (no `stragglers`), so every seed replays the same iteration{})\n",
          s.contains("goodput_tokens_per_hour") ? "; only the failures differ per seed" : "");
    if (s.contains("goodput_tokens_per_hour"))
      out << fmt::format(
          "                  goodput {} +/- {} (95% CI)\n",
          units::format_si(s["goodput_tokens_per_hour"]["mean"].get<double>(), " tokens/h"),
          units::format_si(s["goodput_tokens_per_hour"]["ci95_half_width"].get<double>(), " tokens/h"));
  }
  if (j.contains("failures")) {
    const auto& f = j["failures"];
    const auto& share = f["share"];
    out << fmt::format(
        "failures          {} in {}, {} checkpoints ({} each); goodput {} = {} of ideal\n"
        "                  time: useful {}, lost work {}, restarts {}, checkpoints {}, unfinished {}\n",
        f["failures"].get<int>(), units::format_duration(f["run_time_s"].get<double>()),
        f["checkpoints"].get<int>(), units::format_duration(f["checkpoint_write_s"].get<double>()),
        units::format_si(f["goodput_tokens_per_hour"].get<double>(), " tokens/h"),
        units::format_percent(f["goodput_fraction"].get<double>()),
        units::format_percent(share["useful"].get<double>()),
        units::format_percent(share["lost_work"].get<double>()),
        units::format_percent(share["restart"].get<double>()),
        units::format_percent(share["checkpoint"].get<double>()),
        units::format_percent(share["unfinished"].get<double>()));
  }
}

}  // namespace trainsim::cli
