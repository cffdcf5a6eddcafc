// trainsim collective against nccl-tests measurements (vTrain's all-reduce
// tables, rows copied to tests/fixtures with their provenance). The NVLink
// latency and efficiency constants and NCCL's launch latency were calibrated
// on the A100 table (docs/collectives.md); the V100 table checks the
// cube-mesh rings with the V100 preset's own NVLink efficiency. The
// published scans of A100, H100 and H200 clusters from 1 to 64 nodes
// (tests/fixtures/nccl_tests_at_scale.csv, each row with its source and the
// bound it is held to) check the algorithm choice and the NVLSTree, ring and
// all-to-all models at scale. The Blackwell and MI300X presets are checked
// on tests/fixtures/nccl_tests_rack_scale.csv (one GB200 NVL72 rack, DGX
// B200, 8 MI300X), one test per published figure and whether it was fitted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <tuple>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {

// size in bytes -> out-of-place bus bandwidth (GB/s), as nccl-tests prints it.
std::map<double, double> measured(const std::string& file) {
  std::map<double, double> busbw;
  std::istringstream in(read_file(std::string(TRAINSIM_SHARED_DIR) + "/" + file));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line[0] == 's')
      continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');)
      f.push_back(cell);
    busbw[std::stod(f[0])] = std::stod(f[4]);
  }
  return busbw;
}

// "1073741824B": the CLI's size syntax for a byte count.
std::string fmt_bytes(double bytes) {
  return std::to_string(static_cast<long long>(std::llround(bytes))) + "B";
}

std::map<double, double> simulated(const std::string& preset) {
  const auto r = run_cli({"collective", "--cluster", preset, "--op", "all_reduce", "--ranks", "8", "--min",
                          "1MiB", "--max", "1GiB", "--format", "csv"});
  EXPECT_EQ(r.status, 0) << r.err;
  std::map<double, double> busbw;
  std::istringstream in(r.out);
  std::string line;
  std::getline(in, line);
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::stringstream ss(line);
    for (std::string cell; std::getline(ss, cell, ',');)
      f.push_back(cell);
    busbw[std::stod(f[0])] = std::stod(f[6]);
  }
  return busbw;
}

TEST(CollectiveCalibration, DgxA100AllReduceBusBandwidthMatchesNcclTests) {
  const auto truth = measured("a100_allreduce_8gpu.csv");
  const auto sim = simulated("dgx-a100-hdr");
  ASSERT_EQ(sim.size(), 11u);
  for (const auto& [bytes, busbw] : sim) {
    ASSERT_EQ(truth.count(bytes), 1u) << bytes;
    const double tolerance = bytes >= 8.0 * (1 << 20) ? 0.15 : 0.25;
    EXPECT_NEAR(busbw / truth.at(bytes), 1.0, tolerance)
        << bytes << " B: simulated " << busbw << " GB/s, measured " << truth.at(bytes) << " GB/s";
  }
}

TEST(CollectiveCalibration, Dgx1V100CubeMeshLargeMessagesMatchNcclTests) {
  const auto truth = measured("v100_allreduce_8gpu.csv");
  const auto sim = simulated("dgx1-v100");
  for (const auto& [bytes, busbw] : sim) {
    if (bytes < 64.0 * (1 << 20))
      continue;  // NCCL's protocol switches make V100's small sizes uneven
    EXPECT_NEAR(busbw / truth.at(bytes), 1.0, 0.10)
        << bytes << " B: simulated " << busbw << " GB/s, measured " << truth.at(bytes) << " GB/s";
  }
}

std::vector<std::string> cells_of(const std::string& line) {
  std::vector<std::string> f;
  std::stringstream ss(line);
  for (std::string cell; std::getline(ss, cell, ',');)
    f.push_back(cell);
  return f;
}

struct ScanRow {
  std::string set, source, cluster, op;
  int gpus = 0;
  double bytes = 0, busbw_GBps = 0, tolerance = 0;
};

std::vector<ScanRow> scan_rows(const std::string& file = "nccl_tests_at_scale.csv") {
  std::vector<ScanRow> rows;
  std::istringstream in(read_file(std::string(TRAINSIM_SHARED_DIR) + "/" + file));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#' || line.rfind("set,", 0) == 0)
      continue;
    const auto f = cells_of(line);
    rows.push_back({f.at(0), f.at(1), f.at(2), f.at(3), std::stoi(f.at(4)), std::stod(f.at(5)),
                    std::stod(f.at(6)), std::stod(f.at(7))});
  }
  return rows;
}

