// `trainsim collective` through the real binary: the nccl-tests-like table,
// the algorithm it reports, fast and detailed fidelity agreeing on an
// uncontended network, and clear errors for bad input.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {

struct Row {
  double bytes, time_us, algbw, busbw;
  std::string algorithm;
  std::string protocol;  // "" unless collectives.protocol is on
};

std::vector<Row> parse_csv(const std::string& text) {
  std::vector<Row> rows;
  std::istringstream in(text);
  std::string line;
  std::getline(in, line);
  const std::string columns = "size_bytes,count,algorithm,channels,time_us,algbw_GBps,busbw_GBps";
  EXPECT_TRUE(line == columns || line == columns + ",protocol") << line;
  const std::size_t cells = line == columns ? 7 : 8;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');)
      f.push_back(cell);
    EXPECT_EQ(f.size(), cells) << line;
    if (f.size() == cells)
      rows.push_back(
          {std::stod(f[0]), std::stod(f[4]), std::stod(f[5]), std::stod(f[6]), f[2], cells == 8 ? f[7] : ""});
  }
  return rows;
}

std::vector<Row> run_csv(std::vector<std::string> args) {
  args.insert(args.begin(), "collective");
  args.insert(args.end(), {"--format", "csv"});
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 0) << r.err;
  return parse_csv(r.out);
}

TEST(CollectiveCli, PrintsAnNcclTestsTable) {
  const auto r = run_cli({"collective", "--cluster", "dgx-a100-hdr", "--op", "all_reduce", "--ranks", "8",
                          "--min", "1MiB", "--max", "1GiB"});
  ASSERT_EQ(r.status, 0) << r.err;
  for (const char* column : {"size(B)", "count", "algorithm", "time(us)", "algbw(GB/s)", "busbw(GB/s)"})
    EXPECT_NE(r.out.find(column), std::string::npos) << column;
  EXPECT_NE(r.out.find("1073741824"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Avg bus bandwidth"), std::string::npos);
  int rows = 0;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);)
    rows += !line.empty() && line[0] != '#';
  EXPECT_EQ(rows, 11);  // 1 MiB to 1 GiB by factors of 2
}

TEST(CollectiveCli, BusBandwidthIsAlgorithmBandwidthTimesTheOpFactor) {
  const auto all_reduce = run_csv({"--ranks", "8", "--min", "64MiB", "--max", "64MiB"});
  ASSERT_EQ(all_reduce.size(), 1u);
  EXPECT_NEAR(all_reduce[0].busbw / all_reduce[0].algbw, 2.0 * 7 / 8, 1e-3);
  EXPECT_NEAR(all_reduce[0].algbw, all_reduce[0].bytes / all_reduce[0].time_us / 1e3, 1e-2);
  const auto gather = run_csv({"--op", "all_gather", "--ranks", "8", "--min", "64MiB", "--max", "64MiB"});
  EXPECT_NEAR(gather[0].busbw / gather[0].algbw, 7.0 / 8, 1e-3);
}

TEST(CollectiveCli, ReportsWhatAutoChose) {
  // 16 DGX A100 nodes: NCCL's tuner takes trees for small all-reduces and
  // rings for large ones.
  const auto rows =
      run_csv({"--ranks", "128", "--min", "64KiB", "--max", "1GiB", "-f", "16384", "--fidelity", "fast"});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].algorithm, "tree");
  EXPECT_EQ(rows[1].algorithm, "ring");
}

// fast (one flow per ring edge with the whole volume, plus the latency
// terms) against detailed (every ring step) on an uncontended network.
void expect_fidelities_agree(std::vector<std::string> args, double tolerance = 0.05) {
  auto fast = args, detailed = args;
  fast.insert(fast.end(), {"--fidelity", "fast"});
  detailed.insert(detailed.end(), {"--fidelity", "detailed"});
  const auto f = run_csv(fast), d = run_csv(detailed);
  ASSERT_EQ(f.size(), d.size());
  ASSERT_FALSE(f.empty());
  for (std::size_t i = 0; i < f.size(); ++i) {
    SCOPED_TRACE(std::to_string(f[i].bytes) + " bytes");
    EXPECT_EQ(f[i].algorithm, d[i].algorithm);
    EXPECT_NEAR(f[i].time_us / d[i].time_us, 1.0, tolerance);
  }
}

TEST(CollectiveCli, FastAgreesWithDetailedInOneNode) {
  expect_fidelities_agree({"--ranks", "8", "--min", "1KiB", "--max", "1GiB", "-f", "32"});
}

