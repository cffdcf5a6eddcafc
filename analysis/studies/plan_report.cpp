#include "analysis/studies/plan_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <ostream>

#include "analysis/reporters/json_numbers.hpp"
#include "platforms/units.hpp"

namespace trainsim::analysis {
namespace {

using units::format_bytes;
using units::format_duration;

std::string percent(double fraction) {
  return units::format_percent(fraction);
}

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\n") == std::string::npos)
    return text;
  std::string q = "\"";
  for (char c : text)
    q += c == '"' ? std::string("\"\"") : std::string(1, c);
  return q + "\"";
}

// Machine files: full precision, whole numbers as integers.
std::string number(double x) {
  return units::format_machine(x);
}

// Per-GPU seconds of a simulated plan, by where the time went.
struct Split {
  double compute_s, exposed_s, bubble_s;
};
Split split_of(const SimulatedPlan& s) {
  return {s.compute_fraction * s.iteration_time_s, s.exposed_comm_fraction * s.iteration_time_s,
          s.bubble_fraction * s.iteration_time_s};
}

// "tp 2 vs 4, micro_batch_size 1 vs 2": the plan keys in which two rows
// differ. dp_shard is written only under hybrid sharding: absent, it reads
// "full" (sharding over all of dp x cp).
std::string plan_differences(const PlanRow& a, const PlanRow& b) {
  std::vector<std::string> keys;
  for (const auto* plan : {&a.plan, &b.plan})
    for (const auto& [key, value] : plan->items())
      if (std::find(keys.begin(), keys.end(), key) == keys.end())
        keys.push_back(key);
  const auto text = [](const nlohmann::ordered_json& plan, const std::string& key) -> std::string {
    if (!plan.contains(key))
      return key == "dp_shard" ? "full" : "n/a";
    const auto& v = plan[key];
    return v.is_string() ? v.get<std::string>() : v.dump();
  };
  std::string out;
  for (const auto& key : keys) {
    const auto x = text(a.plan, key), y = text(b.plan, key);
    if (x != y)
      out += fmt::format("{}{} {} vs {}", out.empty() ? "" : ", ", key, x, y);
  }
  return out;
}

// Why `w` beats `r`: the component (compute, bubble, exposed communication)
// that gains the most, then the others as "at a similar" / "despite more".
std::string comparison(const PlanRow& w, const PlanRow& r, const std::string& who) {
  const auto& ws = *w.simulated;
  const auto& rs = *r.simulated;
  const double margin = (rs.iteration_time_s - ws.iteration_time_s) / rs.iteration_time_s;
  const Split a = split_of(ws), b = split_of(rs);
  struct Part {
    const char* less;
    const char* more;
    const char* same;
    double delta_s;  // > 0: the winner spends less here
    std::string values;
  };
  std::vector<Part> parts = {
      {"smaller bubble", "a larger bubble", "a similar bubble", b.bubble_s - a.bubble_s,
       fmt::format("{} vs {} of the iteration", percent(ws.bubble_fraction), percent(rs.bubble_fraction))},
      {"less exposed communication", "more exposed communication", "similar exposed communication",
       b.exposed_s - a.exposed_s,
       fmt::format("{} vs {}", percent(ws.exposed_comm_fraction), percent(rs.exposed_comm_fraction))},
      {"less compute per GPU", "more compute per GPU", "similar compute per GPU", b.compute_s - a.compute_s,
       fmt::format("{} vs {}", format_duration(a.compute_s), format_duration(b.compute_s))},
  };
  std::stable_sort(parts.begin(), parts.end(),
                   [](const Part& x, const Part& y) { return x.delta_s > y.delta_s; });
  const double small_s = 0.01 * rs.iteration_time_s;
  std::string text =
      fmt::format("beats {} ({}) by {} ({} vs {} per iteration): {} ({})", who, r.label, percent(margin),
                  format_duration(ws.iteration_time_s), format_duration(rs.iteration_time_s),
                  parts[0].delta_s > small_s ? parts[0].less : parts[0].same, parts[0].values);
  for (std::size_t i = 1; i < parts.size(); ++i) {
    const auto& p = parts[i];
    const char* how = p.delta_s > small_s ? p.less : p.delta_s < -small_s ? p.more : p.same;
    text += fmt::format("{} {} ({})", p.delta_s < -small_s ? ", despite" : (i == 1 ? ", with" : " and"), how,
                        p.values);
  }
  const std::string diff = plan_differences(w, r);
  if (!diff.empty())
    text += fmt::format("; the plans differ in {}", diff);
  return text + ".";
}

}  // namespace

