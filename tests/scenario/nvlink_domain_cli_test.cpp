// Rack-scale NVLink domains and full-mesh nodes through the real CLI: two
// GB200 NVL72 racks run with TP inside a rack's NVLink domain (and pay for
// it when the domain is cut back to a tray), an MI300X platform runs on its
// Infinity Fabric mesh, and bad cluster keys exit 1 naming the file, line,
// key, value and what was expected.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "support/run_summary.hpp"

namespace trainsim::testing {
namespace {

// Llama 3.1 8B at 4,096 tokens, TP 8 with sequence parallelism: on GB200
// trays of 4 GPUs every TP group spans two trays.
std::string llama_on(const std::string& cluster, int tp, int global_batch) {
  return "name: domain\ncluster: " + cluster +
         "\nmodel: {preset: llama3.1-8b, seq_len: 4096, layers: 8}\n"
         "plan: {tp: " +
         std::to_string(tp) + ", micro_batch_size: 1, global_batch_size: " + std::to_string(global_batch) +
         ", sequence_parallel: true, zero_stage: 1}\n";
}

TEST(NvlinkDomainCli, TwoNvl72RacksRunWithTensorParallelGroupsOnNvlink) {
  const auto scenario = write_temp_file("nvl72.yaml", llama_on("{preset: gb200-nvl72, nodes: 36}", 8, 36));
  const auto racks = run_summary({"run", scenario.string()});
  ASSERT_FALSE(racks.empty());
  EXPECT_EQ(racks["cluster"]["gpus"], 144);
  EXPECT_EQ(racks["cluster"]["groups"][0]["gpus_per_nvlink_domain"], 72);
  EXPECT_EQ(racks["plan"]["dp"], 18);
  // The same trays without the NVLink Switch trays: each TP group's
  // collectives cross two trays' NICs (50 GB/s per GPU instead of 720).
  const auto trays = run_summary({"run", scenario.string(), "--set", "cluster.nvlink_domain=4"});
  ASSERT_FALSE(trays.empty());
  EXPECT_FALSE(trays["cluster"]["groups"][0].contains("gpus_per_nvlink_domain"));
  const double tp_racks = racks["utilization"]["exposed_comm_by_kind_gpu_seconds"]["tp"].get<double>();
  const double tp_trays = trays["utilization"]["exposed_comm_by_kind_gpu_seconds"]["tp"].get<double>();
  // Measured 2026-12-03: 3.5x the exposed TP time, 1.96x the step time (the
  // data-parallel collectives lose the rack's NVLink too).
  EXPECT_GT(tp_trays, 2.5 * tp_racks);
  EXPECT_GT(trays["iteration_time_s"].get<double>(), 1.5 * racks["iteration_time_s"].get<double>());
}

TEST(NvlinkDomainCli, Mi300xPlatformRunsOnItsInfinityFabricMesh) {
  const auto scenario = write_temp_file("mi300x.yaml", llama_on("{preset: mi300x-roce, nodes: 2}", 8, 16));
  const auto out = fresh_dir("mi300x");
  const auto r = run_cli({"run", scenario.string(), "--quiet", "--out", out.string()});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto s = nlohmann::json::parse(read_file(out / "summary.json"));
  EXPECT_EQ(s["cluster"]["groups"][0]["gpu"], "MI300X");
  EXPECT_EQ(s["cluster"]["groups"][0]["node_shape"], "full_mesh");
  // The TP collectives ride the mesh's pair links (nodeN-meshA-B), no switch.
  const auto links = read_file(out / "links.csv");
  EXPECT_NE(links.find("node0-mesh0-1_UP"), std::string::npos);
  EXPECT_NE(links.find("node1-mesh6-7_DOWN"), std::string::npos);
  EXPECT_EQ(links.find("nvlink_UP"), std::string::npos);
  std::filesystem::remove_all(out);
}

// One NVL72 rack reduces in its NVLink Switch (NVLS) at every large size;
// two racks take NVLSTree, as NCCL does on MNNVL; the rack's all-to-all
// stays on NVLink (direct, at the NVLink rate), two racks' goes through
// the trays' NICs.
TEST(NvlinkDomainCli, CollectiveAnswersForOneRackAndForTwo) {
  const auto one = run_cli({"collective", "--cluster", "gb200-nvl72", "--op", "all_reduce", "--ranks", "72",
                            "--min", "256MiB", "--max", "1GiB"});
  ASSERT_EQ(one.status, 0) << one.err;
  EXPECT_NE(one.out.find("18 nodes x 4 GB200 (nvswitch, NVLink domains of 72 GPUs)"), std::string::npos)
      << one.out;
  EXPECT_NE(one.out.find(" nvls "), std::string::npos) << one.out;
  EXPECT_EQ(one.out.find("nvls_tree"), std::string::npos) << one.out;
  const auto two = run_cli({"collective", "--cluster", "gb200-nvl72", "--op", "all_reduce", "--ranks", "144",
                            "--min", "1GiB", "--max", "1GiB"});
  ASSERT_EQ(two.status, 0) << two.err;
  EXPECT_NE(two.out.find("nvls_tree"), std::string::npos) << two.out;
  for (const char* ranks : {"72", "144"}) {
    const auto a2a = run_cli({"collective", "--cluster", "gb200-nvl72", "--op", "all_to_all", "--ranks",
                              ranks, "--min", "1GiB", "--max", "1GiB", "--format", "csv"});
    ASSERT_EQ(a2a.status, 0) << a2a.err;
    const auto row = a2a.out.substr(a2a.out.rfind('\n', a2a.out.size() - 2) + 1);
    const double busbw = std::stod(row.substr(row.rfind(',') + 1));
    if (std::string(ranks) == "72")
      EXPECT_GT(busbw, 500) << row;  // NVLink ports: 720 GB/s
    else
      EXPECT_LT(busbw, 120) << row;  // half the bytes leave the rack at 50 GB/s per GPU
  }
}

// exit 1, one line naming where, the key, the bad value and what was expected.
void expect_input_error(const std::vector<std::string>& args, const std::vector<std::string>& parts) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 1) << r.out << r.err;
  for (const auto& part : parts)
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " in: " << r.err;
  EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Backtrace"), std::string::npos) << r.err;
}

