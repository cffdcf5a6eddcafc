// An isolated run dated again from another start (IsolatedRunner::rerun,
// docs/performance.md, "Isolated runs dated again") against the long path,
// run() of a fresh machine from that start: the same flows, routes, dates,
// order, claims and end, bit for bit, or `other_order` exactly when run()
// finishes the flows in another order; `doesnt_fit` exactly when run() does
// not fit the claims. Likewise a quotient ring dated from an alike ring's
// script on other GPUs (IsolatedRunner::rerun_moved), refused when its
// links differ. SimGrid runs one engine per process: run each TEST
// with its own --gtest_filter.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>

#include "sim/collectives/collectives.hpp"
#include "sim/collectives/flows.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/isolated_run.hpp"
#include "sim/replay/link_claims.hpp"
#include "sim/replay/route_table.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

using Rerun = IsolatedRunner::Rerun;

struct Platform {
  explicit Platform(double latency_s) : spec(testing::uniform_cluster(8, 1, 25e9, latency_s)) {}
  platforms::ClusterSpec spec;
  std::unique_ptr<simgrid::s4u::Engine> engine = make_engine();
  ClusterZone* zone = new ClusterZone(spec);  // owned by the engine
  RouteTable routes{*zone};
  LinkClaims claims{routes};
};

void expect_same_run(const IsolatedRun& rerun, const IsolatedRun& run) {
  ASSERT_EQ(rerun.flows.size(), run.flows.size());
  for (std::size_t f = 0; f < run.flows.size(); ++f) {
    const ScheduledFlow& a = rerun.flows[f];
    const ScheduledFlow& b = run.flows[f];
    EXPECT_EQ(a.request.src, b.request.src) << f;
    EXPECT_EQ(a.request.dst, b.request.dst) << f;
    EXPECT_EQ(a.request.bytes, b.request.bytes) << f;
    EXPECT_EQ(a.request.tag, b.request.tag) << f;
    EXPECT_EQ(a.route, b.route) << f;
    // Doubles compared with ==: bit for bit (none is a NaN or a zero of
    // another sign here).
    EXPECT_EQ(a.start_s, b.start_s) << f;
    EXPECT_EQ(a.end_s, b.end_s) << f;
  }
  EXPECT_EQ(rerun.finish_order, run.finish_order);
  EXPECT_EQ(rerun.claims, run.claims);
  EXPECT_EQ(rerun.end_s, run.end_s);
}

// Starts spread over many binades, none a round number: each rounds the
// dates its own way.
std::vector<double> awkward_starts() {
  std::vector<double> starts;
  for (int k = 1; k <= 300; ++k)
    starts.push_back(std::ldexp(1.0 + k / 307.0, k % 40 - 20) + k * 1e-7 / 3);
  return starts;
}

// Checks rerun() against run() from every start; returns how many reruns
// found the script's order.
int expect_reruns_are_runs(Platform& p, const std::function<std::unique_ptr<Collective>()>& machine) {
  IsolatedRunner runner;
  IsolatedRun first;
  EXPECT_TRUE(runner.run(*machine(), 0.0, p.routes, p.claims, first));
  const auto script = runner.script(first);
  EXPECT_TRUE(script.has_value());
  if (!script)
    return 0;
  int done = 0;
  for (const double start : awkward_starts()) {
    IsolatedRun run, rerun;
    EXPECT_TRUE(runner.run(*machine(), start, p.routes, p.claims, run));
    const Rerun answer = IsolatedRunner::rerun(*script, start, p.claims, rerun);
    EXPECT_NE(answer, Rerun::doesnt_fit) << start;
    if (answer == Rerun::done) {
      ++done;
      expect_same_run(rerun, run);
    } else {
      EXPECT_NE(run.finish_order, first.finish_order) << start;
    }
  }
  return done;
}

std::vector<int> all_gpus() {
  return {0, 1, 2, 3, 4, 5, 6, 7};
}

TEST(IsolatedRerun, AnAlikeRingDatedFromAnotherStartIsItsRunBitForBit) {
  Platform p(5e-6);
  const auto ring = [&] {
    return make_collective({workloads::CollectiveOp::all_reduce, all_gpus(), 512e6 / 3, 1,
                            platforms::CollectiveAlgorithm::ring},
                           *p.zone, platforms::Fidelity::detailed)
        .flows;
  };
  // A ring's steps end together (ties by index) whatever the start.
  EXPECT_EQ(expect_reruns_are_runs(p, ring), 300);
}