bool can_win(const PlanRow& row) {
  return row.simulated && row.simulated->fits_in_memory;
}

std::vector<const PlanRow*> simulated_ranking(const PlanReport& report) {
  std::vector<const PlanRow*> ok, too_big, failed;
  for (const auto& row : report.rows) {
    if (!row.selected)
      continue;
    (!row.simulated ? failed : can_win(row) ? ok : too_big).push_back(&row);
  }
  const auto faster = [](const PlanRow* a, const PlanRow* b) {
    if (a->simulated->iteration_time_s != b->simulated->iteration_time_s)
      return a->simulated->iteration_time_s < b->simulated->iteration_time_s;
    return a->key < b->key;
  };
  std::stable_sort(ok.begin(), ok.end(), faster);
  std::stable_sort(too_big.begin(), too_big.end(), faster);
  ok.insert(ok.end(), too_big.begin(), too_big.end());
  ok.insert(ok.end(), failed.begin(), failed.end());
  return ok;
}

namespace {
// "replayed peak 85.2GiB > 80GiB of HBM": why a simulated plan cannot win.
std::string does_not_fit(const SimulatedPlan& s) {
  return fmt::format("does not fit: replayed peak {} > {} of HBM", format_bytes(s.peak_memory_bytes),
                     format_bytes(s.memory_capacity_bytes));
}
}  // namespace

void write_plan_table(std::ostream& out, const PlanReport& report) {
  const auto ranking = simulated_ranking(report);
  std::size_t label_width = 4;
  for (const auto* row : ranking)
    label_width = std::max(label_width, row->label.size());
  out << fmt::format("{:>4}  {:<{}}  {:>5}  {:>10}  {:>10}  {:>12}  {:>6}  {:>9}  {:>7}  {:>8}\n", "rank",
                     "plan", label_width, "est#", "estimate", "simulated", "tokens/s", "MFU", "peak mem",
                     "bubble", "exposed");
  int rank = 0;
  for (const auto* row : ranking) {
    ++rank;
    if (!row->simulated) {
      out << fmt::format("{:>4}  {:<{}}  {:>5}  {:>10}  failed: {}\n", "-", row->label, label_width,
                         row->estimate_rank, format_duration(row->estimate_s), row->failure);
      continue;
    }
    const auto& s = *row->simulated;
    const bool fits = can_win(*row);
    out << fmt::format("{:>4}  {:<{}}  {:>5}  {:>10}  {:>10}  {:>12}  {:>6}  {:>9}  {:>7}  {:>8}{}\n",
                       fits ? std::to_string(rank) : std::string("x"), row->label, label_width,
                       row->estimate_rank, format_duration(row->estimate_s),
                       format_duration(s.iteration_time_s), units::format_si(s.tokens_per_s, ""),
                       percent(s.mfu), format_bytes(s.peak_memory_bytes), percent(s.bubble_fraction),
                       percent(s.exposed_comm_fraction), fits ? std::string() : "  " + does_not_fit(s));
  }
}

void write_plan_table_csv(std::ostream& out, const PlanReport& report) {
  out << "rank,key,plan,estimate_rank,estimate_s,iteration_time_s,tokens_per_s,mfu,peak_memory_bytes,"
         "bubble_fraction,exposed_comm_fraction,status\n";
  int rank = 0;
  for (const auto* row : simulated_ranking(report)) {
    ++rank;
    out << fmt::format("{},{},{},{},{}", row->simulated ? std::to_string(rank) : std::string(), row->key,
                       csv_field(row->label), row->estimate_rank, number(row->estimate_s));
    if (row->simulated) {
      const auto& s = *row->simulated;
      out << fmt::format(",{},{},{},{},{},{},{}\n", number(s.iteration_time_s), number(s.tokens_per_s),
                         number(s.mfu), number(s.peak_memory_bytes), number(s.bubble_fraction),
                         number(s.exposed_comm_fraction), can_win(*row) ? "ok" : "does_not_fit_in_memory");
    } else {
      out << ",,,,,,,failed\n";
    }
  }
}

