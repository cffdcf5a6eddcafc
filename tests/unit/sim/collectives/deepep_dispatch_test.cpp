// DeepEP's dispatch and combine (sim/collectives/algorithms/deepep.cpp):
// which flows it posts, with what bytes, against the closed form of its
// relay, and its time when replayed by SimGrid. Each TEST is one simulation
// in its own process.
#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "sim/collectives/collectives.hpp"
#include "sim/collectives/flows.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/replay/replay.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::sim {
namespace {

using platforms::CollectiveAlgorithm;
using workloads::CollectiveOp;

// N nodes of g GPUs: NVLink B per GPU, one NIC of R per GPU.
constexpr int kNodes = 3, kPerNode = 4, kN = kNodes * kPerNode;
constexpr double kNvlink = 100e9, kNic = 25e9, kLatency = 1e-9;
// Every pair's dispatch and combine bytes, and the node share.
constexpr double kOut = 1e6, kBack = 2e6, kShare = 0.5;

platforms::ClusterSpec cluster() {
  auto c = testing::uniform_cluster(kNodes, kPerNode, kNic, kLatency);
  c.groups[0].nvlink = {kNvlink, kLatency};
  return c;
}

workloads::Exchange even_exchange() {
  workloads::Exchange x;
  x.dispatch_bytes.assign(kN * kN, kOut);
  x.combine_bytes.assign(kN * kN, kBack);
  for (int i = 0; i < kN; ++i)
    x.dispatch_bytes[i * kN + i] = x.combine_bytes[i * kN + i] = 0;
  x.send_bytes.assign(kN * kN, 0);
  for (int i = 0; i < kN; ++i)
    for (int j = 0; j < kN; ++j)
      x.send_bytes[i * kN + j] = x.dispatch_bytes[i * kN + j] + x.combine_bytes[j * kN + i];
  x.node_share = kShare;
  return x;
}

std::vector<int> all_gpus() {
  std::vector<int> gpus(kN);
  std::iota(gpus.begin(), gpus.end(), 0);
  return gpus;
}

// The relay's closed form: GPU i reaches GPU j of another node only through
// the GPU of i's local index there. That RDMA edge carries i's tokens for
// the node once (share x g x dispatch) and the node's outputs for them back
// the other way (share x g x combine); it serves both directions, so each
// RDMA edge carries share x g x (dispatch + combine). Inside a node, an
// NVLink edge x -> y carries x's own dispatch to y and combine of y's
// tokens, and the relayed traffic of the N - 1 other nodes: N x (dispatch
// + combine).
TEST(DeepepDispatch, RdmaCrossesOncePerNodeOnTheSendersRailAndNvlinkForwards) {
  auto engine = make_engine();
  const auto spec = cluster();  // the zone keeps a reference to it
  auto* zone = new ClusterZone(spec);
  const auto exchange = even_exchange();
  CollectiveRequest request{CollectiveOp::all_to_all,    all_gpus(), 1e6, 1,
                            CollectiveAlgorithm::deepep, &exchange};
  auto plan = make_collective(request, *zone);
  EXPECT_EQ(plan.choice.algorithm, CollectiveAlgorithm::deepep);
  std::vector<FlowRequest> flows;
  plan.flows->start(flows);
  int across = 0, within = 0;
  for (const auto& f : flows) {
    const int src_node = f.src / kPerNode, dst_node = f.dst / kPerNode;
    if (src_node != dst_node) {
      ++across;
      EXPECT_EQ(f.src % kPerNode, f.dst % kPerNode) << f.src << " -> " << f.dst;  // same rail
      EXPECT_DOUBLE_EQ(f.bytes, kShare * kPerNode * (kOut + kBack));
    } else {
      ++within;
      EXPECT_DOUBLE_EQ(f.bytes, kNodes * (kOut + kBack));
    }
  }
  EXPECT_EQ(across, kN * (kNodes - 1));
  EXPECT_EQ(within, kN * (kPerNode - 1));
}

// Replayed: the NICs carry (N - 1) relay edges each, the NVLink ports g - 1
// forwarding edges each, all at once; the NICs are the bottleneck here.
TEST(DeepepDispatch, ReplayTakesTheBusierOfTheNicAndNvlinkLoads) {
  workloads::TaskGraph graph;
  graph.gpu_count = kN;
  const int group = graph.add_group(all_gpus());
  const int exchange = graph.add_exchange(even_exchange());
  auto task = workloads::Task{.kind = workloads::TaskKind::collective,
                              .comm = workloads::CommKind::ep,
                              .op = CollectiveOp::all_to_all,
                              .algorithm = CollectiveAlgorithm::deepep,
                              .group = group,
                              .bytes = 1e6};
  task.exchange = exchange;
  const auto id = graph.add(task);
  auto engine = make_engine();
  const auto spec = cluster();  // the zone keeps a reference to it
  auto* zone = new ClusterZone(spec);
  graph.seal();
  const auto timeline = replay(graph, *zone);
  EXPECT_EQ(timeline.collective_choice(id)->algorithm, CollectiveAlgorithm::deepep);
  const double nic_s = (kNodes - 1) * kShare * kPerNode * (kOut + kBack) / kNic;
  const double nvlink_s = (kPerNode - 1) * kNodes * (kOut + kBack) / kNvlink;
  ASSERT_GT(nic_s, nvlink_s);
  EXPECT_NEAR(timeline.end_s / nic_s, 1.0, 1e-3);
}

}  // namespace
}  // namespace trainsim::sim
