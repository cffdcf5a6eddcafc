// PlanCache (sim/replay/plan_cache.hpp): the replay plans each distinct
// collective once and starts a copy of the first plan's state machine for
// every later request. A remembered plan must be the plan make_collective
// gives (the same figures, the same flows released in the same order when
// driven to its end), distinct requests must not share a plan, and what the
// cache must not remember (uneven exchanges, links that change) is planned
// anew each time.
#include <gtest/gtest.h>

#include <numeric>
#include <tuple>

#include "platforms/collective_config.hpp"
#include "sim/collectives/collectives.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/plan_cache.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using platforms::Fidelity;
using workloads::CollectiveOp;

using Released = std::vector<std::tuple<int, int, double, int, double>>;  // src, dst, bytes, tag, delay

// Starts the machine and finishes its flows first in first out until none
// is left; every flow released on the way, in order.
Released drive(Collective& machine) {
  std::vector<FlowRequest> queue;
  machine.start(queue);
  std::vector<FlowRequest> released;
  for (std::size_t next = 0; next < queue.size(); ++next) {
    released.clear();
    machine.on_flow_done(queue[next].tag, released);
    queue.insert(queue.end(), released.begin(), released.end());
  }
  EXPECT_TRUE(machine.finished());
  Released out;
  for (const auto& f : queue)
    out.emplace_back(f.src, f.dst, f.bytes, f.tag, f.delay_s);
  return out;
}

void expect_same_plan(CollectivePlan& a, CollectivePlan& b) {
  EXPECT_EQ(a.extra_latency_s, b.extra_latency_s);
  EXPECT_EQ(a.detailed_flows, b.detailed_flows);
  EXPECT_EQ(a.choice.algorithm, b.choice.algorithm);
  EXPECT_EQ(a.choice.channels, b.choice.channels);
  EXPECT_EQ(a.choice.fidelity, b.choice.fidelity);
  EXPECT_EQ(drive(*a.flows), drive(*b.flows));
}

// 4 nodes of 4 GPUs on NVSwitch; the engine owns the zone.
struct Platform {
  platforms::ClusterSpec spec = testing::uniform_cluster(4, 4, 100e9, 2e-6);
  std::unique_ptr<simgrid::s4u::Engine> engine = make_engine();
  ClusterZone* zone = new ClusterZone(spec);
};

std::vector<int> first_gpus(int n) {
  std::vector<int> gpus(static_cast<std::size_t>(n));
  std::iota(gpus.begin(), gpus.end(), 0);
  return gpus;
}

TEST(PlanCache, ARememberedPlanIsWhatMakeCollectiveGivesEveryTimeItIsAsked) {
  const Platform platform;
  const auto& zone = *platform.zone;
  PlanCache cache(true);
  for (const auto op : {CollectiveOp::all_gather, CollectiveOp::reduce_scatter, CollectiveOp::all_reduce}) {
    SCOPED_TRACE(std::string(workloads::to_string(op)));
    const CollectiveRequest request{op, first_gpus(8), 48e6, 1, CollectiveAlgorithm::automatic};
    for (int ask = 0; ask < 3; ++ask) {
      auto fresh = make_collective(request, zone);
      auto cached = cache.plan(request, 0, zone, std::nullopt);
      expect_same_plan(fresh, cached);
    }
    // The fast fidelity is another plan of the same request.
    auto fresh = make_collective(request, zone, Fidelity::fast);
    auto cached = cache.plan(request, 0, zone, Fidelity::fast);
    expect_same_plan(fresh, cached);
  }
  EXPECT_EQ(cache.size(), 6U);  // 3 ops x 2 fidelities
}

// The replay asks with the plan's number, and dates most collectives from a
// script without running a machine: a remembered plan then comes without
// one, and machine(number) makes a fresh one when it is run.
TEST(PlanCache, APlanAskedWithItsNumberComesWithoutItsMachineWhichTheNumberMakes) {
  const Platform platform;
  const auto& zone = *platform.zone;
  PlanCache cache(true);
  const CollectiveRequest request{CollectiveOp::all_reduce, first_gpus(8), 48e6, 1,
                                  CollectiveAlgorithm::automatic};
  for (int ask = 0; ask < 3; ++ask) {
    std::size_t number = PlanCache::kNotRemembered;
    auto cached = cache.plan(request, 0, zone, std::nullopt, nullptr, &number);
    EXPECT_EQ(number, 0U);
    EXPECT_EQ(cached.flows, nullptr);
    cached.flows = cache.machine(number);
    auto fresh = make_collective(request, zone);
    expect_same_plan(fresh, cached);
  }
  // Not remembered (a cache for links that change): with its machine.
  PlanCache forgetting(false);
  std::size_t number = 0;
  const auto planned = forgetting.plan(request, 0, zone, std::nullopt, nullptr, &number);
  EXPECT_EQ(number, PlanCache::kNotRemembered);
  EXPECT_NE(planned.flows, nullptr);
}