std::vector<std::string> explain_winner(const PlanReport& report) {
  const auto ranking = simulated_ranking(report);
  std::vector<const PlanRow*> ok, too_big;
  for (const auto* row : ranking) {
    if (can_win(*row))
      ok.push_back(row);
    else if (row->simulated)
      too_big.push_back(row);
  }
  std::vector<std::string> lines;
  if (ok.empty()) {
    if (!too_big.empty())
      lines.push_back(
          fmt::format("No winner: every simulated plan's replayed memory exceeds its GPUs' ({} "
                      "{}); the memory estimate that admitted them was short.",
                      too_big.front()->label, does_not_fit(*too_big.front()->simulated)));
    return lines;
  }
  const PlanRow& w = *ok.front();
  lines.push_back(fmt::format("Winner: {} at {} per iteration, {}, MFU {}, peak memory {}.", w.label,
                              format_duration(w.simulated->iteration_time_s),
                              units::format_si(w.simulated->tokens_per_s, " tokens/s"),
                              percent(w.simulated->mfu), format_bytes(w.simulated->peak_memory_bytes)));
  for (const auto* row : too_big)
    if (row->simulated->iteration_time_s < w.simulated->iteration_time_s)
      lines.push_back(fmt::format("Not crowned: {} ran faster ({} per iteration) but {}.", row->label,
                                  format_duration(row->simulated->iteration_time_s),
                                  does_not_fit(*row->simulated)));
  if (ok.size() >= 2)
    lines.push_back("It " + comparison(w, *ok[1], "#2"));
  // The best plan of another shape, when #2 shares the winner's.
  const auto shape = [](const PlanRow& r) {
    return std::make_pair(r.plan.value("tp", 0), r.plan.value("pp", 0));
  };
  for (std::size_t i = 1; i < ok.size(); ++i) {
    if (shape(*ok[i]) == shape(w)) {
      continue;
    }
    if (i > 1)
      lines.push_back("It " + comparison(w, *ok[i], fmt::format("the best other tp x pp shape, #{}", i + 1)));
    break;
  }
  // How good the estimate was on the simulated plans.
  double sum = 0, worst = 0;
  for (const auto* row : ok) {
    const double err =
        std::abs(row->estimate_s - row->simulated->iteration_time_s) / row->simulated->iteration_time_s;
    sum += err;
    worst = std::max(worst, err);
  }
  lines.push_back(fmt::format(
      "The estimate ranked the winner #{} of {} feasible plans; over the {} simulated plans it was {} from "
      "the simulated iteration time on average ({} at worst).",
      w.estimate_rank, report.rows.size(), ok.size(), percent(sum / static_cast<double>(ok.size())),
      percent(worst)));
  return lines;
}

