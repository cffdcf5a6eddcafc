// The automatic collective representation (docs/collectives.md, "Fidelity")
// against the detailed flows it stands for, through the real binary: every
// task's start and end, every GPU's totals and every link's statistics must
// be the same, on a plan where nothing contends (every collective computed
// alone) and on one where data-parallel buckets and pipeline sends cross
// oversubscribed uplinks (collectives displaced mid-way and run as flows).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli.hpp"
#include "support/scenario_text.hpp"

namespace trainsim::testing {
namespace {

struct Outputs {
  std::vector<std::string> timeline_rows;    // sorted: rows of tasks ending together may swap
  std::map<std::string, std::string> links;  // by name: link ids follow first use
  std::string per_gpu;
  nlohmann::json summary;
};

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    out.push_back(line);
  return out;
}

Outputs run_with(const std::string& fidelity, const std::vector<std::string>& sets) {
  const auto file = write_temp_file("auto.yaml", kFatTreeContentionScenario);
  const auto out = file.parent_path() / fidelity;
  std::vector<std::string> args{
      "run", file.string(), "-q", "--out", out.string(), "--set", "cluster.collectives.fidelity=" + fidelity};
  for (const auto& s : sets)
    args.insert(args.end(), {"--set", s});
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 0) << r.err;
  Outputs o;
  o.timeline_rows = lines(read_file(out / "timeline.csv"));
  std::sort(o.timeline_rows.begin(), o.timeline_rows.end());
  for (const auto& row : lines(read_file(out / "links.csv"))) {
    const auto first = row.find(',');
    const auto second = row.find(',', first + 1);
    if (first != std::string::npos && second != std::string::npos)
      o.links[row.substr(first + 1, second - first - 1)] = row.substr(second + 1);
  }
  o.per_gpu = read_file(out / "per_gpu.csv");
  o.summary = nlohmann::json::parse(read_file(out / "summary.json"));
  return o;
}

// Collectives per representation over all rows of summary.json.
std::map<std::string, int> representations(const nlohmann::json& summary) {
  std::map<std::string, int> total;
  for (const auto& row : summary["collectives"]) {
    EXPECT_EQ(row["fidelity"], "auto");
    for (const auto& [name, count] : row["representation"].items())
      total[name] += count.get<int>();
  }
  return total;
}

void expect_same_answers(const Outputs& detailed, const Outputs& automatic) {
  ASSERT_GT(detailed.timeline_rows.size(), 100u);
  EXPECT_EQ(detailed.timeline_rows, automatic.timeline_rows);
  EXPECT_EQ(detailed.links, automatic.links);
  EXPECT_EQ(detailed.per_gpu, automatic.per_gpu);
  EXPECT_EQ(detailed.summary["iteration_time_s"], automatic.summary["iteration_time_s"]);
}

TEST(AutomaticFidelity, ComputesEveryCollectiveAloneWhenNothingContendsAndAnswersAsTheDetailedFlows) {
  const auto detailed = run_with("detailed", {});
  const auto automatic = run_with("auto", {});
  expect_same_answers(detailed, automatic);
  const auto by = representations(automatic.summary);
  EXPECT_GT(by.at("isolated"), 0);
  EXPECT_EQ(by.at("isolated_then_shared"), 0);
}

TEST(AutomaticFidelity, RunsContendedCollectivesAsFlowsAndAnswersAsTheDetailedFlows) {
  // Gradient buckets overlap the backward: data-parallel all-reduces and
  // pipeline sends meet on uplinks a quarter of the NICs' bandwidth.
  const std::vector<std::string> contended{"cluster.fabric.oversubscription=4",
                                           "plan.overlap_grad_reduce=true", "plan.grad_bucket_size=20MB"};
  const auto detailed = run_with("detailed", contended);
  const auto automatic = run_with("auto", contended);
  expect_same_answers(detailed, automatic);
  const auto by = representations(automatic.summary);
  EXPECT_GT(by.at("isolated"), 0);
  EXPECT_GT(by.at("shared"), 0);
  EXPECT_GT(by.at("isolated_then_shared"), 0);
}

}  // namespace
}  // namespace trainsim::testing
