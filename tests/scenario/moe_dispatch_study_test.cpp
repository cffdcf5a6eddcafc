// The study of EP degree x dispatch implementation x routing skew
// (scenarios/study-moe-dispatch.yaml), run through `trainsim sweep` as
// shipped, narrowed with --only to EP 8 (one node) and EP 16 (two nodes), and
// held to the qualitative claims docs/moe.md ("Study: EP degree x dispatch x
// routing skew") draws from the full run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// The study's rows by "ep dispatcher variant".
std::map<std::string, json> dispatch_study_rows(const fs::path& dir) {
  std::map<std::string, json> out;
  const json results = json::parse(read_file(dir / "results.json"));
  for (const auto& row : results["rows"]) {
    std::string key = row["plan.expert_parallel"].dump();
    key.append(" ").append(row["plan.moe_dispatcher"].get<std::string>());
    key.append(" ").append(row["variant"].get<std::string>());
    out[key] = row;
  }
  return out;
}

double dispatch_study_figure(const json& row, const std::string& name) {
  EXPECT_EQ(row["status"], "ok") << row.dump();
  return row.contains(name) && row[name].is_number() ? row[name].get<double>() : 0.0;
}

// Bytes that left the nodes through their NICs in the point's iteration:
// links.csv's `nodeN-nicK_UP` rows (EP all-to-alls and gradient reduction).
double study_nic_bytes_out(const fs::path& point_dir) {
  std::istringstream csv(read_file(point_dir / "links.csv"));
  std::string line;
  std::getline(csv, line);  // link,name,bandwidth_Bps,bytes,...
  double total = 0;
  while (std::getline(csv, line)) {
    std::vector<std::string> cells;
    std::istringstream fields(line);
    for (std::string cell; std::getline(fields, cell, ',');)
      cells.push_back(cell);
    const std::string& name = cells.at(1);
    if (name.rfind("node", 0) == 0 && name.find("-nic") != std::string::npos && name.size() > 3 &&
        name.compare(name.size() - 3, 3, "_UP") == 0)
      total += std::stod(cells.at(3));
  }
  return total;
}

const std::vector<std::string> kStudyDispatchers = {"all_to_all", "deepep"};

