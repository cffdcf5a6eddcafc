// The `cluster` section: presets and overrides, user-defined GPUs, node
// shapes, NICs, fabrics, mixed groups, collectives, and the errors bad
// platform input gets. No SimGrid here: parsing only.
#include <gtest/gtest.h>

#include "platforms/input_error.hpp"
#include "platforms/presets.hpp"
#include "sim/scenario/cluster_loader.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::sim {
namespace {

using platforms::FabricTechnology;
using platforms::FabricTopology;
using platforms::NodeShape;

platforms::ClusterSpec parse(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  return scenario::parse_cluster_text(yaml, "c.yaml", overrides);
}

std::vector<std::string> problems(const std::string& yaml, const std::vector<std::string>& overrides = {}) {
  try {
    parse(yaml, overrides);
  } catch (const platforms::InputError& e) {
    return e.problems();
  }
  return {};
}

void expect_one(const std::vector<std::string>& p, const std::string& where, const std::string& key,
                const std::string& detail) {
  ASSERT_EQ(p.size(), 1u) << (p.empty() ? "no error" : p[0] + (p.size() > 1 ? "\n" + p[1] : ""));
  EXPECT_NE(p[0].find(where), std::string::npos) << p[0];
  EXPECT_NE(p[0].find(key), std::string::npos) << p[0];
  EXPECT_NE(p[0].find(detail), std::string::npos) << p[0];
}

TEST(ClusterConfig, EveryShippedPresetLoads) {
  ASSERT_EQ(platforms::cluster_presets().size(), 11u);
  for (const auto& preset : platforms::cluster_presets()) {
    SCOPED_TRACE(std::string(preset.name));
    const auto c = scenario::load_cluster(std::string(preset.name));
    EXPECT_EQ(c.name, preset.name);
    EXPECT_GT(c.gpu_count(), 0);
  }
}

TEST(ClusterConfig, PresetsDescribeTheirHardware) {
  const auto a100 = scenario::load_cluster("dgx-a100-hdr");
  ASSERT_EQ(a100.groups.size(), 1u);
  EXPECT_EQ(a100.groups[0].gpu.name, "A100-SXM-80GB");
  EXPECT_EQ(a100.groups[0].shape, NodeShape::nvswitch);
  EXPECT_EQ(a100.groups[0].nics_per_node, 8);
  EXPECT_DOUBLE_EQ(a100.groups[0].nic.bandwidth_Bps, 200e9 / 8);
  EXPECT_EQ(a100.fabric.topology, FabricTopology::fat_tree);

  const auto h100 = scenario::load_cluster("dgx-h100-ndr");
  EXPECT_TRUE(h100.groups[0].nvls);
  EXPECT_DOUBLE_EQ(h100.groups[0].nic.bandwidth_Bps, 400e9 / 8);
  EXPECT_EQ(h100.fabric.topology, FabricTopology::rail_optimised);

  const auto v100 = scenario::load_cluster("dgx1-v100");
  EXPECT_EQ(v100.groups[0].shape, NodeShape::cube_mesh);
  EXPECT_EQ(v100.groups[0].nics_per_node, 4);
  EXPECT_TRUE(v100.groups[0].shared_nics());

  const auto roce = scenario::load_cluster("hgx-h200-roce");
  EXPECT_EQ(roce.fabric.technology, FabricTechnology::roce);
  EXPECT_EQ(roce.fabric.levels, 3);
  EXPECT_LT(roce.fabric.efficiency, scenario::load_cluster("dgx-a100-hdr").fabric.efficiency);
  EXPECT_GT(roce.groups[0].nic.latency_s, a100.groups[0].nic.latency_s);

  // DeepSeek-V3's cluster: 2,048 H800s, NVLink 200 GB/s per direction at
  // 0.82 (the report's 160 GB/s), 8 x 400 Gb/s InfiniBand per node.
  const auto h800 = scenario::load_cluster("hgx-h800-ib");
  EXPECT_EQ(h800.gpu_count(), 2048);
  EXPECT_EQ(h800.gpu_of(0).name, "H800-SXM");
  EXPECT_DOUBLE_EQ(h800.groups[0].nvlink.bandwidth_Bps, 200e9);
  EXPECT_DOUBLE_EQ(h800.groups[0].nic.bandwidth_Bps, 400e9 / 8);
  EXPECT_EQ(h800.groups[0].nics_per_node, 8);

  const auto mixed = scenario::load_cluster("mixed-a100-h100");
  ASSERT_EQ(mixed.groups.size(), 2u);
  EXPECT_EQ(mixed.gpu_of(0).name, "A100-SXM-80GB");
  EXPECT_EQ(mixed.gpu_of(128).name, "H100-SXM");
  EXPECT_EQ(mixed.gpu_count(), 256);
}

// Meta's Llama 3 RoCE cluster (Llama 3 paper, section 3.3.1): racks of 2
// servers of 8 H100 under one ToR, 192 racks per 3,072-GPU pod at full
// bisection, 1:7 into the aggregation layer, 400 Gb/s per GPU.
TEST(ClusterConfig, Llama3RocePresetIsMetasThreeTierClos) {
  const auto llama = scenario::load_cluster("llama3-h100-roce");
  EXPECT_EQ(llama.groups[0].gpu.name, "H100-SXM");
  EXPECT_EQ(llama.groups[0].gpus_per_node, 8);
  EXPECT_EQ(llama.groups[0].nics_per_node, 8);
  EXPECT_DOUBLE_EQ(llama.groups[0].nic.bandwidth_Bps, 400e9 / 8);
  EXPECT_EQ(llama.fabric.topology, FabricTopology::fat_tree);
  EXPECT_EQ(llama.fabric.technology, FabricTechnology::roce);
  EXPECT_EQ(llama.fabric.levels, 3);
  EXPECT_EQ(llama.fabric.nodes_per_leaf * llama.groups[0].gpus_per_node, 16);
  EXPECT_EQ(llama.fabric.nodes_per_leaf * llama.fabric.leaves_per_pod * llama.groups[0].gpus_per_node, 3072);
  EXPECT_DOUBLE_EQ(llama.fabric.oversubscription, 1.0);
  EXPECT_DOUBLE_EQ(llama.fabric.pod_oversubscription, 7.0);
}

TEST(ClusterConfig, BlackwellPresetsDescribeTheirHardware) {
  const auto b200 = scenario::load_cluster("dgx-b200");
  EXPECT_EQ(b200.groups[0].gpu.name, "B200");
  EXPECT_EQ(b200.groups[0].gpus_per_node, 8);
  EXPECT_EQ(b200.groups[0].gpus_per_domain(), 8);
  EXPECT_DOUBLE_EQ(b200.groups[0].nvlink.bandwidth_Bps, 900e9);  // 1.8 TB/s bidirectional
  EXPECT_DOUBLE_EQ(b200.groups[0].nic.bandwidth_Bps, 400e9 / 8);
  EXPECT_EQ(b200.groups[0].nics_per_node, 8);
  EXPECT_EQ(b200.fabric.topology, FabricTopology::rail_optimised);

  const auto nvl72 = scenario::load_cluster("gb200-nvl72");
  const auto& tray = nvl72.groups[0];
  EXPECT_EQ(tray.gpu.name, "GB200");
  EXPECT_EQ(tray.nodes, 18);
  EXPECT_EQ(tray.gpus_per_node, 4);
  EXPECT_EQ(tray.gpus_per_domain(), 72);
  EXPECT_EQ(tray.nodes_per_domain(), 18);
  EXPECT_EQ(tray.nics_per_node, 4);  // one ConnectX-7 per GPU
  EXPECT_DOUBLE_EQ(tray.nic.bandwidth_Bps, 400e9 / 8);
  EXPECT_TRUE(tray.nvls);
  EXPECT_EQ(nvl72.domain_count(), 1);
  const auto racks = scenario::load_cluster("gb200-nvl72", {"cluster.nodes=40"});
  EXPECT_EQ(racks.domain_count(), 3);  // 18 + 18 + a last rack of 4 trays
  EXPECT_EQ(racks.locate(143).domain, 1);
  EXPECT_EQ(racks.locate(144).domain, 2);
  EXPECT_EQ(racks.domain_of_node(35), 1);
}

// GB300 NVL72: GB200's rack (18 trays of 4 in one 72-GPU NVLink domain) with
// Blackwell Ultra GPUs, one 800 Gb/s ConnectX-8 per GPU on PCIe Gen6.
TEST(ClusterConfig, Gb300PresetIsGb200sRackWithBlackwellUltraAnd800GbpsNics) {
  const auto gb300 = scenario::load_cluster("gb300-nvl72");
  const auto gb200 = scenario::load_cluster("gb200-nvl72");
  const auto& tray = gb300.groups[0];
  EXPECT_EQ(tray.gpu.name, "GB300");
  EXPECT_DOUBLE_EQ(tray.gpu.hbm_bytes, 288e9);
  EXPECT_EQ(tray.nodes, 18);
  EXPECT_EQ(tray.gpus_per_node, 4);
  EXPECT_EQ(tray.gpus_per_domain(), 72);
  EXPECT_EQ(tray.nics_per_node, 4);
  EXPECT_DOUBLE_EQ(tray.nic.bandwidth_Bps, 800e9 / 8);
  EXPECT_DOUBLE_EQ(tray.nic.bandwidth_Bps, 2 * gb200.groups[0].nic.bandwidth_Bps);
  // PCIe Gen6 no longer caps the NIC (Gen5's 64 GB/s would, at 100 GB/s).
  EXPECT_GE(tray.pcie.bandwidth_Bps, tray.nic.bandwidth_Bps);
  EXPECT_DOUBLE_EQ(tray.nvlink.bandwidth_Bps, gb200.groups[0].nvlink.bandwidth_Bps);
  EXPECT_TRUE(tray.nvls);
  EXPECT_EQ(gb300.fabric.topology, FabricTopology::rail_optimised);
  EXPECT_EQ(scenario::load_cluster("gb300-nvl72", {"cluster.nodes=144"}).domain_count(), 8);
}

// Megatron's rank order on NVLink domains of 64 GPUs (16 trays of 4): with
// tp 8 and ep 8 every TP group (8 ranks) and every EP group (tp x ep = 64
// consecutive ranks) lies inside one domain.
TEST(ClusterConfig, TpAndExpertGroupsLandInsideAnNvlinkDomain) {
  const auto c = scenario::load_cluster("gb200-nvl72", {"cluster.nodes=32", "cluster.nvlink_domain=64"});
  workloads::ParallelPlan plan;
  plan.tp = 8;
  plan.ep = 8;
  plan.dp = c.gpu_count() / plan.tp;
  for (int d = 0; d < plan.dp; ++d)
    for (int t = 0; t < plan.tp; ++t) {
      EXPECT_EQ(c.locate(plan.gpu_of(0, d, t)).domain, c.locate(plan.gpu_of(0, d, 0)).domain);
      const int first_of_expert_group = plan.gpu_of(0, plan.expert_group_of(d, 0) * plan.ep, 0);
      EXPECT_EQ(c.locate(plan.gpu_of(0, d, t)).domain, c.locate(first_of_expert_group).domain) << d;
    }
  EXPECT_EQ(c.locate(plan.gpu_of(0, 8, 0)).domain, 1);  // the second EP group, the second domain
}

// Megatron's rank order (tp, cp, dp, pp) keeps a TP x CP block of 4 x 4
// consecutive: each block lies inside one NVLink domain of 64, so its context
// ring runs over NVLink; the fifth block of a 64-GPU domain starts the next.
TEST(ClusterConfig, ContextParallelGroupsLandInsideAnNvlinkDomain) {
  const auto c = scenario::load_cluster("gb200-nvl72", {"cluster.nodes=32", "cluster.nvlink_domain=64"});
  workloads::ParallelPlan plan;
  plan.tp = 4;
  plan.cp = 4;
  plan.dp = c.gpu_count() / (plan.tp * plan.cp);
  for (int d = 0; d < plan.dp; ++d)
    for (int cp = 0; cp < plan.cp; ++cp)
      for (int t = 0; t < plan.tp; ++t)
        EXPECT_EQ(c.locate(plan.gpu_of(0, d, t, cp)).domain, c.locate(plan.gpu_of(0, d, 0, 0)).domain) << d;
  EXPECT_EQ(c.locate(plan.gpu_of(0, 3, 3, 3)).domain, 0);
  EXPECT_EQ(c.locate(plan.gpu_of(0, 4, 0, 0)).domain, 1);
}

TEST(ClusterConfig, FullMeshRules) {
  const auto mi300x = scenario::load_cluster("mi300x-roce");
  EXPECT_EQ(mi300x.groups[0].gpu.name, "MI300X");
  EXPECT_EQ(mi300x.groups[0].shape, NodeShape::full_mesh);
  EXPECT_DOUBLE_EQ(mi300x.groups[0].nvlink.bandwidth_Bps, 448e9);  // 7 x 64 GB/s per direction
  EXPECT_DOUBLE_EQ(mi300x.groups[0].nic.bandwidth_Bps, 400e9 / 8);
  EXPECT_EQ(mi300x.fabric.technology, FabricTechnology::roce);
  EXPECT_EQ(mi300x.fabric.topology, FabricTopology::fat_tree);
  expect_one(problems("cluster: {gpu: MI300X, nodes: 2, gpus_per_node: 1, node_shape: full_mesh}\n"),
             "c.yaml:1:", "cluster.node_shape", "full_mesh links every pair");
  expect_one(problems("cluster: {preset: mi300x-roce, nvls: true}\n"), "c.yaml:1:", "cluster.nvls",
             "needs an NVSwitch, but node_shape is full_mesh");
  expect_one(problems("cluster: {preset: mi300x-roce, nvlink_domain: 16}\n"),
             "c.yaml:1:", "cluster.nvlink_domain", "but node_shape is full_mesh");
}

TEST(ClusterConfig, NvlinkDomainRules) {
  expect_one(problems("cluster: {gpu: B200, nodes: 18, gpus_per_node: 4, nvlink_domain: 70}\n"),
             "c.yaml:1:", "cluster.nvlink_domain", "70 is not a multiple of gpus_per_node (4)");
  expect_one(problems("cluster: {gpu: B200, nodes: 18, gpus_per_node: 4, nvlink_domain: 2}\n"),
             "c.yaml:1:", "cluster.nvlink_domain", "not a multiple of gpus_per_node");
  expect_one(problems("cluster: {preset: dgx1-v100, nvlink_domain: 16}\n"),
             "c.yaml:1:", "cluster.nvlink_domain", "which needs node_shape: nvswitch");
  expect_one(problems("cluster: {gpu: B200, nodes: 2, nvlink_domain: 0}\n"),
             "c.yaml:1:", "cluster.nvlink_domain", "");
  expect_one(problems("cluster: {preset: gb200-nvl72}\n", {"cluster.nvls_efficiency=1.5"}), "--set",
             "cluster.nvls_efficiency", "");
  // The node's own size is today's behaviour: no domain beyond the node.
  EXPECT_EQ(parse("cluster: {gpu: H100, nodes: 2, nvlink_domain: 8}\n").groups[0].nodes_per_domain(), 1);
  // A preset's NVLS efficiency survives turning NVLS off.
  EXPECT_FALSE(parse("cluster: {preset: gb200-nvl72}\n", {"cluster.nvls=false"}).groups[0].nvls);
}

TEST(ClusterConfig, ScenarioKeysOverrideAPresetKeyByKey) {
  const auto c = parse(R"(cluster:
  preset: dgx-a100-hdr
  nodes: 4
  nic: {bandwidth: 400Gbps}
  fabric: {oversubscription: 2}
)");
  EXPECT_EQ(c.node_count(), 4);
  EXPECT_DOUBLE_EQ(c.groups[0].nic.bandwidth_Bps, 50e9);
  EXPECT_EQ(c.groups[0].nics_per_node, 8);  // kept from the preset's nic map
  EXPECT_DOUBLE_EQ(c.fabric.oversubscription, 2);
  EXPECT_EQ(c.fabric.nodes_per_leaf, 2);  // kept from the preset's fabric map
  EXPECT_EQ(c.name, "dgx-a100-hdr");
}

TEST(ClusterConfig, SetOverridesPresetsAndListItems) {
  const auto c = scenario::load_cluster("mixed-a100-h100",
                                        {"cluster.groups.1.nodes=8", "cluster.fabric.oversubscription=4"});
  EXPECT_EQ(c.groups[1].nodes, 8);
  EXPECT_EQ(c.groups[0].nodes, 16);
  EXPECT_DOUBLE_EQ(c.fabric.oversubscription, 4);
  const auto p = problems("cluster: {preset: mixed-a100-h100}\n", {"cluster.groups.5.nodes=8"});
  expect_one(p, "--set cluster.groups.5.nodes=8", "cluster.groups", "not one of its indices");
}

TEST(ClusterConfig, UserDefinedGpuWithUnits) {
  const auto c = parse(R"(cluster:
  gpu:
    name: MyGPU
    peak_bf16: 500TFLOPS
    peak_fp8: 1PFLOPS
    hbm: 96GiB
    hbm_bandwidth: 3TBps
    nvlink_bandwidth: 400GBps
    max_power: 600W
  nodes: 2
)");
  const auto& gpu = c.groups[0].gpu;
  EXPECT_EQ(gpu.name, "MyGPU");
  EXPECT_DOUBLE_EQ(gpu.peak_bf16_flops, 500e12);
  EXPECT_DOUBLE_EQ(gpu.peak_fp8_flops, 1e15);
  EXPECT_DOUBLE_EQ(gpu.hbm_bytes, 96.0 * (1ull << 30));
  EXPECT_DOUBLE_EQ(gpu.hbm_bandwidth_Bps, 3e12);
  EXPECT_DOUBLE_EQ(c.groups[0].nvlink.bandwidth_Bps, 400e9);
  EXPECT_DOUBLE_EQ(gpu.max_power_W, 600);
  // Not given: idle 20%, HBM-bound kernels 70%, NCCL only 60% of max.
  EXPECT_DOUBLE_EQ(gpu.idle_power_W, 120);
  EXPECT_DOUBLE_EQ(gpu.memory_power_W, 420);
  EXPECT_DOUBLE_EQ(gpu.communication_power_W, 360);
}

TEST(ClusterConfig, UserDefinedGpuCanStartFromACatalogueGpu) {
  const auto c = parse("cluster:\n  gpu: {name: H100-fast, base: H100, peak_bf16: 1200TFLOPS}\n  nodes: 1\n");
  EXPECT_EQ(c.groups[0].gpu.name, "H100-fast");
  EXPECT_DOUBLE_EQ(c.groups[0].gpu.peak_bf16_flops, 1200e12);
  EXPECT_DOUBLE_EQ(c.groups[0].gpu.hbm_bandwidth_Bps, 3350e9);
}

TEST(ClusterConfig, UserDefinedGpuNeedsItsQuantitiesWithUnits) {
  const auto p = problems(
      "cluster:\n  gpu: {name: X, peak_bf16: 500, hbm: 96GiB, hbm_bandwidth: 3TBps, "
      "max_power: 600W}\n  nodes: 1\n");
  expect_one(p, "c.yaml:2:", "cluster.gpu.peak_bf16", "the unit is missing");
  const auto q = problems("cluster:\n  gpu: {name: X, hbm: 96GiB}\n  nodes: 1\n");
  ASSERT_EQ(q.size(), 3u);
  EXPECT_NE(q[0].find("cluster.gpu.peak_bf16: missing"), std::string::npos) << q[0];
}

TEST(ClusterConfig, MixedGroupsInheritClusterLevelKeys) {
  const auto c = parse(R"(cluster:
  nic: {bandwidth: 400Gbps}
  groups:
    - {gpu: A100, nodes: 2}
    - {gpu: H100, nodes: 3, nvls: true, nic: {bandwidth: 800Gbps}}
  fabric: {topology: fat_tree, nodes_per_leaf: 2}
)");
  ASSERT_EQ(c.groups.size(), 2u);
  EXPECT_DOUBLE_EQ(c.groups[0].nic.bandwidth_Bps, 50e9);
  EXPECT_DOUBLE_EQ(c.groups[1].nic.bandwidth_Bps, 100e9);
  EXPECT_EQ(c.node_count(), 5);
  EXPECT_EQ(c.locate(16).group, 1);
  EXPECT_EQ(c.locate(16).node, 2);
  EXPECT_EQ(c.name, "A100-SXM-80GB + H100-SXM");
}

TEST(ClusterConfig, MixedClusterWhoseNodeCountsDoNotAddUp) {
  const auto p = problems(
      "cluster:\n  nodes: 24\n  groups:\n    - {gpu: A100, nodes: 16}\n    - {gpu: H100, nodes: 16}\n");
  expect_one(p, "c.yaml:2:", "cluster.nodes", "24 does not match the groups' node counts (16 + 16 = 32)");
}

TEST(ClusterConfig, GroupWithoutNodesIsAnError) {
  const auto p = problems("cluster:\n  groups:\n    - {gpu: A100}\n");
  expect_one(p, "c.yaml:3:", "cluster.groups.0.nodes", "missing");
}

TEST(ClusterConfig, UnknownGpu) {
  const auto p = problems("cluster: {gpu: A200, nodes: 1}\n");
  expect_one(p, "c.yaml:1:", "cluster.gpu", "unknown GPU 'A200'");
  EXPECT_NE(p[0].find("H100-SXM"), std::string::npos) << p[0];
}

TEST(ClusterConfig, NegativeBandwidth) {
  const auto p = problems("cluster: {gpu: A100, nodes: 1, nic: {bandwidth: -200Gbps}}\n");
  expect_one(p, "c.yaml:1:", "cluster.nic.bandwidth", "is negative");
}

TEST(ClusterConfig, MissingUnit) {
  const auto p = problems("cluster: {gpu: A100, nodes: 1, nvlink: {latency: 3}}\n");
  expect_one(p, "c.yaml:1:", "cluster.nvlink.latency", "the unit is missing");
}

TEST(ClusterConfig, OversubscriptionBelowOne) {
  const auto p =
      problems("cluster: {gpu: A100, nodes: 8, fabric: {topology: fat_tree, oversubscription: 0.5}}\n");
  expect_one(p, "c.yaml:1:", "cluster.fabric.oversubscription", "0.5 is below 1");
}

TEST(ClusterConfig, EcmpPlanesAreAFatTreeOptionOffByDefault) {
  EXPECT_FALSE(scenario::load_cluster("llama3-h100-roce").fabric.ecmp.on());
  const auto c = parse(
      "cluster: {preset: llama3-h100-roce, nodes: 32, fabric: {ecmp: {planes: 8, flows_per_pair: 4, hash: "
      "spread, seed: 9}}}\n");
  EXPECT_EQ(c.fabric.ecmp.planes, 8);
  EXPECT_EQ(c.fabric.ecmp.flows_per_pair, 4);
  EXPECT_EQ(c.fabric.ecmp.hash, platforms::EcmpHash::spread);
  EXPECT_EQ(c.fabric.ecmp.seed, 9u);
  EXPECT_EQ(c.fabric.levels, 3);  // the preset's other fabric keys stay
  const auto d = parse("cluster: {gpu: A100, nodes: 8, fabric: {topology: fat_tree, ecmp: {planes: 4}}}\n");
  EXPECT_EQ(d.fabric.ecmp.flows_per_pair, 1);
  EXPECT_EQ(d.fabric.ecmp.hash, platforms::EcmpHash::seeded);
}

TEST(ClusterConfig, EcmpErrorsNameTheKey) {
  expect_one(
      problems("cluster: {gpu: A100, nodes: 8, fabric: {topology: single_switch, ecmp: {planes: 4}}}\n"),
      "c.yaml:1:", "cluster.fabric.ecmp", "is for fat_tree and rail_optimised fabrics");
  expect_one(
      problems("cluster: {gpu: A100, nodes: 8, fabric: {topology: fat_tree, ecmp: {flows_per_pair: 4}}}\n"),
      "c.yaml:1:", "cluster.fabric.ecmp.planes", "missing");
  expect_one(problems("cluster: {gpu: A100, nodes: 8, fabric: {topology: fat_tree, ecmp: {planes: 4, hash: "
                      "random}}}\n"),
             "c.yaml:1:", "cluster.fabric.ecmp.hash", "random");
  expect_one(problems("cluster: {gpu: A100, nodes: 8, fabric: {topology: fat_tree, ecmp: {planes: 0}}}\n"),
             "c.yaml:1:", "cluster.fabric.ecmp.planes", "0");
}

TEST(ClusterConfig, ErrorsInPresetValuesNameThePresetFile) {
  // The preset's value is fine; a --set breaks it, and the message names the option.
  const auto p = problems("cluster: {preset: dgx-a100-hdr}\n", {"cluster.nic.bandwidth=200"});
  expect_one(p, "--set cluster.nic.bandwidth=200", "cluster.nic.bandwidth", "unit is missing");
  // A rule broken by a scenario key is reported at a key the preset set: the
  // message points into the preset's file.
  const auto q = problems("cluster:\n  preset: dgx1-v100\n  gpus_per_node: 4\n");
  expect_one(q, "platforms/presets/dgx1-v100.yaml:", "cluster.node_shape",
             "cube_mesh is the 8-GPU DGX-1 hybrid cube-mesh, but gpus_per_node is 4");
  // The same key given by the scenario points at the scenario.
  const auto r = problems("cluster:\n  preset: dgx-a100-hdr\n  node_shape: pcie\n  nvls: true\n");
  expect_one(r, "c.yaml:4:", "cluster.nvls", "needs an NVSwitch, but node_shape is pcie");
}

TEST(ClusterConfig, UnknownPresetAndUnknownKeys) {
  expect_one(problems("cluster: {preset: dgx-z100}\n"), "c.yaml:1:", "cluster.preset",
             "unknown cluster preset 'dgx-z100'");
  expect_one(problems("cluster: {preset: dgx-a100-hdr, fabric: {topologie: torus}}\n"),
             "c.yaml:1:", "cluster.fabric.topologie", "unknown key");
}

TEST(ClusterConfig, NodeShapeRules) {
  expect_one(problems("cluster: {gpu: A100, nodes: 1, node_shape: pcie, nvls: true}\n"),
             "c.yaml:1:", "cluster.nvls", "needs an NVSwitch");
  expect_one(problems("cluster: {gpu: A100, nodes: 1, nic: {per_node: 3}}\n"), "c.yaml:1:", "cluster.nic",
             "expected a divisor of gpus_per_node (8)");
}

TEST(ClusterConfig, FabricRules) {
  expect_one(problems("cluster: {gpu: A100, nodes: 40, fabric: {topology: torus, dims: [4, 4, 2], "
                      "link_bandwidth: 400Gbps}}\n"),
             "c.yaml:1:", "cluster.fabric", "the torus 4 x 4 x 2 holds 32 nodes, but the cluster has 40");
  const auto p = problems("cluster: {gpu: A100, nodes: 4, fabric: {topology: dragonfly}}\n");
  ASSERT_EQ(p.size(), 2u);
  EXPECT_NE(p[0].find("cluster.fabric.local_bandwidth: missing"), std::string::npos) << p[0];
  expect_one(problems("cluster: {gpu: A100, nodes: 4, fabric: {topology: fat_tree, levels: 4}}\n"),
             "c.yaml:1:", "cluster.fabric.levels", "out of range");
}

TEST(ClusterConfig, TechnologyChoosesLatencyAndEfficiencyDefaults) {
  const auto ib = parse("cluster: {gpu: A100, nodes: 2, fabric: {topology: fat_tree}}\n");
  const auto roce = parse("cluster: {gpu: A100, nodes: 2, fabric: {topology: fat_tree, technology: roce}}\n");
  EXPECT_LT(roce.fabric.efficiency, ib.fabric.efficiency);
  EXPECT_GT(roce.groups[0].nic.latency_s, ib.groups[0].nic.latency_s);
  EXPECT_GT(roce.fabric.spine_latency_s, ib.fabric.spine_latency_s);
  const auto tuned = parse(
      "cluster: {gpu: A100, nodes: 2, nic: {latency: 3us}, fabric: {technology: roce, efficiency: 0.97}}\n");
  EXPECT_DOUBLE_EQ(tuned.fabric.efficiency, 0.97);
  EXPECT_DOUBLE_EQ(tuned.groups[0].nic.latency_s, 3e-6);
}

TEST(ClusterConfig, CollectivesSection) {
  const auto c = parse(
      "cluster: {gpu: A100, nodes: 1, collectives: {algorithm: tree, fidelity: fast, "
      "launch_latency: 10us, max_chunks: 8, steps_in_flight: 2}}\n");
  EXPECT_EQ(c.collectives.algorithm, platforms::CollectiveAlgorithm::tree);
  EXPECT_EQ(c.collectives.fidelity, platforms::Fidelity::fast);
  EXPECT_DOUBLE_EQ(c.collectives.launch_latency_s, 10e-6);
  EXPECT_EQ(c.collectives.max_pipeline_chunks, 8);
  EXPECT_EQ(c.collectives.ring_steps_in_flight, 2);
  EXPECT_EQ(parse("cluster: {gpu: A100, nodes: 1}\n").collectives.ring_steps_in_flight, 1);
  expect_one(problems("cluster: {gpu: A100, nodes: 1, collectives: {steps_in_flight: 0}}\n"),
             "c.yaml:1:", "cluster.collectives.steps_in_flight", "0 is out of range");
  expect_one(problems("cluster: {gpu: A100, nodes: 1, collectives: {algorithm: butterfly}}\n"),
             "c.yaml:1:", "cluster.collectives.algorithm", "'butterfly' is not a known value");
}

TEST(ClusterConfig, DetailedFlowLimitIsOffUnlessGivenAndACount) {
  EXPECT_EQ(parse("cluster: {gpu: A100, nodes: 1}\n").collectives.detailed_flow_limit, 0);
  EXPECT_EQ(parse("cluster: {gpu: A100, nodes: 1, collectives: {detailed_flow_limit: 100000}}\n")
                .collectives.detailed_flow_limit,
            100000);
  expect_one(problems("cluster: {gpu: A100, nodes: 1, collectives: {detailed_flow_limit: -1}}\n"),
             "c.yaml:1:", "cluster.collectives.detailed_flow_limit", "-1 is out of range");
  expect_one(problems("cluster: {gpu: A100, nodes: 1, collectives: {detailed_flow_limit: lots}}\n"),
             "c.yaml:1:", "cluster.collectives.detailed_flow_limit", "lots");
}

TEST(ClusterConfig, CollectivesProtocolIsWireUnlessAskedAndExcludesStepsInFlight) {
  EXPECT_EQ(parse("cluster: {gpu: A100, nodes: 1}\n").collectives.ring_protocol,
            platforms::RingProtocol::wire);
  EXPECT_EQ(
      parse("cluster: {gpu: A100, nodes: 1, collectives: {protocol: ll128}}\n").collectives.ring_protocol,
      platforms::RingProtocol::ll128);
  EXPECT_EQ(
      parse("cluster: {gpu: A100, nodes: 1, collectives: {protocol: auto}}\n").collectives.ring_protocol,
      platforms::RingProtocol::automatic);
  expect_one(problems("cluster: {gpu: A100, nodes: 1, collectives: {protocol: LL256}}\n"),
             "c.yaml:1:", "cluster.collectives.protocol", "'LL256' is not a known value");
  expect_one(
      problems("cluster: {gpu: A100, nodes: 1, collectives: {protocol: simple, steps_in_flight: 2}}\n"),
      "c.yaml:1:", "cluster.collectives.steps_in_flight", "applies to protocol: wire only");
}

// One word table per enum serves the reader, the schema and to_string: every
// word a scenario may give is read as its value and written back as itself.
template <class E, class Get>
void expect_words_round_trip(const platforms::ChoiceWords<E>& table, const std::string& key, Get get) {
  for (const auto& [word, value] : table) {
    EXPECT_EQ(platforms::to_string(value), word);
    const std::string yaml =
        "cluster: {gpu: A100, nodes: 1, collectives: {" + key + ": " + std::string(word) + "}}\n";
    EXPECT_EQ(get(parse(yaml).collectives), value) << yaml;
  }
}

TEST(ClusterConfig, CollectiveWordsReadBackAsThemselves) {
  expect_words_round_trip(platforms::collective_algorithm_words(), "algorithm",
                          [](const platforms::CollectiveConfig& c) { return c.algorithm; });
  expect_words_round_trip(platforms::fidelity_words(), "fidelity",
                          [](const platforms::CollectiveConfig& c) { return c.fidelity; });
  expect_words_round_trip(platforms::ring_protocol_words(), "protocol",
                          [](const platforms::CollectiveConfig& c) { return c.ring_protocol; });
  EXPECT_EQ(platforms::collective_algorithm_from_string("nvls_tree"),
            platforms::CollectiveAlgorithm::nvls_tree);
  EXPECT_FALSE(platforms::collective_algorithm_from_string("direct"));  // reported, never asked for
}

}  // namespace
}  // namespace trainsim::sim
