// `trainsim plan`'s ranking when a simulated plan's replayed memory does not
// fit (analysis/studies/plan_report.hpp): the static estimate admitted it,
// the replay says its peak exceeds the GPU's HBM, so it is marked and never
// crowned; the best plan that fits wins.
#include "analysis/studies/plan_report.hpp"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace trainsim::analysis {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

PlanRow simulated_row(const std::string& key, int estimate_rank, double iteration_s, double peak_gib,
                      bool fits) {
  PlanRow row;
  row.key = key;
  row.label = "plan " + key;
  row.plan = {{"tp", estimate_rank}, {"pp", 1}};
  row.estimate_rank = estimate_rank;
  row.estimate_s = iteration_s;
  row.selected = true;
  row.folder = "points/" + key;
  SimulatedPlan s;
  s.iteration_time_s = iteration_s;
  s.tokens_per_s = 1e5 / iteration_s;
  s.mfu = 0.4;
  s.peak_memory_bytes = peak_gib * kGiB;
  s.bubble_fraction = 0.1;
  s.exposed_comm_fraction = 0.1;
  s.compute_fraction = 0.8;
  s.fits_in_memory = fits;
  s.memory_capacity_bytes = fits ? 0 : 80 * kGiB;
  row.simulated = s;
  return row;
}

// The fastest plan (a) peaks at 85 GiB on 80 GiB GPUs; b and c fit.
PlanReport report_with_a_plan_too_big() {
  PlanReport r;
  r.rows = {simulated_row("a", 1, 1.0, 85, false), simulated_row("b", 2, 1.2, 70, true),
            simulated_row("c", 3, 1.5, 60, true)};
  return r;
}

TEST(PlanReport, APlanWhoseReplayedMemoryDoesNotFitIsRankedAfterThoseThatFitAndNotCrowned) {
  const auto report = report_with_a_plan_too_big();
  const auto ranking = simulated_ranking(report);
  ASSERT_EQ(ranking.size(), 3u);
  EXPECT_EQ(ranking[0]->key, "b");
  EXPECT_EQ(ranking[1]->key, "c");
  EXPECT_EQ(ranking[2]->key, "a");
  EXPECT_FALSE(can_win(*ranking[2]));

  const auto lines = explain_winner(report);
  ASSERT_GE(lines.size(), 2u);
  EXPECT_EQ(lines[0].rfind("Winner: plan b at 1.2", 0), 0u) << lines[0];
  bool named = false;
  for (const auto& l : lines)
    named = named || l.find(
                         "Not crowned: plan a ran faster (1s per iteration) but does not fit: replayed peak "
                         "85GiB > 80GiB of HBM") != std::string::npos;
  EXPECT_TRUE(named) << lines[1];
}

TEST(PlanReport, TheTableAndPlansFilesMarkThePlanThatDoesNotFit) {
  const auto report = report_with_a_plan_too_big();
  std::ostringstream table, csv, json;
  write_plan_table(table, report);
  write_plans_csv(csv, report);
  write_plans_json(json, report);
  const std::string t = table.str();
  EXPECT_NE(t.find("\n   1  plan b"), std::string::npos) << t;
  EXPECT_NE(t.find("\n   x  plan a"), std::string::npos) << t;
  EXPECT_NE(t.find("does not fit: replayed peak 85GiB > 80GiB of HBM"), std::string::npos) << t;
  EXPECT_NE(csv.str().find(",does_not_fit_in_memory,3,"), std::string::npos) << csv.str();
  const auto j = nlohmann::json::parse(json.str());
  EXPECT_EQ(j["ranking"][0], "b");
  EXPECT_EQ(j["plans"][0]["key"], "a");
  EXPECT_EQ(j["plans"][0]["fits_in_memory"], false);
  EXPECT_EQ(j["plans"][0]["memory_capacity_bytes"], 85899345920);
  EXPECT_FALSE(j["plans"][1].contains("fits_in_memory"));  // written only when it does not fit
}

TEST(PlanReport, WhenNoSimulatedPlanFitsThereIsNoWinner) {
  PlanReport r;
  r.rows = {simulated_row("a", 1, 1.0, 85, false)};
  const auto lines = explain_winner(r);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("No winner: every simulated plan's replayed memory exceeds its GPUs'", 0), 0u)
      << lines[0];
}

}  // namespace
}  // namespace trainsim::analysis
