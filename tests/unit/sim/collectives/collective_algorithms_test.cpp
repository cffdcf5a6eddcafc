// Every collective algorithm, replayed as SimGrid flows on an uncontended
// network of uniform links, against its closed form. Each TEST is one
// simulation in its own process.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

struct Outcome {
  double time_s;
  analysis::CollectiveChoice choice;
};

// One collective over `gpus`, alone on the cluster.
Outcome run(const platforms::ClusterSpec& cluster, CollectiveOp op, std::vector<int> gpus, double bytes,
            CollectiveAlgorithm algorithm = CollectiveAlgorithm::automatic) {
  workloads::TaskGraph graph;
  graph.gpu_count = cluster.gpu_count();
  const int group = graph.add_group(std::move(gpus));
  const auto id = graph.add({.kind = workloads::TaskKind::collective,
                             .comm = workloads::CommKind::dp,
                             .op = op,
                             .algorithm = algorithm,
                             .group = group,
                             .bytes = bytes});
  auto engine = make_engine();
  auto* zone = new ClusterZone(cluster);
  graph.seal();
  const auto timeline = replay(graph, *zone);
  return {timeline.end_s, *timeline.collective_choice(id)};
}

std::vector<int> first(int n) {
  std::vector<int> gpus(static_cast<std::size_t>(n));
  std::iota(gpus.begin(), gpus.end(), 0);
  return gpus;
}

// n GPUs on one NVSwitch node: per-GPU bandwidth B, GPU-to-GPU latency a.
constexpr double B = 100e9, a = 2e-6, S = 256e6;

TEST(CollectiveAlgorithms, RingReduceScatterIsNMinusOneSteps) {
  const int n = 8;
  const auto r = run(testing::uniform_cluster(1, n, B, a), CollectiveOp::reduce_scatter, first(n), S);
  EXPECT_EQ(r.choice.algorithm, CollectiveAlgorithm::ring);
  EXPECT_NEAR(r.time_s / ((n - 1) * (a + S / (n * B))), 1.0, 1e-6);
}

TEST(CollectiveAlgorithms, RingAllGatherIsNMinusOneSteps) {
  const int n = 6;
  const auto r = run(testing::uniform_cluster(1, n, B, a), CollectiveOp::all_gather, first(n), S);
  EXPECT_NEAR(r.time_s / ((n - 1) * (a + S / (n * B))), 1.0, 1e-6);
}

TEST(CollectiveAlgorithms, MultiNodeRingUsesOneChannelPerRail) {
  // 4 nodes x 8 GPUs; NVLink far faster than the NICs: each of the 8 rings
  // (one per NIC) carries S/8 and its inter-node hops set its pace.
  const int nodes = 4, g = 8, n = nodes * g;
  auto cluster = testing::uniform_cluster(nodes, g, 25e9, 5e-6);
  cluster.groups[0].nvlink = {1000e9, 1e-6};
  const auto r = run(cluster, CollectiveOp::all_reduce, first(n), S, CollectiveAlgorithm::ring);
  EXPECT_EQ(r.choice.channels, g);
  const double per_step = 5e-6 + S / g / n / 25e9;
  EXPECT_NEAR(r.time_s / (2 * (n - 1) * per_step), 1.0, 1e-3);
}

// A latency-bound ring across nodes: 4 nodes x 8 GPUs, NVLink hops of 1 us,
// NIC hops of 5 us, 1,000 B per ring step. One step in flight per rank:
// every step waits for a NIC hop, 62 x 5 us. Steps in flight: each chunk
// crosses its path once, 28 NVLink and 4 NIC hops a lap plus the worst 30
// of the next lap (26 x 1 + 4 x 5), 94 us; with 2, a rank behind a NIC sends
// a step every (5 us + b) / 2.
platforms::ClusterSpec latency_bound_rings(int in_flight, platforms::Fidelity fidelity) {
  auto cluster = testing::uniform_cluster(4, 8, 25e9, 5e-6);
  cluster.groups[0].nvlink = {1000e9, 1e-6};
  cluster.collectives.ring_steps_in_flight = in_flight;
  cluster.collectives.fidelity = fidelity;
  return cluster;
}
constexpr double kRingStepBytes = 1000;
constexpr double kNicStep_s = kRingStepBytes / 25e9;

double latency_bound_ring_time(int in_flight, platforms::Fidelity fidelity) {
  const double bytes = kRingStepBytes * 8 * 32;  // S/(C n) per step, 8 rings of 32
  return run(latency_bound_rings(in_flight, fidelity), CollectiveOp::all_reduce, first(32), bytes,
             CollectiveAlgorithm::ring)
      .time_s;
}

