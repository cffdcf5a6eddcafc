// The quotient ring (sim/collectives/quotient_ring.cpp): ring steps under a
// rotation of their endpoints, one state per orbit of ring positions, must
// hand on exactly the flows the whole machine hands on when it runs inside a
// FoldedCollective (sim/replay/folded_collective.hpp: every image of a
// representative's flow ends with it): the same endpoints, bytes, delays and
// tags in the same order, whatever order the flows in flight end in, and it
// must finish at the same end. Where the rotation does not map the rings'
// steps onto themselves there is no quotient (the replay then runs the whole
// machine).
#include <gtest/gtest.h>

#include <random>
#include <tuple>

#include "sim/collectives/flows.hpp"
#include "sim/replay/folded_collective.hpp"
#include "sim/replay/replica_fold.hpp"

namespace trainsim::sim {
namespace {

using Released = std::vector<std::tuple<int, int, double, int, double>>;  // src, dst, bytes, tag, delay

// The rotation g -> (g + period) mod gpus on GPU endpoints; representatives
// 0 .. period-1.
ReplicaFold rotation(int gpus, int period) {
  ReplicaFold fold;
  fold.replicas = gpus;
  fold.period = period;
  fold.order = gpus / period;
  for (int g = 0; g < gpus; ++g) {
    fold.endpoint_image.push_back((g + period) % gpus);
    fold.representative.push_back(g < period ? 1 : 0);
  }
  return fold;
}

// Ends a flow in flight chosen at random (seeded), until none is left;
// returns the flows released on the way, in order, and checks that both
// machines agree on being finished after every end.
std::pair<Released, Released> drive_both(Collective& a, Collective& b, unsigned seed) {
  std::mt19937 pick(seed);
  Released out_a, out_b;
  std::vector<FlowRequest> flight_a, flight_b, ra, rb;
  a.start(flight_a);
  b.start(flight_b);
  const auto append = [](Released& to, const std::vector<FlowRequest>& flows) {
    for (const auto& f : flows)
      to.emplace_back(f.src, f.dst, f.bytes, f.tag, f.delay_s);
  };
  append(out_a, flight_a);
  append(out_b, flight_b);
  while (!flight_a.empty() && flight_a.size() == flight_b.size()) {
    const std::size_t k = std::uniform_int_distribution<std::size_t>(0, flight_a.size() - 1)(pick);
    const int tag_a = flight_a[k].tag;
    const int tag_b = flight_b[k].tag;
    flight_a.erase(flight_a.begin() + static_cast<std::ptrdiff_t>(k));
    flight_b.erase(flight_b.begin() + static_cast<std::ptrdiff_t>(k));
    ra.clear();
    rb.clear();
    a.on_flow_done(tag_a, ra);
    b.on_flow_done(tag_b, rb);
    append(out_a, ra);
    append(out_b, rb);
    flight_a.insert(flight_a.end(), ra.begin(), ra.end());
    flight_b.insert(flight_b.end(), rb.begin(), rb.end());
    EXPECT_EQ(a.finished(), b.finished());
  }
  EXPECT_TRUE(flight_a.empty() && flight_b.empty());
  EXPECT_TRUE(a.finished());
  EXPECT_TRUE(b.finished());
  return {std::move(out_a), std::move(out_b)};
}

struct RingCase {
  std::string name;
  int gpus;
  int period;
  std::vector<std::vector<int>> rings;
  int steps;
  int in_flight;
};

std::vector<RingCase> ring_cases() {
  return {
      // Successor in another orbit (period 2 of 8: rank i's successor i + 1).
      {"8 ranks, 2 classes of 4, one in flight", 8, 2, {{0, 1, 2, 3, 4, 5, 6, 7}}, 14, 1},
      {"8 ranks, 2 classes of 4, NCCL_STEPS in flight", 8, 2, {{0, 1, 2, 3, 4, 5, 6, 7}}, 14, 8},
      // The ring closes within one orbit (period 1: every rank is an image
      // of rank 0, its successor the image by one step).
      {"4 ranks, one class", 4, 1, {{0, 1, 2, 3}}, 6, 1},
      {"4 ranks, one class, 3 in flight", 4, 1, {{0, 1, 2, 3}}, 6, 3},
      // Two channels in opposite directions, 4 classes of 2.
      {"two channels, 4 classes", 8, 4, {{0, 1, 2, 3, 4, 5, 6, 7}, {7, 6, 5, 4, 3, 2, 1, 0}}, 7, 2},
      // Two rings that are images of each other.
      {"two rings swapped", 8, 4, {{0, 1, 2, 3}, {4, 5, 6, 7}}, 3, 1},
      // Both kinds at once (period 2 of 8): two rings each closing within
      // one orbit ({0 2 4 6}, {1 3 5 7}) beside one through all ranks.
      {"closing and open rings", 8, 2, {{0, 2, 4, 6}, {1, 3, 5, 7}, {0, 1, 2, 3, 4, 5, 6, 7}}, 6, 2},
      // A ring whose successor skips (0 2 4 6 1 3 5 7) under period 2: edge
      // 6 -> 1 maps onto 0 -> 3, not an edge; no quotient (checked below).
  };
}

TEST(QuotientRing, HandsOnTheFlowsOfTheWholeRingDrivenWithItsImages) {
  for (const auto& c : ring_cases()) {
    SCOPED_TRACE(c.name);
    const ReplicaFold fold = rotation(c.gpus, c.period);
    std::vector<double> chunk(c.rings.size(), 1.5e6);
    std::vector<std::vector<double>> delays;
    for (const auto& ring : c.rings)
      delays.emplace_back(ring.size(), 2e-6);
    for (unsigned seed = 1; seed <= 20; ++seed) {
      auto quotient = make_ring_steps(c.rings, c.steps, chunk, c.in_flight, delays)
                          ->quotient({&fold.endpoint_image, &fold.representative, fold.order});
      ASSERT_NE(quotient, nullptr);
      FoldedCollective whole(make_ring_steps(c.rings, c.steps, chunk, c.in_flight, delays), fold);
      const auto [q, w] = drive_both(*quotient, whole, seed);
      std::size_t positions = 0;
      for (const auto& ring : c.rings)
        positions += ring.size();
      // One flow per representative position and step: 1/m of the ring's.
      EXPECT_EQ(q.size(),
                static_cast<std::size_t>(c.steps) * positions / static_cast<std::size_t>(fold.order));
      EXPECT_TRUE(q == w) << "seed " << seed;
    }
  }
}

// Ends a flow in flight chosen at random (seeded) until none is left;
// returns how many flows the machine started.
std::size_t driven_flows(Collective& machine, unsigned seed) {
  std::mt19937 pick(seed);
  std::vector<FlowRequest> flight, released;
  machine.start(flight);
  std::size_t flows = flight.size();
  while (!flight.empty()) {
    const std::size_t k = std::uniform_int_distribution<std::size_t>(0, flight.size() - 1)(pick);
    const int tag = flight[k].tag;
    flight.erase(flight.begin() + static_cast<std::ptrdiff_t>(k));
    released.clear();
    machine.on_flow_done(tag, released);
    flows += released.size();
    flight.insert(flight.end(), released.begin(), released.end());
  }
  EXPECT_TRUE(machine.finished());
  return flows;
}

// The replay's estimate counts a ring's flows from its shape
// (Collective::flow_count) instead of driving it: the whole ring's, the
// quotient ring's and a sequence of phases' counts are the driven counts,
// whatever order the flows end in; a machine started, or one that cannot
// send (no send in flight allowed), has none.
TEST(QuotientRing, FlowCountFromTheShapeIsTheDrivenCount) {
  for (const auto& c : ring_cases()) {
    SCOPED_TRACE(c.name);
    const ReplicaFold fold = rotation(c.gpus, c.period);
    const std::vector<double> chunk(c.rings.size(), 1.5e6);
    for (unsigned seed = 1; seed <= 5; ++seed) {
      auto whole = make_ring_steps(c.rings, c.steps, chunk, c.in_flight);
      auto quotient = whole->quotient({&fold.endpoint_image, &fold.representative, fold.order});
      ASSERT_NE(quotient, nullptr);
      const auto whole_count = whole->flow_count();
      const auto quotient_count = quotient->flow_count();
      ASSERT_TRUE(whole_count && quotient_count);
      EXPECT_EQ(*whole_count, driven_flows(*whole, seed));
      EXPECT_EQ(*quotient_count, driven_flows(*quotient, seed));
      EXPECT_EQ(*quotient_count * static_cast<std::size_t>(fold.order), *whole_count);
      EXPECT_FALSE(whole->flow_count());  // driven: started
      EXPECT_FALSE(quotient->flow_count());
    }
  }
  std::vector<std::unique_ptr<Collective>> phases;
  phases.push_back(make_ring_steps({{0, 1, 2}}, 4, {1e6}, 2));
  phases.push_back(make_flow_set({{0, 1, 1e6, 0}, {1, 2, 1e6, 0}}));
  phases.push_back(make_ring_steps({{3, 2, 1, 0}, {0, 1, 2, 3}}, 3, {1e6, 1e6}, 1));
  auto sequence = make_sequence(std::move(phases));
  ASSERT_TRUE(sequence->flow_count());
  EXPECT_EQ(*sequence->flow_count(), 12u + 2u + 24u);
  EXPECT_EQ(*sequence->flow_count(), driven_flows(*sequence->clone(), 3));
  EXPECT_FALSE(make_ring_steps({{0, 1, 2}}, 4, {1e6}, 0)->flow_count());
  std::vector<std::unique_ptr<Collective>> with_unknown;
  with_unknown.push_back(make_chain_pipeline({{0, 1, 2}}, 4, {1e6}));
  EXPECT_FALSE(make_sequence(std::move(with_unknown))->flow_count());
}

TEST(QuotientRing, FoldSpanningCollectiveTakesTheQuotientWhenThereIsOne) {
  const ReplicaFold fold = rotation(8, 2);
  auto ring = fold_spanning_collective(make_ring_steps({{0, 1, 2, 3, 4, 5, 6, 7}}, 14, {1e6}, 1), fold);
  std::vector<FlowRequest> first;
  ring->start(first);
  ASSERT_EQ(first.size(), 2u);  // ranks 0 and 1 only
  EXPECT_EQ(first[0].src, 0);
  EXPECT_EQ(first[1].src, 1);
  EXPECT_EQ(dynamic_cast<FoldedCollective*>(ring.get()), nullptr);
  // No quotient form (a chain pipeline): the whole machine, folded.
  auto chain = fold_spanning_collective(make_chain_pipeline({{0, 1, 2, 3, 4, 5, 6, 7}}, 4, {1e6}), fold);
  EXPECT_NE(dynamic_cast<FoldedCollective*>(chain.get()), nullptr);
}

TEST(QuotientRing, IsRefusedWhereTheRotationDoesNotMapTheStepsOntoThemselves) {
  const ReplicaFold fold = rotation(8, 2);
  const EndpointSymmetry symmetry{&fold.endpoint_image, &fold.representative, fold.order};
  const std::vector<int> ring{0, 1, 2, 3, 4, 5, 6, 7};
  // The symmetric ring has one.
  EXPECT_NE(make_ring_steps({ring}, 14, {1e6}, 1)->quotient(symmetry), nullptr);
  // An edge whose image is no edge of the ring.
  EXPECT_EQ(make_ring_steps({{0, 2, 4, 6, 1, 3, 5, 7}}, 14, {1e6}, 1)->quotient(symmetry), nullptr);
  // A rank whose sends pay another delay than its image's.
  std::vector<double> delay(8, 1e-6);
  delay[5] = 3e-6;
  EXPECT_EQ(make_ring_steps({ring}, 14, {1e6}, 1, {delay})->quotient(symmetry), nullptr);
  // Two channels on the same edges (an edge would name two positions).
  EXPECT_EQ(make_ring_steps({ring, ring}, 14, {1e6, 1e6}, 1)->quotient(symmetry), nullptr);
  // Two channels mapped onto each other with different chunk bytes: the
  // reversed ring is its own image here, so take a rotation that swaps two
  // rings: 0 1 2 3 and 4 5 6 7 under g -> g + 4.
  const ReplicaFold swap = rotation(8, 4);
  const EndpointSymmetry swapping{&swap.endpoint_image, &swap.representative, swap.order};
  EXPECT_NE(make_ring_steps({{0, 1, 2, 3}, {4, 5, 6, 7}}, 3, {1e6, 1e6}, 1)->quotient(swapping), nullptr);
  EXPECT_EQ(make_ring_steps({{0, 1, 2, 3}, {4, 5, 6, 7}}, 3, {1e6, 2e6}, 1)->quotient(swapping), nullptr);
  // A machine already started has no quotient.
  auto started = make_ring_steps({ring}, 14, {1e6}, 1);
  std::vector<FlowRequest> out;
  started->start(out);
  EXPECT_EQ(started->quotient(symmetry), nullptr);
  // The identity (order 1) is no fold.
  const ReplicaFold none = rotation(8, 8);
  EXPECT_EQ(make_ring_steps({ring}, 14, {1e6}, 1)
                ->quotient({&none.endpoint_image, &none.representative, none.order}),
            nullptr);
}

}  // namespace
}  // namespace trainsim::sim
