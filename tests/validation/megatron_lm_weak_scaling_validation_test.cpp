// trainsim against Megatron-LM's published weak scaling of GPT models on H100
// (README "Training Speed and Scalability", images/model_table.png;
// tests/fixtures/megatron_lm_weak_scaling.csv, which gives the source, the
// derived columns and every assumption beside its row). No trainsim constant
// was fitted to these rows. CI replays the rows without a pipeline (48 to
// 384 GPUs); every row is the command in docs/calibration.md ("Megatron-LM
// weak scaling"), not a test: too long for CI.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "support/cli.hpp"
#include "support/files.hpp"

namespace trainsim::testing {
namespace {

// The rows of at most `max_gpus` GPUs, in a file of their own.
std::filesystem::path rows_up_to(int max_gpus, int& rows) {
  std::ifstream in(std::string(TRAINSIM_SOURCE_DIR) + "/tests/fixtures/megatron_lm_weak_scaling.csv");
  std::stringstream kept;
  std::string line;
  rows = 0;
  while (std::getline(in, line)) {
    if (!line.empty() && line[0] != '#' && line.rfind("Parameters", 0) != 0) {
      const int gpus = std::stoi(line.substr(line.find(',') + 1));
      if (gpus > max_gpus)
        continue;
      ++rows;
    }
    kept << line << '\n';
  }
  const auto path = fresh_dir("megatron-lm-weak-scaling") / "rows.csv";
  std::ofstream(path) << kept.str();
  return path;
}

double mape_of(const std::string& out, int rows) {
  const std::regex line(R"(MAPE check\s+([0-9.]+)% over )" + std::to_string(rows) + " rows");
  std::smatch m;
  return std::regex_search(out, m, line) ? std::stod(m[1]) : -1;
}

// Measured on 2026-12-04 (docs/calibration.md): 1.7B +8.6%, 7.1B +4.5%,
// 16B -3.2%, 32B -12.0% in MFU under Megatron's own FLOP count
// (mfu_nvidia), MAPE 7.07%; the bound adds a margin for platform-dependent
// floating point. The issue's target (every row within 10%) is not met by
// the 32B row (TP 8 on a 7,168-wide model: the TP collectives cost more here
// than Megatron's overlapped userbuffers did).
TEST(MegatronLmWeakScalingValidation, RowsWithoutAPipelineStayWithinTheirMapeBound) {
  int rows = 0;
  const auto file = rows_up_to(384, rows);
  ASSERT_EQ(rows, 4);
  const auto r = run_cli({"validate", file.string(), "--template",
                          "scenarios/validation/megatron-lm-h100-weak-scaling.yaml", "-j", "2", "--metric",
                          "mfu_nvidia"});
  std::filesystem::remove_all(file.parent_path());
  ASSERT_EQ(r.status, 0) << r.err << r.out;
  const double mape = mape_of(r.out, rows);
  ASSERT_GE(mape, 0) << r.out;
  EXPECT_LE(mape, 7.6) << r.out;
  EXPECT_GE(mape, 6.5) << r.out;  // a large drop means the model moved: update the figures
}

}  // namespace
}  // namespace trainsim::testing