// `trainsim run` on a scenario named `file` whose cluster section is
// `cluster_lines` (from line 3 on) refuses it with every one of `parts`.
void expect_cluster_refused(const std::string& file, const std::string& cluster_lines,
                            const std::vector<std::string>& parts) {
  const auto scenario =
      write_temp_file(file, "name: bad\ncluster:\n" + cluster_lines + "model: {preset: llama3.1-8b}\n");
  expect_input_error({"run", scenario.string()}, parts);
}

TEST(NvlinkDomainCli, BadDomainAndMeshKeysExitOneNamingFileLineKeyValueAndExpectation) {
  expect_cluster_refused(
      "not-a-multiple.yaml", "  gpu: GB200\n  nodes: 18\n  gpus_per_node: 4\n  nvlink_domain: 70\n",
      {"not-a-multiple.yaml:6:", "cluster.nvlink_domain", "70 is not a multiple of gpus_per_node (4)",
       "nvlink_domain: 72 for a GB200 NVL72 rack"});
  expect_cluster_refused(
      "one-gpu-mesh.yaml", "  gpu: MI300X\n  nodes: 2\n  gpus_per_node: 1\n  node_shape: full_mesh\n",
      {"one-gpu-mesh.yaml:6:", "cluster.node_shape", "gpus_per_node is 1", "expected at least 2"});
  expect_cluster_refused("mesh-domain.yaml", "  preset: mi300x-roce\n  nodes: 2\n  nvlink_domain: 16\n",
                         {"mesh-domain.yaml:5:", "cluster.nvlink_domain", "16 GPUs span 2 nodes",
                          "needs node_shape: nvswitch", "but node_shape is full_mesh"});
  expect_cluster_refused("pcie-domain.yaml",
                         "  preset: dgx-a100-hdr\n  node_shape: pcie\n  nvlink_domain: 16\n",
                         {"pcie-domain.yaml:5:", "cluster.nvlink_domain", "but node_shape is pcie"});
  // The same rules for --set and for `trainsim collective`.
  const auto racks = write_temp_file("racks.yaml", llama_on("{preset: gb200-nvl72, nodes: 36}", 8, 36));
  expect_input_error({"run", racks.string(), "--set", "cluster.nvlink_domain=10"},
                     {"--set cluster.nvlink_domain=10", "10 is not a multiple of gpus_per_node (4)"});
  expect_input_error({"collective", "--cluster", "gb200-nvl72", "--set", "cluster.nvls_efficiency=0"},
                     {"cluster.nvls_efficiency", "0 is out of range", "between 0.001 and 1"});
}

}  // namespace
}  // namespace trainsim::testing