TEST(CollectiveCli, FastAgreesWithDetailedAcrossRailsOfAFatTree) {
  expect_fidelities_agree(
      {"--ranks", "32", "--algorithm", "ring", "--min", "1MiB", "--max", "1GiB", "-f", "32"});
}

TEST(CollectiveCli, FastAgreesWithDetailedForOneGpuPerNode) {
  expect_fidelities_agree({"--ranks", "16", "--algorithm", "ring", "--min", "1MiB", "--max", "1GiB", "-f",
                           "32", "--set", "cluster.gpus_per_node=1", "--set", "cluster.nic.per_node=1"});
}

TEST(CollectiveCli, FastAgreesWithDetailedForReduceScatterAndAllGather) {
  expect_fidelities_agree(
      {"--op", "reduce_scatter", "--ranks", "16", "--min", "4MiB", "--max", "256MiB", "-f", "8"});
  expect_fidelities_agree(
      {"--op", "all_gather", "--ranks", "16", "--min", "4MiB", "--max", "256MiB", "-f", "8"});
}

TEST(CollectiveCli, FastAgreesWithDetailedWithRingStepsInFlightAcrossNodes) {
  // 8 nodes of H100: 64-rank rings, one NIC hop in 8; the rings pay their
  // paths' latencies (collectives.steps_in_flight), in both fidelities. Fast
  // adds the path's latency to the busiest link's bytes; the steps overlap
  // part of the two where they are of one size (16 MiB: fast 11% slower with
  // 8 in flight, docs/collectives.md), hence 12%.
  for (const char* in_flight :
       {"cluster.collectives.steps_in_flight=2", "cluster.collectives.steps_in_flight=8"})
    expect_fidelities_agree({"--cluster", "dgx-h100-ndr", "--op", "all_gather", "--ranks", "64", "--min",
                             "1MiB", "--max", "256MiB", "-f", "16", "--set", in_flight},
                            0.12);
}

// A 64 MiB all-gather over 512 H100s (64 nodes), fast, with one setting.
double latency_bound_all_gather_us(const char* setting) {
  return run_csv({"--cluster", "dgx-h100-ndr", "--op", "all_gather", "--ranks", "512", "-b", "64MiB", "-e",
                  "64MiB", "--fidelity", "fast", "--set", setting})
      .front()
      .time_us;
}

TEST(CollectiveCli, RingStepsInFlightShortenALatencyBoundRingAcrossNodes) {
  const auto at = latency_bound_all_gather_us;
  const double one = at("cluster.collectives.steps_in_flight=1");
  const double two = at("cluster.collectives.steps_in_flight=2");
  const double eight = at("cluster.collectives.steps_in_flight=8");
  EXPECT_LT(two, 0.7 * one);
  EXPECT_LT(eight, two);
}

TEST(CollectiveCli, FastAgreesWithDetailedWithNcclProtocolsAcrossNodes) {
  // NCCL's step costs (collectives.protocol) ride on the steps as delays in
  // the detailed fidelity and in the closed form in the fast one; the same
  // bound as with steps in flight, for the same reason.
  for (const char* protocol : {"cluster.collectives.protocol=auto", "cluster.collectives.protocol=simple"})
    expect_fidelities_agree({"--cluster", "dgx-h100-ndr", "--op", "all_gather", "--ranks", "64", "--min",
                             "1MiB", "--max", "256MiB", "-f", "16", "--set", protocol},
                            0.12);
}

TEST(CollectiveCli, SaysWhenRingsPayNcclsProtocolCosts) {
  auto header = [](std::vector<std::string> extra) {
    std::vector<std::string> args{"collective", "--cluster",  "dgx-h100-ndr", "--op", "all_gather",
                                  "--ranks",    "16",         "-b",           "1MiB", "-e",
                                  "1MiB",       "--fidelity", "fast"};
    args.insert(args.end(), extra.begin(), extra.end());
    const auto r = run_cli(args);
    EXPECT_EQ(r.status, 0) << r.err;
    return r.out;
  };
  const std::string line = "# rings across nodes pay NCCL's protocol step costs (protocol ll128)";
  EXPECT_NE(header({"--set", "cluster.collectives.protocol=ll128"}).find(line), std::string::npos);
  EXPECT_EQ(header({}).find("protocol step costs"), std::string::npos);
}

