#pragma once
// Scenario texts for the CLI tests and the helpers that edit and run them:
// one small pipeline scenario that the input-error and perturbation tests
// start from, a small fat-tree one whose uplinks the contention tests load,
// a text replacement that fails the test when the text to replace is
// missing, and the check of a one-line input error.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <string>

#include "support/cli.hpp"

namespace trainsim::testing {

// 16 A100s on 2 nodes, GPT-3 1.3B, dp 2 x tp 2 x pp 4, 16 micro-batches.
// Tests pin line numbers in it: append, do not insert.
inline const std::string kSmallPipelineScenario = R"(cluster:
  gpu: A100-80GB
  nodes: 2
  gpus_per_node: 8
  nic: {bandwidth: 200Gbps, latency: 5us}
model:
  preset: gpt3-1.3b
plan:
  dp: 2
  tp: 2
  pp: 4
  micro_batch_size: 1
  global_batch_size: 16
)";

// 32 A100s on 4 DGX nodes, one per leaf of a fat-tree: the data-parallel
// all-reduces of a stage's TP ranks cross the leaf uplinks together.
inline const std::string kFatTreeContentionScenario = R"(cluster:
  preset: dgx-a100-hdr
  nodes: 4
  fabric: {topology: fat_tree, nodes_per_leaf: 1, oversubscription: 1}
model:
  preset: gpt3-1.3b
plan:
  tp: 4
  pp: 2
  dp: 4
  micro_batch_size: 1
  global_batch_size: 16
)";

// `text` with its first `from` replaced by `to`.
inline std::string with(const std::string& text, const std::string& from, const std::string& to) {
  const auto at = text.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  if (at == std::string::npos)
    return text;
  return text.substr(0, at) + to + text.substr(at + from.size());
}

// `trainsim run` on the text written to a fresh scenario.yaml; outputs into
// `out` (default: next to the file).
inline CliResult run_text(const std::string& yaml, const std::filesystem::path& out = {}) {
  const auto path = write_temp_file("scenario.yaml", yaml);
  const auto dir = out.empty() ? path.parent_path() / "out" : out;
  return run_cli({"run", path.string(), "-q", "--out", dir.string()});
}

// Exit status 1 and one line naming scenario.yaml:`location`, the key and
// the detail, with nothing from SimGrid.
inline void expect_one_error(const CliResult& r, const std::string& location, const std::string& key,
                             const std::string& detail) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find("scenario.yaml:" + location), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(key), std::string::npos) << r.err;
  EXPECT_NE(r.err.find(detail), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("simgrid"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Backtrace"), std::string::npos) << r.err;
}

}  // namespace trainsim::testing
