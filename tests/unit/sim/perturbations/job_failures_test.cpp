// The job-level failure simulation: failures, restarts and checkpoints
// account for every second of the run. Each TEST is one simulation.
#include <gtest/gtest.h>

#include "sim/perturbations/job_failures.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

TEST(JobFailures, AFailureAtAGivenTimeLosesTheWorkSinceTheLastCheckpoint) {
  auto engine = make_engine();
  const auto cluster = testing::free_network_cluster(1);
  new ClusterZone(cluster);
  scenario::Failures f;
  f.enabled = true;
  f.at_s = {333};
  f.restart_delay_s = 50;
  f.checkpoint_interval_s = 100;
  f.storage_bandwidth_Bps = 1e9;
  f.run_time_s = 1000;
  // 10 s iterations; a 5 GB checkpoint at 1 GB/s takes 5 s.
  const auto r = simulate_job_failures(f, {10.0}, 1000, 5e9 / f.checkpoint_bytes_per_parameter, 1, 1, 1);
  // Checkpoints end at 105, 210, 315; the failure at 333 cuts the second
  // iteration after the last one (1 lost + 8 s); restart until 383, then
  // checkpoints end at 488, 593, 698, 803, 908, nine iterations to 998 and
  // 2 s of one the end cuts.
  EXPECT_EQ(r.failures, 1);
  EXPECT_EQ(r.checkpoints, 8);
  EXPECT_DOUBLE_EQ(r.checkpoint_write_s, 5);
  EXPECT_EQ(r.useful_iterations, 89);
  EXPECT_EQ(r.lost_iterations, 1);
  EXPECT_NEAR(r.useful_s, 890, 1e-9);
  EXPECT_NEAR(r.lost_work_s, 18, 1e-9);
  EXPECT_NEAR(r.restart_s, 50, 1e-9);
  EXPECT_NEAR(r.checkpoint_s, 40, 1e-9);
  EXPECT_NEAR(r.unfinished_s, 2, 1e-9);
  EXPECT_NEAR(r.useful_s + r.lost_work_s + r.restart_s + r.checkpoint_s + r.unfinished_s, r.run_time_s, 1e-9);
  EXPECT_NEAR(r.goodput_tokens_per_hour, 89 * 1000 / (1000.0 / 3600), 1e-6);
  EXPECT_NEAR(r.ideal_tokens_per_hour, 1000 / 10.0 * 3600, 1e-6);
}

TEST(JobFailures, RandomFailuresAtTheirMtbfStillAddUp) {
  auto engine = make_engine();
  const auto cluster = testing::free_network_cluster(1);
  new ClusterZone(cluster);
  scenario::Failures f;
  f.enabled = true;
  f.gpu_mtbf_s = 50000.0 * 3600;
  f.restart_delay_s = 600;
  f.checkpoint_interval_s = 1800;
  f.storage_bandwidth_Bps = 50e9;
  f.run_time_s = 30 * 24 * 3600.0;
  const int gpus = 16384;
  const auto r = simulate_job_failures(f, {9.0, 11.0}, 4e6, 70e9, gpus, gpus / 8, 42);
  // 16,384 GPUs at 50,000 h each: one failure every 3.05 h, about 236 in 30
  // days (Poisson: well within 236 +/- 4 sigma).
  EXPECT_GT(r.failures, 236 - 4 * 16);
  EXPECT_LT(r.failures, 236 + 4 * 16);
  EXPECT_NEAR(r.useful_s + r.lost_work_s + r.restart_s + r.checkpoint_s + r.unfinished_s, r.run_time_s, 1e-6);
  // A failure during a restart starts it again: at most one full delay per
  // failure, and overlaps are rare at this rate.
  EXPECT_LE(r.restart_s, r.failures * 600.0 + 1e-6);
  EXPECT_GT(r.restart_s, 0.95 * r.failures * 600.0);
  EXPECT_LT(r.goodput_tokens_per_hour, r.ideal_tokens_per_hour);
}

}  // namespace
}  // namespace trainsim::sim