// Every row of the fixture within its bound: one `trainsim collective` per
// cluster, operation and group size, over the rows' sizes (fast fidelity,
// as the studies run).
// `only`, when given, picks the rows to check (the issue-14 rows, 97) and
// holds them to 15%.
void expect_rows_within_their_bounds(const std::vector<ScanRow>& rows,
                                     const std::vector<std::string>& settings);

void expect_scans_within_their_bounds(const std::vector<std::string>& settings,
                                      const std::function<bool(const ScanRow&)>& only = {}) {
  auto rows = scan_rows();
  ASSERT_GT(rows.size(), 150u);
  if (only) {
    std::erase_if(rows, [&](const ScanRow& r) { return !only(r); });
    ASSERT_EQ(rows.size(), 97u);
    for (auto& r : rows)
      r.tolerance = 0.15;
  }
  expect_rows_within_their_bounds(rows, settings);
}

void expect_rows_within_their_bounds(const std::vector<ScanRow>& rows,
                                     const std::vector<std::string>& settings) {
  // NVIDIA's NVLSTree scan forced the algorithm (NCCL_ALGO=NVLSTree): its
  // rows run nvls_tree, the others NCCL's choice (auto).
  std::map<std::tuple<std::string, std::string, int, std::string>, std::vector<const ScanRow*>> groups;
  for (const auto& r : rows)
    groups[{r.cluster, r.op, r.gpus, r.source == "nvidia-nvlstree-scan" ? "nvls_tree" : "auto"}].push_back(
        &r);
  for (const auto& [key, members] : groups) {
    const auto& [cluster, op, gpus, algorithm] = key;
    double lo = members.front()->bytes, hi = lo;
    for (const auto* r : members) {
      lo = std::min(lo, r->bytes);
      hi = std::max(hi, r->bytes);
    }
    std::vector<std::string> args{"collective",
                                  "--cluster",
                                  cluster,
                                  "--op",
                                  op,
                                  "--ranks",
                                  std::to_string(gpus),
                                  "--min",
                                  fmt_bytes(lo),
                                  "--max",
                                  fmt_bytes(hi),
                                  "--algorithm",
                                  algorithm,
                                  "--fidelity",
                                  "fast",
                                  "--format",
                                  "csv"};
    for (const auto& setting : settings)
      args.insert(args.end(), {"--set", setting});
    const auto run = run_cli(args);
    ASSERT_EQ(run.status, 0) << run.err;
    std::map<double, double> busbw;
    std::istringstream out(run.out);
    std::string line;
    std::getline(out, line);
    while (std::getline(out, line)) {
      const auto f = cells_of(line);
      busbw[std::stod(f.at(0))] = std::stod(f.at(6));
    }
    for (const auto* r : members) {
      ASSERT_EQ(busbw.count(r->bytes), 1u) << cluster << " " << op << " " << gpus << " " << r->bytes;
      EXPECT_NEAR(busbw.at(r->bytes) / r->busbw_GBps, 1.0, r->tolerance)
          << ::testing::PrintToString(settings) << " " << r->source << ": " << op << " on " << gpus
          << " GPUs of " << cluster << ", " << r->bytes << " B: simulated " << busbw.at(r->bytes)
          << " GB/s, published " << r->busbw_GBps << " GB/s";
    }
  }
}

// The rows of tests/fixtures/nccl_tests_rack_scale.csv from one source and
// set (fit or check), `count` of them, each within its bound.
void expect_rack_scale_rows(const std::string& source, const std::string& set, std::size_t count) {
  auto rows = scan_rows("nccl_tests_rack_scale.csv");
  std::erase_if(rows, [&](const ScanRow& r) { return r.source != source || r.set != set; });
  ASSERT_EQ(rows.size(), count) << source << " " << set;
  expect_rows_within_their_bounds(rows, {});
}

// gb200-nvl72's nvls_efficiency (0.6) was set on this row: CoreWeave's full
// NVL72 rack, 72 ranks, 834.57 GB/s at 8 GiB (coreweave/nccl-tests#43,
// 2025-02-20). Held to 2%: a fitted row that drifts means the NVLS model moved.
TEST(CollectiveCalibration, Nvl72RackAllReduceMatchesTheCoreWeaveRowItWasFittedTo) {
  expect_rack_scale_rows("coreweave-nvl72", "fit", 1);
}