void write_plans_csv(std::ostream& out, const PlanReport& report) {
  const bool moe = report.expert_columns;
  out << "estimate_rank,key,plan,tp,pp,dp,cp,virtual_stages,micro_batch_size,schedule,recompute,zero_stage,"
      << (moe ? "sequence_parallel,expert_parallel,estimate_s,estimate_compute_s,estimate_tp_comm_s,"
                "estimate_ep_comm_s,"
              : "sequence_parallel,estimate_s,estimate_compute_s,estimate_tp_comm_s,")
      << "estimate_bubble_s,estimate_pp_comm_s,estimate_dp_exposed_s,status,rank,iteration_time_s,tokens_per_"
         "s,"
         "mfu,peak_memory_bytes,bubble_fraction,exposed_comm_fraction,compute_fraction\n";
  const auto ranking = simulated_ranking(report);
  for (const auto& row : report.rows) {
    const auto& p = row.plan;
    const auto cellv = [&](const char* key) {
      if (!p.contains(key))
        return std::string();
      return p[key].is_string() ? p[key].get<std::string>() : p[key].dump();
    };
    out << fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},", row.estimate_rank, row.key,
                       csv_field(row.label), cellv("tp"), cellv("pp"), cellv("dp"), cellv("context_parallel"),
                       cellv("virtual_stages"), cellv("micro_batch_size"), cellv("schedule"),
                       cellv("recompute"), cellv("zero_stage"), cellv("sequence_parallel"));
    if (moe)
      out << cellv("expert_parallel") << ',';
    out << fmt::format("{},{},{},", number(row.estimate_s), number(row.estimate_compute_s),
                       number(row.estimate_tp_comm_s));
    if (moe)
      out << number(row.estimate_ep_comm_s) << ',';
    out << fmt::format("{},{},{}", number(row.estimate_bubble_s), number(row.estimate_pp_comm_s),
                       number(row.estimate_dp_exposed_s));
    if (row.simulated) {
      const auto it = std::find(ranking.begin(), ranking.end(), &row);
      const auto& s = *row.simulated;
      out << fmt::format(",{},{},{},{},{},{},{},{},{}\n",
                         can_win(row) ? "simulated" : "does_not_fit_in_memory", it - ranking.begin() + 1,
                         number(s.iteration_time_s), number(s.tokens_per_s), number(s.mfu),
                         number(s.peak_memory_bytes), number(s.bubble_fraction),
                         number(s.exposed_comm_fraction), number(s.compute_fraction));
    } else {
      out << fmt::format(",{},,,,,,,,\n", row.selected ? "failed" : "estimated");
    }
  }
}

void write_plans_json(std::ostream& out, const PlanReport& report) {
  nlohmann::ordered_json j;
  j["schema"] = kPlansSchema;
  j["search"] = report.search;
  j["enumerated"] = report.enumerated;
  auto pruned = nlohmann::ordered_json::object();
  for (const auto& [reason, count] : report.pruned)
    pruned[reason] = count;
  j["pruned"] = pruned;
  j["feasible"] = report.rows.size();
  const auto ranking = simulated_ranking(report);
  auto ranked = nlohmann::ordered_json::array();
  for (const auto* row : ranking)
    ranked.push_back(row->key);
  j["ranking"] = ranked;
  j["explanation"] = explain_winner(report);
  auto rows = nlohmann::ordered_json::array();
  for (const auto& row : report.rows) {
    nlohmann::ordered_json r;
    r["key"] = row.key;
    r["plan"] = row.plan;
    r["estimate_rank"] = row.estimate_rank;
    r["estimate"] = {{"iteration_time_s", row.estimate_s},  {"compute_s", row.estimate_compute_s},
                     {"tp_comm_s", row.estimate_tp_comm_s}, {"bubble_s", row.estimate_bubble_s},
                     {"pp_comm_s", row.estimate_pp_comm_s}, {"dp_exposed_s", row.estimate_dp_exposed_s}};
    if (report.expert_columns)
      r["estimate"]["ep_comm_s"] = row.estimate_ep_comm_s;
    if (row.simulated) {
      const auto& s = *row.simulated;
      r["status"] = "simulated";
      r["rank"] = std::find(ranking.begin(), ranking.end(), &row) - ranking.begin() + 1;
      r["simulated"] = {{"iteration_time_s", s.iteration_time_s},
                        {"tokens_per_s", s.tokens_per_s},
                        {"mfu", s.mfu},
                        {"peak_memory_bytes", std::llround(s.peak_memory_bytes)},
                        {"bubble_fraction", s.bubble_fraction},
                        {"exposed_comm_fraction", s.exposed_comm_fraction},
                        {"compute_fraction", s.compute_fraction}};
      if (!s.fits_in_memory) {
        // Written only then, so that the files of searches whose plans fit
        // keep their bytes.
        r["fits_in_memory"] = false;
        r["memory_capacity_bytes"] = std::llround(s.memory_capacity_bytes);
        r["reason"] = does_not_fit(s);
      }
      r["folder"] = row.folder;
    } else if (row.selected) {
      r["status"] = "failed";
      r["reason"] = row.failure;
      r["folder"] = row.folder;
    } else {
      r["status"] = "estimated";
    }
    rows.push_back(r);
  }
  j["plans"] = rows;
  j["does_not_fit_in_memory"] = report.memory_pruned;
  whole_numbers_as_integers(j);
  out << j.dump(2) << '\n';
}

}  // namespace trainsim::analysis