// With protocols on, each size says which protocol its ring paid: `auto`
// moves from LL (latency-bound) through LL128 to Simple (bandwidth-bound) as
// NCCL's tuner does, and algorithms that keep their wire latencies (NVLSTree
// here) say wire. Without protocols the columns stay nccl-tests' own.
TEST(CollectiveCli, SaysWhichProtocolEachSizesRingPaid) {
  auto paid = [](const char* op, const char* protocol) {
    std::vector<std::string> out;
    for (const auto& r : run_csv({"--cluster", "dgx-h100-ndr", "--op", op, "--ranks", "16", "-b", "64KiB",
                                  "-e", "256MiB", "-f", "16", "--fidelity", "fast", "--set", protocol}))
      out.push_back(r.algorithm + "/" + r.protocol);
    return out;
  };
  EXPECT_EQ(paid("all_gather", "cluster.collectives.protocol=auto"),
            (std::vector<std::string>{"ring/ll", "ring/ll", "ring/ll128", "ring/simple"}));
  EXPECT_EQ(paid("all_reduce", "cluster.collectives.protocol=auto"),
            std::vector<std::string>(4, "nvls_tree/wire"));
  EXPECT_EQ(paid("all_gather", "cluster.collectives.protocol=ll128"),
            std::vector<std::string>(4, "ring/ll128"));
  const auto plain = run_cli({"collective", "--cluster", "dgx-h100-ndr", "--ranks", "16", "--format", "csv"});
  EXPECT_EQ(plain.out.substr(0, plain.out.find('\n')),
            "size_bytes,count,algorithm,channels,time_us,algbw_GBps,busbw_GBps");
}

TEST(CollectiveCli, NcclProtocolRingsComputedAloneAreTheirSimGridFlows) {
  // The automatic fidelity computes the steps, their protocol delays
  // included, without SimGrid flows (sim/replay/isolated_run.hpp) while they
  // fit their links: the detailed times, to the rounding, where a rank's
  // sends do not overlap (Simple here). Where they do (LL's quadrupled
  // bytes at 16 MiB), the ring goes back and forth between SimGrid flows
  // and computed steps, within 2% (wire rings with 8 steps in flight show
  // the same, 1.3% at 128 MiB: docs/collectives.md, "Protocols").
  for (const char* protocol : {"cluster.collectives.protocol=simple", "cluster.collectives.protocol=ll"}) {
    auto at = [&](const char* fidelity) {
      return run_csv({"--cluster", "dgx-h100-ndr", "--op", "all_reduce", "--ranks", "32", "--min", "64KiB",
                      "--max", "16MiB", "-f", "16", "--algorithm", "ring", "--fidelity", fidelity, "--set",
                      protocol});
    };
    const auto detailed = at("detailed");
    const auto automatic = at("auto");
    ASSERT_EQ(detailed.size(), automatic.size());
    const bool overlapping = std::string(protocol).ends_with("=ll");
    for (std::size_t i = 0; i < detailed.size(); ++i)
      EXPECT_NEAR(automatic[i].time_us / detailed[i].time_us, 1.0, overlapping ? 0.02 : 1e-6)
          << protocol << " " << detailed[i].bytes << " B";
  }
}

TEST(CollectiveCli, NcclProtocolsCostALatencyBoundRingAcrossNodesWhatNcclsTunerSays) {
  // 64 MiB all-gather over 512 H100s (64 nodes, 8 rings): with wire
  // latencies a step costs the NIC's 6 us; NCCL's Simple charges 3.4 us per
  // NVLink step and 14 us per network step along the chunk's path, LL128
  // 1.9 and 4.0 us, which NCCL's tuner (auto) prefers at this size.
  const auto at = latency_bound_all_gather_us;
  const double wire = at("cluster.collectives.protocol=wire");
  const double simple = at("cluster.collectives.protocol=simple");
  const double ll128 = at("cluster.collectives.protocol=ll128");
  const double chosen = at("cluster.collectives.protocol=auto");
  // The chunk path: 511 hops, 64 of them between nodes.
  EXPECT_GT(simple, (447 * 3.4 + 64 * 14));
  EXPECT_LT(simple, wire);
  EXPECT_LT(ll128, simple);
  EXPECT_EQ(chosen, std::min({simple, ll128, at("cluster.collectives.protocol=ll")}));
}

TEST(CollectiveCli, FastAgreesWithDetailedOnTheCubeMesh) {
  expect_fidelities_agree({"--cluster", "dgx1-v100", "--min", "1MiB", "--max", "1GiB", "-f", "32"});
}

TEST(CollectiveCli, FastAgreesWithDetailedForBroadcastAndHierarchical) {
  expect_fidelities_agree(
      {"--op", "broadcast", "--ranks", "8", "--min", "1MiB", "--max", "1GiB", "-f", "32"});
  expect_fidelities_agree(
      {"--ranks", "32", "--algorithm", "hierarchical", "--min", "1MiB", "--max", "1GiB", "-f", "32"});
}