// The other four sizes of the same run, not fitted: 4 GiB within 5% (the
// plateau); 2 GiB to 512 MiB are known gaps (the rack's measured curve ramps
// up more slowly than the model's NVLS pipeline: simulated 9%, 19% and 34%
// fast), held to their measured error rounded up so that a change that
// widens them fails.
TEST(CollectiveCalibration, Nvl72RackAllReduceAtSizesItWasNotFittedToStaysWithinItsBounds) {
  expect_rack_scale_rows("coreweave-nvl72", "check", 4);
}

// Not fitted: dgx-b200's NVLS share is NCCL's Hopper-to-Blackwell scaling
// of the H100 fit. Two DGX B200 nodes (16 GPUs, NVLSTree over 8 x 400 Gb/s)
// at 8 GiB: 690.07 GB/s (coreweave/nccl-tests#92, 2026-05-26), and one node
// "830+" (NVIDIA/nccl#1807, 2025-08-13, no size given: held at 8 GiB). 5%:
// the plateau, where the model has no pipeline or protocol term left.
TEST(CollectiveCalibration, DgxB200AllReduceMatchesPublishedFiguresItWasNotFittedTo) {
  expect_rack_scale_rows("coreweave-b200-2node", "check", 1);
  expect_rack_scale_rows("nccl-1807-b200", "check", 1);
}

// Not fitted on an all-reduce: mi300x-roce's xGMI efficiency (0.71) is the
// slowest-link rate of AMD's TransferBench table; RCCL's all-reduce on the
// same 8 MI300X (AMD ROCm blog, 2 March 2025) checks the 7 rings on it: 5%
// from 256 MiB up; 64 MiB and 16 MiB are known gaps (RCCL's ramp is slower
// than the model's: simulated fast), held to their error rounded up.
TEST(CollectiveCalibration, Mi300xNodeAllReduceMatchesAmdsRcclTableItWasNotFittedTo) {
  expect_rack_scale_rows("amd-rccl-xgmi-blog", "check", 5);
}

TEST(CollectiveCalibration, PublishedScansFrom1To64NodesStayWithinTheirBounds) {
  expect_scans_within_their_bounds({});
}

// NCCL's protocol costs on the rings across nodes (collectives.protocol:
// auto) keep every row within its bound too.
TEST(CollectiveCalibration, PublishedScansStayWithinTheirBoundsWithNcclProtocols) {
  expect_scans_within_their_bounds({"cluster.collectives.protocol=auto"});
}

// The issue's bound: all-reduce bus bandwidth within 15% of both published
// H100 scans at every size from 32 MiB, 4 to 64 nodes. 95 of the 97 rows are
// held to it with wire latencies; the two that are not (the founding paper's
// scan at 32 MiB on 32 and 64 nodes, where `auto` picks a tree that runs 20%
// and 16% faster than measured) are the known gaps of docs/collectives.md,
// "Collectives at scale". With NCCL's costs all 97 are (the next test).
TEST(CollectiveCalibration, H100AllReduceScansFrom4To64NodesAreHeldTo15Percent) {
  int held = 0;
  std::vector<std::string> wider;
  for (const auto& r : scan_rows())
    if (r.op == "all_reduce" && r.cluster == "dgx-h100-ndr" && r.gpus >= 32 && r.gpus <= 512 &&
        r.bytes >= 32.0 * (1 << 20) && (r.source == "fernandez-scan" || r.source == "nvidia-nvlstree-scan")) {
      if (r.tolerance <= 0.15)
        ++held;
      else
        wider.push_back(r.source + " " + std::to_string(r.gpus) + " GPUs " + std::to_string(r.bytes));
    }
  EXPECT_GE(held, 95);
  EXPECT_LE(wider.size(), 2u) << ::testing::PrintToString(wider);
}

// With NCCL's costs (protocol auto: its ring protocols and its tree
// correction), every one of those 97 rows within 15%: the tree that ran 20%
// too fast at 32 MiB reaches only 0.7 of its modelled bandwidth there, as
// NCCL's tuner says, and `auto` picks NVLSTree, as NCCL's does.
TEST(CollectiveCalibration, WithNcclsCostsEveryH100AllReduceFrom32MiBOn4To64NodesIsWithin15Percent) {
  expect_scans_within_their_bounds({"cluster.collectives.protocol=auto"}, [](const ScanRow& r) {
    const bool issue_row = r.op == "all_reduce" && r.cluster == "dgx-h100-ndr" && r.gpus >= 32 &&
                           r.gpus <= 512 && r.bytes >= 32.0 * (1 << 20) &&
                           (r.source == "fernandez-scan" || r.source == "nvidia-nvlstree-scan");
    return issue_row;
  });
}

}  // namespace
}  // namespace trainsim::testing
