#include "sim/cli/replay_progress.hpp"

#include <fmt/format.h>

#include <memory>

#include "platforms/number_format.hpp"

namespace trainsim::cli {

std::string expensive_replay_note(const sim::ReplayCost& cost, std::string_view cheaper) {
  if (cost.time_s < kExpensiveTime_s && cost.memory_bytes < kExpensiveMemory_bytes)
    return "";
  std::string note = fmt::format(
      "note: a long simulation: {} GPUs, {} tasks and {} network flows per iteration{}; estimated ~{} and "
      "~{} "
      "of memory",
      cost.gpus, sim::format_count_short(static_cast<double>(cost.tasks)),
      sim::format_count_short(static_cast<double>(cost.flows)),
      cost.iterations > 1 ? fmt::format(", {} iterations", cost.iterations) : std::string(),
      sim::format_time_left(cost.time_s), units::format_bytes(cost.memory_bytes));
  // Fast collectives are the cheaper choice when they cut the flows.
  if (cost.detailed && static_cast<double>(cost.fast_flows) < 0.7 * static_cast<double>(cost.flows))
    note += fmt::format(
        ". Cheaper: {} ({} flows, ~{}), exact where no two collectives share a link (docs/collectives.md)",
        cheaper, sim::format_count_short(static_cast<double>(cost.fast_flows)),
        sim::format_time_left(cost.fast_time_s));
  return note;
}

std::string replay_progress_text(const sim::ReplayProgress& p, const sim::ReplayCost* cost,
                                 double elapsed_s) {
  const double tasks = static_cast<double>(p.tasks_done);
  const double total = static_cast<double>(p.tasks_total);
  std::string text =
      fmt::format("simulating: {} simulated, {}/{} tasks ({})", units::format_duration(p.simulated_s),
                  sim::format_count_short(tasks), sim::format_count_short(total),
                  units::format_percent(total > 0 ? tasks / total : 0));
  if (elapsed_s > 0)
    text += fmt::format(", {} tasks/s", sim::format_count_short(tasks / elapsed_s));
  // Flows take most of the time when there are many: the better measure of
  // the way done, when the estimate counted them.
  double done = total > 0 ? tasks / total : 0;
  if (cost != nullptr && cost->flows > cost->tasks)
    done = static_cast<double>(p.flows_done) /
           static_cast<double>(cost->flows * static_cast<std::size_t>(std::max(cost->iterations, 1)));
  if (done > 0.01 && done < 1)
    text += fmt::format(", ~{} left", sim::format_time_left(elapsed_s * (1 - done) / done));
  return text;
}

sim::ReplayObserver observe_replay(sim::ProgressLine& line, std::string cheaper) {
  auto cost = std::make_shared<std::optional<sim::ReplayCost>>();
  sim::ReplayObserver observer;
  observer.on_cost = [&line, cost, cheaper = std::move(cheaper)](const sim::ReplayCost& c) {
    *cost = c;
    if (const auto note = expensive_replay_note(c, cheaper); !note.empty())
      line.print_above(note);
    line.update("simulating");
  };
  observer.on_progress = [&line, cost](const sim::ReplayProgress& p) {
    line.update(replay_progress_text(p, *cost ? &**cost : nullptr, line.elapsed_s()));
  };
  return observer;
}

}  // namespace trainsim::cli
