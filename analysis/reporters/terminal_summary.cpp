#include <fmt/ostream.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <ostream>

#include "analysis/reporters/reporters.hpp"
#include "platforms/units.hpp"
#include "workloads/expert_routing.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::analysis {
namespace {

std::string pct(double fraction) {
  return units::format_percent(fraction);
}

// "stage 3 compute 61%, pp p2p 9%, dp all_reduce 14%" (the largest first).
std::string blame_line(const std::vector<Blame>& blames, std::size_t count) {
  std::string line;
  for (std::size_t i = 0; i < blames.size() && i < count; ++i)
    line += fmt::format("{}{} {}%", i ? ", " : "", blames[i].name,
                        blames[i].fraction >= 0.1 ? fmt::format("{:.0f}", 100 * blames[i].fraction)
                                                  : fmt::format("{:.1f}", 100 * blames[i].fraction));
  return line.empty() ? "-" : line;
}

}  // namespace

void write_terminal_summary(std::ostream& out, const RunContext& run, const Report& report) {
  const auto& plan = run.plan;
  const Summary& s = report.summary;
  const double t = s.iteration_time_s;
  fmt::print(out, "scenario     {}\n", run.scenario_name);
  fmt::print(out, "cluster      {} GPUs on {} nodes ({})\n", run.cluster.gpu_count(),
             run.cluster.node_count(), run.cluster.gpu_description());
  fmt::print(out, "model        {} ({:.2f}B parameters)\n", run.model.name,
             run.model.parameter_count() / 1e9);
  fmt::print(out, "plan         dp {} x tp {} x pp {}, {} micro-batches of {}, schedule {}, recompute {}\n",
             plan.dp, plan.tp, plan.pp, plan.micro_batches(), plan.micro_batch_size, to_string(plan.schedule),
             to_string(plan.recompute));
  std::string options;
  if (plan.pp > 1)
    options += fmt::format(", {} pipeline sends", to_string(workloads::resolved_p2p(plan)));
  if (plan.cp > 1)
    options += fmt::format(", context parallel {}", plan.cp);
  if (plan.sequence_parallel)
    options += ", sequence parallel";
  if (plan.userbuffers())
    options += ", TP communication overlapping the GEMMs";
  else if (plan.torch_async_tp())
    options += ", TP communication overlapping the GEMMs (torch async TP)";
  if (plan.hybrid_sharded())
    options += fmt::format(", ZeRO-3 (hybrid-sharded FSDP: shards over {} GPUs, {} replicas)",
                           plan.zero_shard_size(), plan.data_parallel_size() / plan.zero_shard_size());
  else if (plan.zero_stage > 0)
    options +=
        plan.zero_stage == 3 ? std::string(", ZeRO-3 (FSDP)") : fmt::format(", ZeRO-{}", plan.zero_stage);
  if (!plan.reshard_after_forward)
    options += ", parameters gathered once per iteration";
  if (plan.grad_reduce_per_step)
    options +=
        fmt::format(", gradients reduce-scattered once per iteration ({} bytes each)", plan.grad_bytes);
  if (plan.fp8())
    options += fmt::format(", FP8 GEMMs ({} scaling{})", to_string(plan.fp8_recipe),
                           plan.fp8_param_gather ? ", FP8 parameter all-gathers" : "");
  if (plan.overlap_grad_reduce)
    options += fmt::format(", gradient buckets of {} overlapping the backward",
                           units::format_bytes(plan.grad_bucket_size_bytes()));
  if (plan.overlap_param_gather)
    options += ", parameter all-gathers overlapping the next forward";
  if (!options.empty())
    fmt::print(out, "             {}\n", options.substr(2));
  if (run.model.is_moe() && !run.model.moe.routing.balanced()) {
    // Imbalanced routing (workloads/expert_routing.hpp): what it draws.
    const auto& r = run.model.moe.routing;
    const auto fig = workloads::routing_figures(run.model, plan.ep);
    std::string what(workloads::to_string(r.kind));
    if (r.kind == workloads::RoutingKind::zipf || r.kind == workloads::RoutingKind::dirichlet)
      what += fmt::format(" ({} {}, seed {})", r.kind == workloads::RoutingKind::zipf ? "s" : "alpha", r.skew,
                          r.seed);
    else if (r.kind == workloads::RoutingKind::measured)
      what += fmt::format(" ({})", r.file);
    const std::string capacity = run.model.moe.dropless
                                     ? std::string("dropless")
                                     : fmt::format("capacity {}: {} of the copies dropped",
                                                   run.model.moe.capacity_factor, pct(fig.dropped_fraction));
    fmt::print(
        out,
        "moe routing  {}, {}: busiest EP rank {:.2f}x the balanced load (mean over MoE layers {:.2f}x), "
        "busiest expert {:.2f}x\n",
        what, capacity, fig.busiest_rank_factor, fig.mean_busiest_rank_factor, fig.busiest_expert_factor);
  }
  if (!plan.stage_layers.empty())
    fmt::print(out, "             layers per {}stage [{}]\n", plan.virtual_stages > 1 ? "virtual " : "",
               fmt::join(plan.stage_layers, ", "));
  if (!plan.dp_micro_batches.empty())
    fmt::print(out, "             micro-batches per DP replica [{}]\n",
               fmt::join(plan.dp_micro_batches, ", "));
  fmt::print(out, "\n");
  const double hw_tflops =
      t > 0 && !s.gpus.empty() ? s.hardware_flops / t / 1e12 / static_cast<double>(s.gpus.size()) : 0;
  fmt::print(out, "  {:<24}{:>12}\n", "iteration time", units::format_duration(t));
  if (report.bubbles.reference_iteration_time_s < t * (1 - 1e-9)) {
    // Ops ran slower than their fastest copy: stragglers and slow GPUs, or
    // on a mixed cluster the slower GPU type.
    const bool mixed = run.cluster.gpu_description() != run.cluster.groups.front().gpu.name;
    fmt::print(out, "  {:<24}{:>12}   ({})\n", mixed ? "at the fastest GPU's pace" : "without stragglers",
               units::format_duration(report.bubbles.reference_iteration_time_s),
               mixed ? "every op as fast as on the fastest GPU that runs it"
                     : "every op at its reference speed: no slow GPU, no straggler");
  }
  if (report.bubbles.expert_imbalance_modelled) {
    const double balanced = report.bubbles.balanced_routing_iteration_time_s;
    fmt::print(out,
               "  {:<24}{:>12}   (the experts' compute at the balanced load, all-to-alls as run: imbalance "
               "costs {})\n",
               "with balanced experts", units::format_duration(balanced), pct(t > 0 ? 1 - balanced / t : 0));
  }
  fmt::print(out, "  {:<24}{:>12}\n", "tokens / s", units::format_si(s.tokens_per_s, ""));
  fmt::print(out, "  {:<24}{:>12.1f}   hardware {:.1f}\n", "TFLOP/s per GPU", s.tflops_per_gpu, hw_tflops);
  // Which FLOPs `mfu` counts, and the figure under the definitions
  // publications use (docs/outputs.md, "MFU definitions").
  fmt::print(out, "  {:<24}{:>12}   matmul FLOPs + full causal attention\n",
             run.plan.fp8() ? "MFU (of the BF16 peak)" : "MFU", pct(s.mfu));
  if (run.plan.fp8())
    fmt::print(out, "  {:<24}{:>12}\n", "MFU of the FP8 peak", pct(s.mfu_fp8_peak));
  if (run.model.layers > 0)
    fmt::print(out, "  {:<24}{:>12}   6N (no attention); PaLM {}, NVIDIA {}\n", "MFU by definition",
               pct(s.mfu_6n), pct(s.mfu_palm), pct(s.mfu_nvidia));
  fmt::print(out, "  {:<24}{:>12}\n", "HFU", pct(s.hfu));
  // The fold (docs/performance.md, "The fold"), when it was considered.
  if (s.fold.considered && s.fold.folded)
    fmt::print(out, "  {:<24}{:>12}   {}{}\n", "fold (replicas replayed)",
               fmt::format("{} of {}", s.fold.simulated, s.fold.replicas), s.fold.folded_why,
               s.fold.stopped.empty() ? "" : "; not further: " + s.fold.stopped);
  else if (s.fold.considered)
    fmt::print(out, "  {:<24}{:>12}   {}\n", "fold", "none", s.fold.stopped);
  fmt::print(out, "  {:<24}{:>12}   exposed communication {}, bubble (idle) {}\n", "compute",
             pct(s.compute_fraction), pct(s.exposed_comm_fraction), pct(s.bubble_fraction));
  const auto& ut = report.utilization;
  std::string exposed;
  for (std::size_t k = 0; k < kCommKinds.size(); ++k)
    exposed += fmt::format("{}{} {}", k ? ", " : "", workloads::to_string(kCommKinds[k]),
                           pct(t > 0 && !s.gpus.empty() ? ut.exposed_by_kind_s[k] / (t * s.gpus.size()) : 0));
  fmt::print(out, "  {:<24}{:>12}\n", "exposed comm by kind", exposed);
  if (s.peak_memory_gpu >= 0) {
    const auto& g = s.gpus[static_cast<std::size_t>(s.peak_memory_gpu)];
    fmt::print(out, "  {:<24}{:>12}   on GPU {} of {}{}\n", "peak memory",
               units::format_bytes(s.peak_memory_bytes), g.gpu, units::format_bytes(g.memory_capacity_bytes),
               s.fits_in_memory ? "" : "  (DOES NOT FIT)");
  }
  if (report.energy.measured)
    fmt::print(out, "  {:<24}{:>12}   {}/token, {} per GPU, {} drawn idle\n", "energy / iteration",
               units::format_si(report.energy.energy_J, "J"),
               units::format_si(report.energy.energy_per_token_J, "J"),
               units::format_si(report.energy.average_power_per_gpu_W, "W"),
               pct(report.energy.idle_energy_fraction));
  fmt::print(out, "  {:<24}{}\n", "critical path", blame_line(report.critical_path.by_kind, 4));
  if (!report.critical_path.by_link.empty())
    fmt::print(out, "  {:<24}{}\n", "  ... on links", blame_line(report.critical_path.by_link, 3));
  if (!report.critical_path.by_gpu.empty())
    fmt::print(out, "  {:<24}{}\n", "  ... on GPUs", blame_line(report.critical_path.by_gpu, 3));
  if (const auto totals = representation_totals(report.collectives); totals.automatic) {
    const auto n = [&](Representation r) { return totals.count[static_cast<std::size_t>(r)]; };
    fmt::print(out,
               "  {:<24}{} isolated (links free: steps computed exactly), {} shared (detailed flows){}{}\n",
               "collectives (auto)", n(Representation::isolated), n(Representation::shared),
               n(Representation::isolated_then_shared) > 0
                   ? fmt::format(", {} isolated then shared", n(Representation::isolated_then_shared))
                   : std::string(),
               n(Representation::shared_then_isolated) > 0
                   ? fmt::format(", {} shared then isolated", n(Representation::shared_then_isolated))
                   : std::string());
  }
  if (!ut.hottest.empty()) {
    const auto& l = ut.links[static_cast<std::size_t>(ut.hottest.front())];
    fmt::print(out, "  {:<24}{} ({} busy, {} of capacity, up to {} flow{} at once)\n", "hottest link", l.name,
               pct(l.busy_fraction), pct(l.utilization), l.peak_concurrent_flows,
               l.peak_concurrent_flows == 1 ? "" : "s");
  }

  fmt::print(out, "\n  {:<6}{:>9}{:>9}{:>9}{:>9}", "stage", "compute", "exposed", "bubble", "lost");
  static constexpr std::array<const char*, kBubbleCauseCount> kShort{
      "warm/cool", "p2p", "collect.", "straggler", "dp comm", "optim.", "experts"};
  const std::vector<BubbleCause> columns = reported_causes(report.bubbles);
  for (BubbleCause c : columns)
    fmt::print(out, "{:>10}", kShort[static_cast<std::size_t>(c)]);
  fmt::print(out, "\n");
  for (const auto& st : s.stages) {
    const auto& b = report.bubbles.stages.at(static_cast<std::size_t>(st.stage));
    fmt::print(out, "  {:<6}{:>9}{:>9}{:>9}{:>9}", st.stage, pct(st.compute_fraction),
               pct(st.exposed_comm_fraction), pct(st.bubble_fraction), pct(t > 0 ? b.lost_s / t : 0));
    for (BubbleCause c : columns)
      fmt::print(out, "{:>10}", pct(t > 0 ? b.cause_s[static_cast<std::size_t>(c)] / t : 0));
    fmt::print(out, "\n");
  }

  const auto causes = top_lost_time_causes(report);
  fmt::print(out,
             "\ntop causes of lost time (share of all GPU time; lost = not computing forward/backward)\n");
  if (causes.empty())
    fmt::print(out, "  none\n");
  std::size_t width = 0;
  for (const auto& c : causes)
    width = std::max(width, describe(c.cause).size());
  for (std::size_t i = 0; i < causes.size(); ++i)
    fmt::print(out, "  {}. {:<{}}{:>7}   worst: stage {} ({})\n", i + 1, describe(causes[i].cause), width,
               pct(causes[i].fraction), causes[i].worst_stage, pct(causes[i].worst_stage_fraction));

  if (run.balance) {
    const BalanceOutcome& b = *run.balance;
    auto split = [](const PartitionOutcome& p) {
      return fmt::format("layers [{}], micro-batches [{}]", fmt::join(p.stage_layers, ", "),
                         fmt::join(p.dp_micro_batches, ", "));
    };
    fmt::print(out, "\nbalance (--balance auto{}; outputs above: the balanced split)\n",
               b.searched_dp_shares ? ", layers and DP shares" : ", layers");
    fmt::print(out, "  {:<10}{:>12}   {}   (estimate {})\n", "even",
               units::format_duration(b.even.iteration_time_s), split(b.even),
               units::format_duration(b.even.estimated_iteration_time_s));
    fmt::print(out, "  {:<10}{:>12}   {}   (estimate {})\n", "balanced",
               units::format_duration(b.balanced.iteration_time_s), split(b.balanced),
               units::format_duration(b.balanced.estimated_iteration_time_s));
    fmt::print(out, "  {:<10}{:>11.3f}x   {}\n", "speedup", b.speedup(),
               b.even.stage_layers == b.balanced.stage_layers &&
                       b.even.dp_micro_batches == b.balanced.dp_micro_batches
                   ? "the even split is already balanced"
                   : fmt::format("{:.1f}% less time per iteration",
                                 100 * (1 - b.balanced.iteration_time_s / b.even.iteration_time_s)));
    if (!b.memory_capped_stages.empty())
      fmt::print(out, "  capped to fit in GPU memory: virtual stage{} {}\n",
                 b.memory_capped_stages.size() > 1 ? "s" : "", fmt::join(b.memory_capped_stages, ", "));
    fmt::print(out, "  even split's own outputs: {}/\n", b.even_run_dir);
  }
}

void write_repeated_runs_summary(std::ostream& out, const RepeatedRuns& runs) {
  const nlohmann::ordered_json j = summary_blocks(runs);
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

}  // namespace trainsim::analysis
