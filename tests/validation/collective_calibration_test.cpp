// trainsim collective against nccl-tests measurements (vTrain's all-reduce
// tables, rows copied to tests/fixtures with their provenance). The NVLink
// latency and efficiency constants and NCCL's launch latency were calibrated
// on the A100 table (docs/collectives.md); the V100 table checks the
// cube-mesh rings with the V100 preset's own NVLink efficiency.
#include <gtest/gtest.h>

#include <map>
#include <sstream>

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

}  // namespace
}  // namespace trainsim::testing