// Zipf routing (s 0.2 and 0.5, seeded) against balanced, on the same plan:
// the busiest expert GPU sets the pace of each MoE layer, so skew only adds
// time, more with more skew; and with fewer experts per GPU (a wider EP
// group) a GPU's load averages over fewer experts, so the same skew costs
// more at EP 16 than at EP 8.
TEST(MoeDispatchStudy, SkewedRoutingIsNeverFasterThanBalancedAndCostsMoreOnAWiderEpGroup) {
  const auto dir = fresh_dir("study-moe-skew");
  const auto r = run_cli({"sweep", "scenarios/study-moe-dispatch.yaml", "--out", dir.string(), "-j", "2",
                          "--quiet", "--keep", "summary", "--only", "plan.expert_parallel=8,16", "--only",
                          "variant=balanced,zipf-0.2,zipf-0.5"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  auto rows = dispatch_study_rows(dir);
  ASSERT_EQ(rows.size(), 12u);
  const std::string imbalance = "lost_time.by_cause.expert_imbalance.fraction_of_gpu_time";
  const std::string busiest = "model.moe.routing.mean_busiest_rank_factor";
  for (const std::string ep : {"8", "16"})
    for (const auto& d : kStudyDispatchers) {
      const auto& balanced = rows[ep + " " + d + " balanced"];
      const auto& mild = rows[ep + " " + d + " zipf-0.2"];
      const auto& strong = rows[ep + " " + d + " zipf-0.5"];
      EXPECT_LT(dispatch_study_figure(balanced, "iteration_time_s"),
                dispatch_study_figure(mild, "iteration_time_s"))
          << ep << d;
      EXPECT_LT(dispatch_study_figure(mild, "iteration_time_s"),
                dispatch_study_figure(strong, "iteration_time_s"))
          << ep << d;
      EXPECT_GT(dispatch_study_figure(balanced, "tokens_per_s_per_gpu"),
                dispatch_study_figure(strong, "tokens_per_s_per_gpu"))
          << ep << d;
      // The lost time is blamed on the imbalance, and only under skew.
      EXPECT_EQ(dispatch_study_figure(balanced, imbalance), 0.0) << ep << d;
      EXPECT_GT(dispatch_study_figure(mild, imbalance), 0.0) << ep << d;
      EXPECT_GT(dispatch_study_figure(strong, imbalance), dispatch_study_figure(mild, imbalance)) << ep << d;
    }
  for (const auto& d : kStudyDispatchers)
    for (const std::string v : {"zipf-0.2", "zipf-0.5"}) {
      const auto& one_node = rows["8 " + d + " " + v];
      const auto& two_nodes = rows["16 " + d + " " + v];
      EXPECT_GT(dispatch_study_figure(two_nodes, busiest), dispatch_study_figure(one_node, busiest))
          << d << v;
      EXPECT_GT(dispatch_study_figure(two_nodes, imbalance), dispatch_study_figure(one_node, imbalance))
          << d << v;
    }
  EXPECT_TRUE(fs::exists(dir / "plots" / "expert-imbalance.svg"));
  fs::remove_all(dir);
}

// Balanced and Zipf 0.5 routing, each dispatcher at EP 8 (one node: the all-to-alls stay
// on NVLink) and EP 16 (two nodes of 128 experts each). Inside a node the two
// dispatchers send nothing through the NICs but the gradient reduction, the
// same bytes. Across nodes a token's 8 copies have 4 experts on the other
// node on average: NCCL's all-to-all sends the 4, DeepEP's relay one copy
// (the other node is reached by all but 0.4% of the tokens), forwarded over
// NVLink there; fewer bytes through the NICs, less exposed, faster. Skewed
// routing (Zipf 0.5) moves the same copies, so the same holds under it.
TEST(MoeDispatchStudy, HierarchicalDispatchSendsFewerNicBytesOnlyWhenTheEpGroupSpansNodes) {
  const auto dir = fresh_dir("study-moe-nic");
  const auto r =
      run_cli({"sweep", "scenarios/study-moe-dispatch.yaml", "--out", dir.string(), "-j", "2", "--quiet",
               "--only", "variant=balanced,zipf-0.5", "--only", "plan.expert_parallel=8,16"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  auto rows = dispatch_study_rows(dir);
  ASSERT_EQ(rows.size(), 8u);
  std::map<std::string, double> nic;
  for (const auto& [key, row] : rows)
    nic[key] = study_nic_bytes_out(dir / "points" / row["point"].get<std::string>());
  for (const std::string v : {"balanced", "zipf-0.5"}) {
    EXPECT_GT(nic["8 all_to_all " + v], 0.0) << v;  // the expert and dense gradients
    EXPECT_NEAR(nic["8 deepep " + v], nic["8 all_to_all " + v], 1e-9 * nic["8 all_to_all " + v]) << v;
    EXPECT_LT(nic["16 deepep " + v], 0.8 * nic["16 all_to_all " + v]) << v;
  }
  const std::string exposed_ep = "utilization.exposed_comm_by_kind_fraction.ep";
  EXPECT_LT(dispatch_study_figure(rows["16 deepep balanced"], exposed_ep),
            dispatch_study_figure(rows["16 all_to_all balanced"], exposed_ep));
  EXPECT_LT(dispatch_study_figure(rows["16 deepep balanced"], "iteration_time_s"),
            dispatch_study_figure(rows["16 all_to_all balanced"], "iteration_time_s"));
  fs::remove_all(dir);
}

// Balanced routing with 32 micro-batches per GPU (variant balanced-32mb), where
// the expert gradients' reduction is a few percent of the iteration: what is
// left of EP across nodes is its all-to-all bytes over the NICs against the
// one-node group's NVLink. NCCL's all-to-all loses throughput at EP 16
// (measured -13.5%); DeepEP's relay, a token once per node, gains a little
// (+3.3%) and beats NCCL at EP 16 by about a quarter (+24.8%).
TEST(MoeDispatchStudy, OnceGradientsAreAmortisedOnlyHierarchicalDispatchGainsFromASecondNode) {
  const auto dir = fresh_dir("study-moe-amortised");
  const auto r = run_cli({"sweep", "scenarios/study-moe-dispatch.yaml", "--out", dir.string(), "-j", "2",
                          "--quiet", "--keep", "summary", "--only", "variant=balanced-32mb,zipf-0.2",
                          "--only", "plan.expert_parallel=8,16"});
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  auto rows = dispatch_study_rows(dir);
  ASSERT_EQ(rows.size(), 8u);
  const std::string per_gpu = "tokens_per_s_per_gpu";
  const std::string gradients = "utilization.exposed_comm_by_kind_fraction.dp";
  for (const auto& d : kStudyDispatchers)
    EXPECT_LT(dispatch_study_figure(rows["8 " + d + " balanced-32mb"], gradients), 0.1) << d;
  EXPECT_LT(dispatch_study_figure(rows["16 all_to_all balanced-32mb"], per_gpu),
            0.95 * dispatch_study_figure(rows["8 all_to_all balanced-32mb"], per_gpu));
  EXPECT_GT(dispatch_study_figure(rows["16 deepep balanced-32mb"], per_gpu),
            dispatch_study_figure(rows["8 deepep balanced-32mb"], per_gpu));
  EXPECT_GT(dispatch_study_figure(rows["16 deepep balanced-32mb"], per_gpu),
            1.15 * dispatch_study_figure(rows["16 all_to_all balanced-32mb"], per_gpu));
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::testing
