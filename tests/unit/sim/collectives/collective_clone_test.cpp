// Collective::clone(): the replay tries the rest of a collective that ran as
// flows on a copy of its state machine (sim/replay/replay.cpp, try_isolate),
// keeping the original when the rest does not fit alone. A copy taken
// mid-way must release exactly the flows the original releases, in the same
// order, for every algorithm; and driving the copy must leave the original
// where it was.
#include <gtest/gtest.h>

#include <numeric>
#include <tuple>

#include "platforms/collective_config.hpp"
#include "sim/collectives/collectives.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

using Released = std::vector<std::tuple<int, int, double, int>>;  // src, dst, bytes, tag

Released as_tuples(const std::vector<FlowRequest>& flows) {
  Released out;
  for (const auto& f : flows)
    out.emplace_back(f.src, f.dst, f.bytes, f.tag);
  return out;
}

// Finishes the oldest flow in flight, first in first out, until none is
// left; returns every flow released on the way, in order.
Released drive(Collective& machine, std::vector<FlowRequest> in_flight) {
  Released all;
  std::vector<FlowRequest> released;
  for (std::size_t next = 0; next < in_flight.size(); ++next) {
    released.clear();
    machine.on_flow_done(in_flight[next].tag, released);
    const auto t = as_tuples(released);
    all.insert(all.end(), t.begin(), t.end());
    in_flight.insert(in_flight.end(), released.begin(), released.end());
  }
  EXPECT_TRUE(machine.finished());
  return all;
}

void expect_copy_continues_as_the_original(const ClusterZone& zone, CollectiveOp op, int gpus,
                                           CollectiveAlgorithm algorithm) {
  SCOPED_TRACE(std::string(workloads::to_string(op)) + " " + std::string(platforms::to_string(algorithm)));
  std::vector<int> group(static_cast<std::size_t>(gpus));
  std::iota(group.begin(), group.end(), 0);
  auto plan = make_collective({op, group, 64e6, 1, algorithm}, zone);
  auto& original = *plan.flows;
  std::vector<FlowRequest> queue;
  original.start(queue);
  ASSERT_FALSE(queue.empty());
  // Mid-way: finish about half as many flows as started at once.
  const std::size_t finish = queue.size() / 2 + 1;
  std::vector<FlowRequest> released;
  std::size_t next = 0;
  for (; next < finish && next < queue.size(); ++next) {
    released.clear();
    original.on_flow_done(queue[next].tag, released);
    queue.insert(queue.end(), released.begin(), released.end());
  }
  const std::vector<FlowRequest> pending(queue.begin() + static_cast<std::ptrdiff_t>(next), queue.end());
  ASSERT_FALSE(pending.empty());
  auto copy = original.clone();
  const auto by_copy = drive(*copy, pending);
  EXPECT_FALSE(original.finished());  // the copy's progress is its own
  const auto by_original = drive(original, pending);
  EXPECT_EQ(by_copy, by_original);
}

TEST(CollectiveClone, ACopyTakenMidwayReleasesWhatTheOriginalReleases) {
  auto engine = make_engine();
  // 4 nodes of 4 GPUs on NVSwitch with an in-switch reduction (NVLS).
  auto cluster = testing::uniform_cluster(4, 4, 100e9, 2e-6);
  for (auto& group : cluster.groups)
    group.nvls = true;
  const auto* zone = new ClusterZone(cluster);
  expect_copy_continues_as_the_original(*zone, CollectiveOp::all_reduce, 16, CollectiveAlgorithm::ring);
  expect_copy_continues_as_the_original(*zone, CollectiveOp::all_gather, 16, CollectiveAlgorithm::ring);
  expect_copy_continues_as_the_original(*zone, CollectiveOp::reduce_scatter, 8, CollectiveAlgorithm::ring);
  expect_copy_continues_as_the_original(*zone, CollectiveOp::all_reduce, 16, CollectiveAlgorithm::tree);
  expect_copy_continues_as_the_original(*zone, CollectiveOp::all_reduce, 16,
                                        CollectiveAlgorithm::hierarchical);
  expect_copy_continues_as_the_original(*zone, CollectiveOp::all_reduce, 4, CollectiveAlgorithm::nvls);
  expect_copy_continues_as_the_original(*zone, CollectiveOp::broadcast, 16, CollectiveAlgorithm::automatic);
  expect_copy_continues_as_the_original(*zone, CollectiveOp::all_to_all, 16, CollectiveAlgorithm::automatic);
}

}  // namespace
}  // namespace trainsim::sim