// Two chains on two disjoint routes without latency: one flow of 3 chunks
// against three flows of one chunk each released one after the other, so
// their ends, equal in exact arithmetic, round apart one way or the other
// with the start. The first of the two to end releases a flow of its own
// route: another order, other flows.
class RacingChains final : public Collective {
 public:
  void start(std::vector<FlowRequest>& out) override {
    out.push_back({0, 1, 3 * kChunk, 0});
    out.push_back({2, 3, kChunk, 1});
  }
  void on_flow_done(int tag, std::vector<FlowRequest>& out) override {
    ++ended_;
    if (tag >= 1 && tag < 3)
      out.push_back({2, 3, kChunk, tag + 1});
    if ((tag == 0 || tag == 3) && !released_) {
      released_ = true;
      out.push_back(tag == 0 ? FlowRequest{0, 1, kChunk, 4} : FlowRequest{2, 3, kChunk, 4});
    }
  }
  bool finished() const override { return ended_ == 5; }
  std::unique_ptr<Collective> clone() const override { return std::make_unique<RacingChains>(*this); }

 private:
  static constexpr double kChunk = 1e6 + 7;
  int ended_ = 0;
  bool released_ = false;
};

TEST(IsolatedRerun, FlowsThatEndInAnotherOrderFromAnotherStartAreLeftToTheMachine) {
  Platform p(0.0);
  ASSERT_EQ(p.routes.route(0, 1).latency_s, 0.0);
  const int done = expect_reruns_are_runs(p, [] { return std::make_unique<RacingChains>(); });
  // Both answers occur: the check is exercised, and reruns are still made.
  EXPECT_GT(done, 0);
  EXPECT_LT(done, 300);
}

// The replay keeps what script() needs only for the run it scripts (a
// plan's second): a run told it will not be scripted is the same run, bit
// for bit, and gives no script.
TEST(IsolatedRerun, ARunNotToBeScriptedIsTheSameRunAndGivesNoScript) {
  Platform p(5e-6);
  const auto ring = [&] {
    return make_collective({workloads::CollectiveOp::all_reduce, all_gpus(), 512e6 / 3, 1,
                            platforms::CollectiveAlgorithm::ring},
                           *p.zone, platforms::Fidelity::detailed)
        .flows;
  };
  IsolatedRunner runner;
  for (const double start : {0.0, 1.0 / 3, 1e3 / 7}) {
    IsolatedRun scripted, unscripted;
    ASSERT_TRUE(runner.run(*ring(), start, p.routes, p.claims, scripted));
    ASSERT_TRUE(runner.script(scripted).has_value());
    ASSERT_TRUE(runner.run(*ring(), start, p.routes, p.claims, unscripted, false));
    EXPECT_FALSE(runner.script(unscripted).has_value());
    expect_same_run(unscripted, scripted);
  }
}

TEST(IsolatedRerun, ARerunThatDoesNotFitTheClaimsIsRefusedAsTheRunIs) {
  Platform p(5e-6);
  const auto ring = [&] {
    return make_collective({workloads::CollectiveOp::all_gather, all_gpus(), 64e6, 1,
                            platforms::CollectiveAlgorithm::ring},
                           *p.zone, platforms::Fidelity::detailed)
        .flows;
  };
  IsolatedRunner runner;
  IsolatedRun first;
  ASSERT_TRUE(runner.run(*ring(), 0.0, p.routes, p.claims, first));
  const auto script = runner.script(first);
  ASSERT_TRUE(script.has_value());
  // A flow from GPU 3 to GPU 5 at its bound leaves GPU 3's NIC nothing.
  std::vector<workloads::TaskId> displaced;
  p.claims.add_flow(p.routes.route(3, 5), displaced);
  IsolatedRun run, rerun;
  EXPECT_FALSE(runner.run(*ring(), 0.25, p.routes, p.claims, run));
  EXPECT_EQ(IsolatedRunner::rerun(*script, 0.25, p.claims, rerun), Rerun::doesnt_fit);
  p.claims.remove_flow(p.routes.route(3, 5));
  EXPECT_TRUE(runner.run(*ring(), 0.25, p.routes, p.claims, run));
  EXPECT_EQ(IsolatedRunner::rerun(*script, 0.25, p.claims, rerun), Rerun::done);
  expect_same_run(rerun, run);
}