TEST(CollectiveAlgorithms, OneRingStepInFlightPaysTheNicLatencyAtEveryStep) {
  const double t = latency_bound_ring_time(1, platforms::Fidelity::detailed);
  EXPECT_NEAR(t / (62 * (5e-6 + kNicStep_s)), 1.0, 1e-3);
}

TEST(CollectiveAlgorithms, RingStepsInFlightPayEachHopsLatencyOncePerChunkPath) {
  const double t = latency_bound_ring_time(64, platforms::Fidelity::detailed);
  // The path's 62 hops also carry their bytes (NVLink's are negligible).
  EXPECT_NEAR(t / (94e-6 + 8 * kNicStep_s), 1.0, 0.01);
}

TEST(CollectiveAlgorithms, RingStepsInFlightFastFidelityChargesThePathLatency) {
  const double t = latency_bound_ring_time(64, platforms::Fidelity::fast);
  EXPECT_NEAR(t / (94e-6 + 62 * kNicStep_s), 1.0, 1e-3);
}

TEST(CollectiveAlgorithms, TwoRingStepsInFlightHalveTheNicLatencyPerStep) {
  const double t = latency_bound_ring_time(2, platforms::Fidelity::detailed);
  EXPECT_NEAR(t / (62 * (5e-6 + kNicStep_s) / 2), 1.0, 0.03);
}

TEST(CollectiveAlgorithms, TwoRingStepsInFlightFastFidelityChargesTheirPace) {
  const double t = latency_bound_ring_time(2, platforms::Fidelity::fast);
  EXPECT_NEAR(t / (62 * (5e-6 + kNicStep_s) / 2), 1.0, 1e-3);
}

// NCCL's protocol costs (collectives.protocol) on the same rings: with
// Simple each NVLink hop costs 3.4 us and each NIC hop 14 us, NCCL_STEPS = 8
// steps in flight. An all-reduce chunk's path crosses 54 NVLink and 8 NIC
// hops: 54 x 3.4 + 8 x 14 = 295.6 us, NCCL's own ring latency
// (nsteps - nInterSteps) x intra + nInterSteps x inter, nInterSteps = 2 x 4
// nodes (src/graph/tuning.cc).
constexpr double kSimpleRingLatency_s = 54 * 3.4e-6 + 8 * 14e-6;

double protocol_ring_time(platforms::RingProtocol protocol, platforms::Fidelity fidelity,
                          double step_bytes = kRingStepBytes) {
  auto cluster = latency_bound_rings(1, fidelity);
  cluster.collectives.ring_protocol = protocol;
  return run(cluster, CollectiveOp::all_reduce, first(32), step_bytes * 8 * 32, CollectiveAlgorithm::ring)
      .time_s;
}

TEST(CollectiveAlgorithms, SimpleProtocolRingPaysNcclsStepCostsAlongTheChunksPath) {
  const double t = protocol_ring_time(platforms::RingProtocol::simple, platforms::Fidelity::detailed);
  EXPECT_NEAR(t / (kSimpleRingLatency_s + 8 * kNicStep_s), 1.0, 0.01);
}

TEST(CollectiveAlgorithms, SimpleProtocolRingFastFidelityChargesNcclsRingLatency) {
  const double t = protocol_ring_time(platforms::RingProtocol::simple, platforms::Fidelity::fast);
  EXPECT_NEAR(t / (kSimpleRingLatency_s + 62 * kNicStep_s), 1.0, 1e-3);
}

TEST(CollectiveAlgorithms, AutoProtocolPicksLlForALatencyBoundRing) {
  // LL: 0.6 us x 1.8 per NVLink hop (above the 1 us wire), the NIC's own
  // 5 us (above LL's 2.7), four times the bytes. Its path: 54 x 1.08 + 8 x 5.
  const double t = protocol_ring_time(platforms::RingProtocol::automatic, platforms::Fidelity::fast);
  EXPECT_NEAR(t / (54 * 1.08e-6 + 8 * 5e-6 + 62 * 4 * kNicStep_s), 1.0, 1e-3);
}

TEST(CollectiveAlgorithms, AutoProtocolPicksSimpleForABandwidthBoundRing) {
  // 1 MB per ring step: Simple's 296 us of latency beat LL128's 148 us plus
  // 8% more time on the bytes (2.48 ms on the NICs).
  const double step_bytes = 1e6;
  const double t =
      protocol_ring_time(platforms::RingProtocol::automatic, platforms::Fidelity::fast, step_bytes);
  EXPECT_NEAR(t / (kSimpleRingLatency_s + 62 * step_bytes / 25e9), 1.0, 1e-3);
}

