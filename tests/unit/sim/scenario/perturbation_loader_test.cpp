// The `perturbations` section: selectors resolve to the right GPUs and links,
// and every mistake is reported at its file:line with the key and the value.
#include <gtest/gtest.h>

#include "sim/scenario/scenario.hpp"
#include "support/loader_problems.hpp"

namespace trainsim::sim {
namespace {

const std::string kBase = R"(cluster:
  gpu: A100-80GB
  nodes: 4
  gpus_per_node: 8
  nic: {bandwidth: 200Gbps, latency: 5us}
  fabric: {topology: fat_tree, nodes_per_leaf: 2}
model:
  preset: gpt3-1.3b
plan:
  dp: 2
  tp: 2
  pp: 8
  micro_batch_size: 1
  global_batch_size: 16
)";

scenario::Scenario load(const std::string& perturbations) {
  return scenario::parse_scenario_text(kBase + "perturbations:\n" + perturbations, "study.yaml");
}

// Every problem the loader reports, joined.
std::string errors_of(const std::string& perturbations) {
  return testing::loader_problems(kBase + "perturbations:\n" + perturbations, "study.yaml");
}

TEST(PerturbationLoader, SelectorsResolveRanksNodesAndStages) {
  const auto s = load(R"(  slow_gpus:
    - {gpus: [3, 1], speed: 0.8}
    - {nodes: [1], speed: 0.5, from: 1.5s, until: 3s}
    - {stages: [7], speed: 0.9}
)");
  const auto& slow = s.perturbations.slow_gpus;
  ASSERT_EQ(slow.size(), 3u);
  EXPECT_EQ(slow[0].gpus, (std::vector<int>{1, 3}));
  EXPECT_EQ(slow[1].gpus, (std::vector<int>{8, 9, 10, 11, 12, 13, 14, 15}));
  EXPECT_DOUBLE_EQ(slow[1].window.from_s, 1.5);
  EXPECT_DOUBLE_EQ(slow[1].window.until_s, 3);
  // 32 GPUs, pp 8: stage 7 is ranks 28..31.
  EXPECT_EQ(slow[2].gpus, (std::vector<int>{28, 29, 30, 31}));
}

TEST(PerturbationLoader, EverySectionReads) {
  const auto s = load(R"(  throttling:
    - {gpus: [0], profile: [{at: 0s, speed: 1}, {at: 2s, speed: 0.7}]}
  stragglers:
    probability: 0.01
    speed: {distribution: lognormal, median: 0.6, sigma: 0.3}
    duration: {distribution: uniform, min: 30s, max: 10min}
  links:
    - {links: [node1-nic3, leaf0-uplink], bandwidth_factor: 0.5, flap: {period: 200ms, duty: 0.25}}
    - {links: [leaf1-uplink], down: true, uplinks: 4, from: 1s}
  failures: {gpu_mtbf: 50000h, restart_delay: 10min, checkpoint_interval: 30min,
             storage_bandwidth: 100GBps, run_time: 24h}
)");
  const auto& p = s.perturbations;
  ASSERT_EQ(p.throttling.size(), 1u);
  EXPECT_DOUBLE_EQ(p.throttling[0].points[1].speed, 0.7);
  EXPECT_TRUE(p.stragglers.enabled);
  EXPECT_EQ(p.stragglers.gpus.size(), 32u);
  EXPECT_DOUBLE_EQ(p.stragglers.duration_s.b, 600);
  ASSERT_EQ(p.links.size(), 2u);
  EXPECT_DOUBLE_EQ(p.links[0].period_s, 0.2);
  EXPECT_EQ(p.links[1].uplinks, 4);
  EXPECT_DOUBLE_EQ(p.failures.gpu_mtbf_s, 50000.0 * 3600);
  EXPECT_DOUBLE_EQ(p.failures.run_time_s, 24 * 3600.0);
}

TEST(PerturbationLoader, BadValuesNameFileLineKeyAndValue) {
  const auto e = errors_of(R"(  slow_gpus:
    - {gpus: [40], speed: 1.5}
    - {stages: [2], nodes: [0], speed: 0.5, from: 3s, until: 1s}
  stragglers:
    probability: 2
    speed: {distribution: gamma}
    duration: {distribution: fixed, value: 10}
  links:
    - {links: [node9-nic0], bandwidth_factor: 0.5}
    - {links: [node0-nic0]}
  failures: {gpu_mtbf: 5 years, run_time: 1h}
  wobble: true
)");
  EXPECT_NE(e.find("study.yaml:17:"), std::string::npos) << e;
  EXPECT_NE(e.find("'40' is not valid (expected a list of integers between 0 and 31"), std::string::npos)
      << e;
  EXPECT_NE(e.find("perturbations.slow_gpus.0.speed: 1.5 is out of range"), std::string::npos) << e;
  EXPECT_NE(e.find("give the GPUs by one of gpus"), std::string::npos) << e;
  EXPECT_NE(e.find("perturbations.slow_gpus.1.until: the window ends before it starts"), std::string::npos)
      << e;
  EXPECT_NE(e.find("perturbations.stragglers.probability: 2 is out of range"), std::string::npos) << e;
  EXPECT_NE(e.find("perturbations.stragglers.speed.distribution"), std::string::npos) << e;
  EXPECT_NE(e.find("'gamma'"), std::string::npos) << e;
  EXPECT_NE(e.find("perturbations.stragglers.duration.value"), std::string::npos) << e;
  EXPECT_NE(
      e.find("study.yaml:24:16: perturbations.links.0.links: 'node9-nic0' is not a link of this cluster"),
      std::string::npos)
      << e;
  EXPECT_NE(e.find("perturbations.links.1: changes nothing"), std::string::npos) << e;
  EXPECT_NE(e.find("perturbations.failures.gpu_mtbf: '5 years' is not a duration"), std::string::npos) << e;
  // One error per mistake: nothing cascades from a value that did not parse.
  EXPECT_EQ(e.find("must be positive"), std::string::npos) << e;
  EXPECT_EQ(e.find("no failures"), std::string::npos) << e;
  EXPECT_EQ(e.find("speed.value"), std::string::npos) << e;
  EXPECT_NE(e.find("perturbations.wobble"), std::string::npos) << e;
}

}  // namespace
}  // namespace trainsim::sim