// Two 8-GPU rings folded by a half turn (the quotient by the symmetry
// g -> g + 4 within each ring, GPUs 0-3 and 8-11 its representatives): alike
// but for their endpoints, on GPUs 0-7 and 8-15, one GPU a node.
struct FoldedRings {
  std::vector<int> image;
  std::vector<char> representative;
  FoldedRings() {
    for (int g = 0; g < 16; ++g) {
      image.push_back(g / 8 * 8 + (g % 8 + 4) % 8);
      representative.push_back(static_cast<char>(g % 8 < 4));
    }
  }
  std::unique_ptr<Collective> ring(int first_gpu, double bytes = 96e6 / 7) const {
    std::vector<int> gpus;
    for (int g = first_gpu; g < first_gpu + 8; ++g)
      gpus.push_back(g);
    // All-reduce: 2(n-1) steps of a chunk, one at a time.
    return make_quotient_ring_steps({gpus}, 14, {bytes / 8}, 1, std::vector<double>(8, 0.0),
                                    {&image, &representative, 2});
  }
};

// 16 nodes of one GPU, GPU `slow`'s NIC (when given) at half bandwidth.
platforms::ClusterSpec sixteen_nodes(int slow = -1) {
  platforms::ClusterSpec spec = testing::uniform_cluster(16, 1, 25e9, 5e-6);
  if (slow < 0)
    return spec;
  platforms::NodeGroup before = spec.groups[0], one = before, after = before;
  before.nodes = slow;
  one.nodes = 1;
  one.nic.bandwidth_Bps /= 2;
  after.nodes = 16 - slow - 1;
  spec.groups = {before, one, after};
  return spec;
}

TEST(IsolatedRerun, AQuotientRingDatedFromAnAlikeRingsScriptOnOtherGpusIsItsRunBitForBit) {
  const platforms::ClusterSpec spec = sixteen_nodes();
  const auto engine = make_engine();
  auto* zone = new ClusterZone(spec);  // owned by the engine
  RouteTable routes{*zone};
  LinkClaims claims{routes};
  const FoldedRings rings;
  ASSERT_NE(rings.ring(0), nullptr);
  EXPECT_TRUE(rings.ring(0)->alike_but_endpoints(*rings.ring(8)));
  EXPECT_FALSE(rings.ring(0)->alike_but_endpoints(*rings.ring(8, 96e6 / 5)));  // other bytes
  IsolatedRunner runner;
  IsolatedRun first;
  ASSERT_TRUE(runner.run(*rings.ring(0), 0.0, routes, claims, first));
  const auto script = runner.script(first);
  ASSERT_TRUE(script.has_value());
  int done = 0;
  for (const double start : awkward_starts()) {
    IsolatedRun run, rerun;
    ASSERT_TRUE(runner.run(*rings.ring(8), start, routes, claims, run));
    const Rerun answer = IsolatedRunner::rerun_moved(*script, *rings.ring(8), start, routes, claims, rerun);
    ASSERT_NE(answer, Rerun::doesnt_fit) << start;
    ASSERT_NE(answer, Rerun::other_links) << start;
    if (answer == Rerun::done) {
      ++done;
      expect_same_run(rerun, run);
    } else {
      EXPECT_NE(run.finish_order, first.finish_order) << start;
    }
  }
  EXPECT_EQ(done, 300);
  // The moved ring's claims refuse it as they refuse its run: a flow from
  // GPU 11 to GPU 13 at its bound leaves GPU 11's NIC nothing.
  std::vector<workloads::TaskId> displaced;
  claims.add_flow(routes.route(11, 13), displaced);
  IsolatedRun run, rerun;
  EXPECT_FALSE(runner.run(*rings.ring(8), 0.25, routes, claims, run));
  EXPECT_EQ(IsolatedRunner::rerun_moved(*script, *rings.ring(8), 0.25, routes, claims, rerun),
            Rerun::doesnt_fit);
}

TEST(IsolatedRerun, AQuotientRingWithASlowerLinkIsNotDatedFromAnAlikeRingsScript) {
  const platforms::ClusterSpec spec = sixteen_nodes(10);
  const auto engine = make_engine();
  auto* zone = new ClusterZone(spec);  // owned by the engine
  RouteTable routes{*zone};
  LinkClaims claims{routes};
  const FoldedRings rings;
  // Alike machines (their requests do not see the links) ...
  ASSERT_TRUE(rings.ring(0)->alike_but_endpoints(*rings.ring(8)));
  IsolatedRunner runner;
  IsolatedRun first, run, rerun;
  ASSERT_TRUE(runner.run(*rings.ring(0), 0.0, routes, claims, first));
  const auto script = runner.script(first);
  ASSERT_TRUE(script.has_value());
  // ... whose runs differ: GPU 10's sends and receptions take twice as long.
  ASSERT_TRUE(runner.run(*rings.ring(8), 0.0, routes, claims, run));
  EXPECT_GT(run.end_s, first.end_s);
  EXPECT_EQ(IsolatedRunner::rerun_moved(*script, *rings.ring(8), 0.0, routes, claims, rerun),
            Rerun::other_links);
}

}  // namespace
}  // namespace trainsim::sim