TEST(CollectiveAlgorithms, ProtocolLeavesSingleNodeRingsOnTheirWireLatencies) {
  auto cluster = testing::uniform_cluster(1, 8, B, a);
  cluster.collectives.ring_protocol = platforms::RingProtocol::simple;
  const int n = 8;
  const auto r = run(cluster, CollectiveOp::all_gather, first(n), S);
  EXPECT_NEAR(r.time_s / ((n - 1) * (a + S / (n * B))), 1.0, 1e-6);
}

TEST(CollectiveAlgorithms, CubeMeshRingsUseEveryNvlinkLane) {
  // DGX-1: three edge-disjoint Hamiltonian cycles over the 6 lanes of each
  // GPU, each run in both directions: 6 rings of S/6, each hop on one lane
  // (B/6), so the all-reduce runs at the full per-GPU NVLink bandwidth.
  auto cluster = testing::uniform_cluster(1, 8, B, a);
  cluster.groups[0].shape = platforms::NodeShape::cube_mesh;
  cluster.groups[0].pcie = {16e9, 5e-6};
  const int n = 8;
  const auto r = run(cluster, CollectiveOp::all_reduce, first(n), S);
  EXPECT_EQ(r.choice.channels, 6);
  EXPECT_NEAR(r.time_s / (2 * (n - 1) * (a + S / (n * B))), 1.0, 1e-6);
}

TEST(CollectiveAlgorithms, TreeAllReduceMatchesThePipelinedTreeClosedForm) {
  // 4 nodes x 1 GPU. NCCL's trees: 0 <- 2 <- {1, 3} and its mirror
  // 3 <- 1 <- {0, 2}, each carrying S/2. GPUs 1 and 2 are inner nodes of one
  // tree and leaves of the other: 2S leave and enter each of them. The
  // pipeline is 2 x height = 4 hops deep, with K chunks (64 here).
  const int n = 4, chunks = 64;
  const double bw = 25e9, lat = 1e-7;
  auto cluster = testing::uniform_cluster(n, 1, bw, lat);
  cluster.collectives.max_pipeline_chunks = chunks;
  const auto r = run(cluster, CollectiveOp::all_reduce, first(n), S, CollectiveAlgorithm::tree);
  EXPECT_EQ(r.choice.algorithm, CollectiveAlgorithm::tree);
  const double stage = lat + 2 * S / bw / chunks;
  EXPECT_NEAR(r.time_s / ((4 + chunks - 1) * stage), 1.0, 0.05);
  // The bandwidth term alone: 2S over the busiest NIC direction.
  EXPECT_GT(r.time_s, 2 * S / bw);
}

// With NCCL's costs on (collectives.protocol), a tree reaches only the share
// of its bandwidth NCCL's treeCorrectionFactor gives its size: the closed
// form above with the bytes divided by that share.
double corrected_tree_time_ratio(double bytes, double share) {
  const int n = 4, chunks = 64;
  const double bw = 25e9, lat = 1e-7;
  auto cluster = testing::uniform_cluster(n, 1, bw, lat);
  cluster.collectives.max_pipeline_chunks = chunks;
  cluster.collectives.ring_protocol = platforms::RingProtocol::simple;
  const auto r = run(cluster, CollectiveOp::all_reduce, first(n), bytes, CollectiveAlgorithm::tree);
  return r.time_s / ((4 + chunks - 1) * (lat + 2 * bytes / share / bw / chunks));
}

TEST(CollectiveAlgorithms, TreeWithNcclsCostsReachesSevenTenthsOfItsBandwidthAt32MiB) {
  EXPECT_NEAR(corrected_tree_time_ratio(32.0 * (1 << 20), 0.7), 1.0, 0.05);
}

TEST(CollectiveAlgorithms, TreeWithNcclsCostsIsNotCorrectedFrom512MiB) {
  EXPECT_NEAR(corrected_tree_time_ratio(512.0 * (1 << 20), 1.0), 1.0, 0.05);
}

TEST(CollectiveAlgorithms, HierarchicalIsThreeRingPhases) {
  const int nodes = 4, g = 4, n = nodes * g;
  const double b_nv = 200e9, a_nv = 1e-6, b_nic = 25e9, a_nic = 5e-6;
  auto cluster = testing::uniform_cluster(nodes, g, b_nic, a_nic);
  cluster.groups[0].nvlink = {b_nv, a_nv};
  const auto r = run(cluster, CollectiveOp::all_reduce, first(n), S, CollectiveAlgorithm::hierarchical);
  EXPECT_EQ(r.choice.algorithm, CollectiveAlgorithm::hierarchical);
  const double intra = (g - 1) * (a_nv + S / (g * b_nv));                    // reduce-scatter, all-gather
  const double inter = 2 * (nodes - 1) * (a_nic + S / g / (nodes * b_nic));  // all-reduce of S/g per rail
  EXPECT_NEAR(r.time_s / (2 * intra + inter), 1.0, 1e-6);
}

