// Contention in a whole training iteration: the data-parallel all-reduces of
// a stage's TP ranks cross the leaf uplinks together; oversubscribing those
// uplinks slows the gradient synchronisation and the iteration.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "support/cli.hpp"
#include "support/scenario_text.hpp"

namespace trainsim::testing {
namespace {

nlohmann::json run_with(const std::string& oversubscription) {
  const auto file = write_temp_file("contention.yaml", kFatTreeContentionScenario);
  const auto out = file.parent_path() / "out";
  const auto r = run_cli({"run", file.string(), "-q", "--out", out.string(), "--set",
                          "cluster.fabric.oversubscription=" + oversubscription});
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(read_file(out / "summary.json"));
}

double mean_communication_s(const nlohmann::json& summary) {
  double total = 0;
  for (const auto& gpu : summary["gpus"])
    total += gpu["communication_s"].get<double>();
  return total / static_cast<double>(summary["gpus"].size());
}

TEST(ContentionScenario, OversubscribedUplinksSlowTheGradientAllReduces) {
  const auto full = run_with("1");
  const auto thin = run_with("8");
  EXPECT_GT(mean_communication_s(thin), 1.5 * mean_communication_s(full));
  EXPECT_GT(thin["iteration_time_s"].get<double>(), full["iteration_time_s"].get<double>());
}

}  // namespace
}  // namespace trainsim::testing