TEST(PlanCache, RequestsThatDifferInBytesFoldAlgorithmOrGroupGetTheirOwnPlans) {
  const Platform platform;
  const auto& zone = *platform.zone;
  PlanCache cache(true);
  const CollectiveRequest base{CollectiveOp::all_reduce, first_gpus(16), 64e6, 1, CollectiveAlgorithm::ring};
  auto other_bytes = base;
  other_bytes.bytes = 32e6;
  auto other_fold = base;
  other_fold.fold = 3;
  auto other_algorithm = base;
  other_algorithm.algorithm = CollectiveAlgorithm::tree;
  auto other_group = base;
  other_group.gpus = first_gpus(8);
  const std::vector<std::pair<CollectiveRequest, int>> requests{
      {base, 0}, {other_bytes, 0}, {other_fold, 0}, {other_algorithm, 0}, {other_group, 1}};
  for (const auto& [request, group] : requests) {
    auto fresh = make_collective(request, zone);
    auto cached = cache.plan(request, group, zone, std::nullopt);
    expect_same_plan(fresh, cached);
  }
  EXPECT_EQ(cache.size(), requests.size());
  // Asked again, each gets its own plan back.
  for (const auto& [request, group] : requests) {
    auto fresh = make_collective(request, zone);
    auto cached = cache.plan(request, group, zone, std::nullopt);
    expect_same_plan(fresh, cached);
  }
  EXPECT_EQ(cache.size(), requests.size());
}

// An all-to-all among 4 GPUs whose every pair sends its own byte count.
workloads::Exchange uneven_exchange() {
  workloads::Exchange exchange;
  exchange.send_bytes.assign(16, 0.0);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j)
      if (i != j)
        exchange.send_bytes[static_cast<std::size_t>(i * 4 + j)] = 1e6 * (1 + i + 2 * j);
  return exchange;
}

// The replay's estimate plans a request at the cluster's fidelity and counts
// its fast flows from the same expansion (make_collective_counting_fast): the
// plan must be the one make_collective makes alone, and the count the flows
// make_collective's fast plan releases when driven to its end (the uneven
// exchange runs step by step at fast too: no count from its edges).
TEST(PlanCache, ThePlanAndTheFastCountFromOneExpansionAreWhatThePlansMadeApartGive) {
  const Platform platform;
  const auto& zone = *platform.zone;
  ASSERT_NE(platform.spec.collectives.fidelity, Fidelity::fast);
  const auto exchange = uneven_exchange();
  CollectiveRequest uneven{CollectiveOp::all_to_all, first_gpus(4), 4e6, 1, CollectiveAlgorithm::automatic};
  uneven.exchange = &exchange;
  const CollectiveRequest ring{CollectiveOp::all_reduce, first_gpus(16), 64e6, 1, CollectiveAlgorithm::ring};
  auto folded = ring;
  folded.fold = 3;
  auto tree = ring;
  tree.algorithm = CollectiveAlgorithm::tree;
  auto hierarchical = ring;  // three phases
  hierarchical.algorithm = CollectiveAlgorithm::hierarchical;
  const CollectiveRequest chosen{CollectiveOp::all_gather, first_gpus(8), 48e6, 1,
                                 CollectiveAlgorithm::automatic};
  for (const auto& request : {ring, folded, tree, hierarchical, chosen, uneven}) {
    SCOPED_TRACE(std::string(workloads::to_string(request.op)) + " " +
                 std::string(to_string(request.algorithm)));
    auto [at, fast_flows] = make_collective_counting_fast(request, zone);
    auto alone = make_collective(request, zone);
    auto fast_alone = make_collective(request, zone, Fidelity::fast);
    const auto fast_released = drive(*fast_alone.flows).size();
    EXPECT_EQ(fast_flows.has_value(), request.exchange == nullptr);
    if (fast_flows)
      EXPECT_EQ(*fast_flows, fast_released);
    else
      EXPECT_EQ(drive(*at.flows->clone()).size(), fast_released);
    expect_same_plan(at, alone);
  }
}

TEST(PlanCache, UnevenExchangesAndChangingLinksArePlannedAnewEachTime) {
  const Platform platform;
  const auto& zone = *platform.zone;
  const auto exchange = uneven_exchange();
  CollectiveRequest uneven{CollectiveOp::all_to_all, first_gpus(4), 4e6, 1, CollectiveAlgorithm::automatic};
  uneven.exchange = &exchange;
  PlanCache remembering(true);
  auto fresh = make_collective(uneven, zone);
  auto planned = remembering.plan(uneven, 0, zone, std::nullopt);
  expect_same_plan(fresh, planned);
  EXPECT_EQ(remembering.size(), 0U);

  PlanCache forgetting(false);
  const CollectiveRequest even{CollectiveOp::all_gather, first_gpus(8), 8e6, 1,
                               CollectiveAlgorithm::automatic};
  auto first = forgetting.plan(even, 0, zone, std::nullopt);
  auto again = make_collective(even, zone);
  expect_same_plan(first, again);
  EXPECT_EQ(forgetting.size(), 0U);
}

}  // namespace
}  // namespace trainsim::sim