TEST(CollectiveAlgorithms, NvlsReducesInTheSwitch) {
  // Each GPU pushes S into the switch and gets S back: S per direction of its
  // port at the 0.744 of the port's rate that multimem transfers reach,
  // pipelined in K chunks two hops deep, plus NCCL's 25 us NVLS latency
  // (docs/collectives.md, H100 constants).
  const int n = 8, chunks = 64;
  auto cluster = testing::uniform_cluster(1, n, B, 1e-7);
  cluster.groups[0].nvls = true;
  cluster.collectives.max_pipeline_chunks = chunks;
  const auto r = run(cluster, CollectiveOp::all_reduce, first(n), S, CollectiveAlgorithm::nvls);
  EXPECT_EQ(r.choice.algorithm, CollectiveAlgorithm::nvls);
  const double nvls_B = 0.744 * B;
  EXPECT_NEAR(r.time_s / ((chunks + 1) * (1e-7 + S / chunks / nvls_B) + 25e-6), 1.0, 1e-6);
  // Against a ring's 2(n-1)/n S/B: NVLS moves less per GPU.
  EXPECT_LT(r.time_s, 2.0 * (n - 1) / n * S / B);
}

TEST(CollectiveAlgorithms, NvlsReducesAcrossTheTraysOfOneNvlinkDomain) {
  // 4 trays of 4 GPUs joined into one 16-GPU NVLink domain (NVL72-like):
  // one in-switch reduction over all 16 ports, at the group's
  // nvls_efficiency; the slow NICs carry nothing.
  const int n = 16, chunks = 64;
  auto cluster = testing::uniform_cluster(4, 4, 25e9, 5e-6);
  cluster.groups[0].nvlink = {B, 1e-7};
  cluster.groups[0].nvlink_domain = n;
  cluster.groups[0].nvls = true;
  cluster.groups[0].nvls_efficiency = 0.6;
  cluster.collectives.max_pipeline_chunks = chunks;
  const auto r = run(cluster, CollectiveOp::all_reduce, first(n), S, CollectiveAlgorithm::nvls);
  EXPECT_EQ(r.choice.algorithm, CollectiveAlgorithm::nvls);
  EXPECT_NEAR(r.time_s / ((chunks + 1) * (1e-7 + S / chunks / (0.6 * B)) + 25e-6), 1.0, 1e-6);
}

TEST(CollectiveAlgorithms, RingInsideAnNvlinkDomainStaysOnNvlink) {
  // 16 GPUs on 4 trays of one domain: one ring, every hop an NVLink hop,
  // 2(n-1)(a + S/(nB)) as on one NVSwitch node.
  const int n = 16;
  auto cluster = testing::uniform_cluster(4, 4, 25e9, 5e-6);
  cluster.groups[0].nvlink = {B, a};
  cluster.groups[0].nvlink_domain = n;
  const auto r = run(cluster, CollectiveOp::all_reduce, first(n), S, CollectiveAlgorithm::ring);
  EXPECT_EQ(r.choice.channels, 1);
  EXPECT_NEAR(r.time_s / (2 * (n - 1) * (a + S / (n * B))), 1.0, 1e-6);
}

// A ring all-reduce over two NVLink domains of `domain` GPUs on trays of 4
// GPUs with a NIC each (25 GB/s, 5 us): `rails` rings, each paced by its
// NICs across domains, 2(n-1)(a + S/(rails n B)), as that many NICs of one
// node would be.
void expect_rings_across_two_domains(int domain, int rails) {
  const int n = 2 * domain;
  auto cluster = testing::uniform_cluster(n / 4, 4, 25e9, 5e-6);
  cluster.groups[0].nvlink = {1000e9, 1e-6};
  cluster.groups[0].nvlink_domain = domain;
  const auto r = run(cluster, CollectiveOp::all_reduce, first(n), S, CollectiveAlgorithm::ring);
  EXPECT_EQ(r.choice.channels, rails);
  const double per_step = 5e-6 + S / rails / n / 25e9;
  EXPECT_NEAR(r.time_s / (2 * (n - 1) * per_step), 1.0, 1e-3);
}