TEST(CollectiveCli, GrowsAHomogeneousClusterToHoldTheRanks) {
  const auto r = run_cli({"collective", "--cluster", "dgx-a100-hdr", "--ranks", "256", "--min", "1MiB",
                          "--max", "1MiB", "--fidelity", "fast"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("grown from 20 to 32 nodes to hold 256 ranks"), std::string::npos) << r.out;
}

TEST(CollectiveCli, PresetsAreEmbeddedInTheBinary) {
  // From the filesystem root: no platforms/presets/ directory in sight.
  const auto r = run_cli({"collective", "--cluster", "hgx-h200-roce", "--ranks", "16", "--min", "1MiB",
                          "--max", "1MiB", "--format", "csv"},
                         "/");
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(parse_csv(r.out).size(), 1u);
}

TEST(CollectiveCli, ClusterFromAScenarioFile) {
  const auto file =
      write_temp_file("c.yaml", "cluster: {gpu: H100, nodes: 2, node_shape: pcie}\nmodel: {}\n");
  const auto rows = run_csv({"--cluster", file.string(), "--ranks", "4", "--min", "1MiB", "--max", "1MiB"});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_GT(rows[0].busbw, 0);
}

TEST(CollectiveCli, SameInputSameOutput) {
  const std::vector<std::string> args{"collective", "--ranks", "32", "--min", "1MiB", "--max", "64MiB"};
  EXPECT_EQ(run_cli(args).out, run_cli(args).out);
}

void expect_bad_input(const std::vector<std::string>& args, const std::string& detail) {
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.err.find(detail), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Backtrace"), std::string::npos) << r.err;
}

TEST(CollectiveCli, BadInputGetsClearErrors) {
  expect_bad_input({"collective", "--cluster", "dgx-z100"}, "neither a cluster preset");
  expect_bad_input({"collective", "--min", "1Q"}, "--min 1Q: '1Q' is not a message size: unknown unit 'Q'");
  expect_bad_input({"collective", "--min", "1GiB", "--max", "1MiB"}, "--max 1MiB is smaller than --min 1GiB");
  expect_bad_input({"collective", "--op", "all_reduction"}, "all_reduction");
  expect_bad_input({"collective", "--cluster", "mixed-a100-h100", "--ranks", "512"},
                   "the mixed cluster mixed-a100-h100 has only 256 GPUs");
  expect_bad_input({"collective", "--set", "cluster.nic.bandwidth=-1Gbps"},
                   "--set cluster.nic.bandwidth=-1Gbps");
  expect_bad_input({"collective", "--set", "cluster.fabric.oversubscription=0.5"}, "0.5 is below 1");
}

}  // namespace
}  // namespace trainsim::testing

namespace trainsim::testing {
namespace {

// A training run reports which algorithm each kind of collective used, in
// summary.json, timeline.csv and the trace, and obeys the cluster's choice.
TEST(CollectiveReport, RunReportsTheAlgorithmsItUsed) {
  const auto out = fresh_dir("algorithms");
  const auto r = run_cli({"run", "scenarios/quickstart.yaml", "-q", "--out", out.string(), "--set",
                          "cluster.collectives.algorithm=tree"});
  ASSERT_EQ(r.status, 0) << r.err;
  const auto summary = nlohmann::json::parse(read_file(out / "summary.json"));
  bool tp_all_reduce = false, dp_tree = false;
  for (const auto& c : summary["collectives"]) {
    EXPECT_GT(c["count"].get<int>(), 0);
    EXPECT_GT(c["busy_s"].get<double>(), 0);
    // Trees apply to all-reduce: the TP all-reduces inside a node take a tree
    // too when asked; the DP all-reduce across the two nodes as well.
    tp_all_reduce = tp_all_reduce || (c["comm"] == "tp" && c["op"] == "all_reduce");
    dp_tree = dp_tree || (c["comm"] == "dp" && c["algorithm"] == "tree");
  }
  EXPECT_TRUE(tp_all_reduce) << summary["collectives"].dump();
  EXPECT_TRUE(dp_tree) << summary["collectives"].dump();
  const auto timeline = read_file(out / "timeline.csv");
  EXPECT_NE(timeline.find(",dp all_reduce,-1,"), std::string::npos);
  EXPECT_NE(timeline.find(",tree\n"), std::string::npos);
  const auto trace = read_file(out / "trace.json");
  EXPECT_NE(trace.find("\"algorithm\":\"tree\",\"channels\":"), std::string::npos);
  std::filesystem::remove_all(out);
}

}  // namespace
}  // namespace trainsim::testing