TEST(CollectiveAlgorithms, RingAcrossNvlinkDomainsRunsOneChannelPerNicOfTheDomain) {
  // 2 trays per domain: 8 NICs, 8 rings.
  expect_rings_across_two_domains(8, 8);
}

TEST(CollectiveAlgorithms, RingAcrossNvlinkDomainsTakesAtMostSixteenRails) {
  // 8 trays per domain: 32 NICs, 16 rings (kMaxRingRails).
  expect_rings_across_two_domains(32, platforms::kMaxRingRails);
}

TEST(CollectiveAlgorithms, AllToAllInsideAnNvlinkDomainUsesOnlyNvlinkPorts) {
  const int n = 16;
  auto cluster = testing::uniform_cluster(4, 4, 25e9, 5e-6);
  cluster.groups[0].nvlink = {B, a};
  cluster.groups[0].nvlink_domain = n;
  const auto r = run(cluster, CollectiveOp::all_to_all, first(n), S);
  EXPECT_NEAR(r.time_s / (a + (n - 1) * S / n / B), 1.0, 1e-6);
}

// 8 GPUs, every pair on a link of B/7 per direction (MI300X-like).
platforms::ClusterSpec full_mesh_node() {
  auto cluster = testing::uniform_cluster(1, 8, B, a);
  cluster.groups[0].shape = platforms::NodeShape::full_mesh;
  cluster.groups[0].pcie = {B, a};
  return cluster;
}

TEST(CollectiveAlgorithms, FullMeshRingAllReduceRunsSevenRingsOnALinkEach) {
  // 7 rings of S/7, each hop on its own link of B/7: 2(n-1)(a + S/(nB)), what
  // one ring on a switch port of B gives; a single ring would get B/7.
  const int n = 8;
  const auto r = run(full_mesh_node(), CollectiveOp::all_reduce, first(n), S, CollectiveAlgorithm::ring);
  EXPECT_EQ(r.choice.channels, 7);
  EXPECT_NEAR(r.time_s / (2 * (n - 1) * (a + S / (n * B))), 1.0, 1e-6);
}

TEST(CollectiveAlgorithms, FullMeshAllToAllUsesEveryLinkAtOnce) {
  // Every pair's S/n on its own link of B/7.
  const int n = 8;
  const auto r = run(full_mesh_node(), CollectiveOp::all_to_all, first(n), S);
  EXPECT_NEAR(r.time_s / (a + S / n / (B / 7)), 1.0, 1e-6);
}

TEST(CollectiveAlgorithms, BroadcastIsAPipelinedChain) {
  const int n = 8, chunks = 64;
  auto cluster = testing::uniform_cluster(1, n, B, 1e-7);
  cluster.collectives.max_pipeline_chunks = chunks;
  const auto r = run(cluster, CollectiveOp::broadcast, first(n), S);
  EXPECT_EQ(r.choice.algorithm, CollectiveAlgorithm::ring);
  EXPECT_NEAR(r.time_s / ((n - 1 + chunks - 1) * (1e-7 + S / chunks / B)), 1.0, 1e-6);
}

// As NCCL's grouped send/recv: every pair's S/n at once, so one hop's latency
// and each GPU's port carries its n - 1 pieces together.
TEST(CollectiveAlgorithms, AllToAllPostsEveryPairAtOnce) {
  const int n = 8;
  const auto r = run(testing::uniform_cluster(1, n, B, a), CollectiveOp::all_to_all, first(n), S);
  EXPECT_EQ(r.choice.algorithm, CollectiveAlgorithm::direct);
  EXPECT_NEAR(r.time_s / (a + (n - 1) * S / n / B), 1.0, 1e-6);
}

TEST(CollectiveAlgorithms, SendRecvIsOneTransferPerRank) {
  const int n = 4;
  const auto r = run(testing::uniform_cluster(n, 1, 25e9, 5e-6), CollectiveOp::send_recv, first(n), S);
  EXPECT_NEAR(r.time_s / (5e-6 + S / 25e9), 1.0, 1e-6);
}

TEST(CollectiveAlgorithms, LaunchLatencyIsChargedOncePerCollective) {
  const int n = 8;
  auto cluster = testing::uniform_cluster(1, n, B, a);
  cluster.collectives.launch_latency_s = 30e-6;
  const auto r = run(cluster, CollectiveOp::all_reduce, first(n), S);
  EXPECT_NEAR(r.time_s - 2 * (n - 1) * (a + S / (n * B)), 30e-6, 1e-9);
}

}  // namespace
}  // namespace trainsim::sim
