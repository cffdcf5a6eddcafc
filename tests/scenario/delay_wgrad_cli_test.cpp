// plan.delay_wgrad_compute (Megatron-core --delay-wgrad-compute under the
// EP A2A overlap) through the real CLI: each MoE layer's backward splits
// into its input gradient (Bi), which the layer's all-to-all follows, and
// its weight gradient (W), which runs beside that all-to-all; against a
// hand computation on a case where nothing else runs beside them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "support/run_summary.hpp"
#include "support/scenario_text.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// DeepSeek-V2-Lite shrunk to 3 layers (layer 0 dense, layers 1 and 2 MoE),
// 2 H100s in 2 nodes (the EP group's all-to-all crosses the NICs), pp 1,
// dp 2, ep 2, one micro-batch per replica: one forward, then one backward
// alone, its MoE layers' all-to-alls with no other compute to hide under.
// No compute interference, no gradient-reduction overlap.
const std::string kCase = R"(cluster:
  gpu: H100-SXM
  nodes: 2
  gpus_per_node: 1
  collectives:
    compute_interference: 0
model:
  preset: deepseek-v2-lite
  layers: 3
  seq_len: 2048
plan:
  pp: 1
  dp: 2
  expert_parallel: 2
  micro_batch_size: 1
  global_batch_size: 2
  moe_a2a_overlap: true
)";

struct Interval {
  double start_s = 0, end_s = 0;
  double length() const { return end_s - start_s; }
};

// GPU 0's rows of timeline.csv by name; a name that repeats (the forward's
// and the backward's all-to-all of a layer) keeps its rows in time order.
struct Gpu0 {
  double iteration_s = 0;
  std::map<std::string, std::vector<Interval>> rows;
  const Interval& one(const std::string& name, std::size_t k = 0) const {
    static const Interval none{};
    const auto it = rows.find(name);
    EXPECT_TRUE(it != rows.end() && it->second.size() > k) << name;
    return it != rows.end() && it->second.size() > k ? it->second[k] : none;
  }
  bool has(const std::string& name) const { return rows.count(name) > 0; }
};

Gpu0 run_case(const std::string& extra_plan, const std::string& name) {
  const auto out = fresh_dir(name);
  const auto r = run_text(kCase + extra_plan, out);
  EXPECT_EQ(r.status, 0) << r.err;
  Gpu0 gpu;
  gpu.iteration_s = json::parse(read_file(out / "summary.json"))["iteration_time_s"].get<double>();
  std::istringstream csv(read_file(out / "timeline.csv"));
  std::string line;
  std::getline(csv, line);  // gpu,stream,kind,name,micro_batch,stage,start_s,end_s,...
  while (std::getline(csv, line)) {
    std::vector<std::string> f;
    std::stringstream fields(line);
    for (std::string x; std::getline(fields, x, ',');)
      f.push_back(x);
    if (f.size() < 8 || f[0] != "0")
      continue;
    gpu.rows[f[3]].push_back({std::stod(f[6]), std::stod(f[7])});
  }
  for (auto& [n, list] : gpu.rows)
    std::sort(list.begin(), list.end(),
              [](const Interval& a, const Interval& b) { return a.start_s < b.start_s; });
  fs::remove_all(out);
  return gpu;
}

TEST(DelayWgradComputeCli, TheDeferredWeightGradientRunsUnderTheAllToAllAndTheStepShortensByTheSmaller) {
  const Gpu0 plain = run_case("", "wgrad-off");
  const Gpu0 delayed = run_case("  delay_wgrad_compute: true\n", "wgrad-on");
  constexpr double kTick = 1e-9;
  // Without the flag each layer's backward is one task, its all-to-all after it.
  ASSERT_TRUE(plain.has("B mb0 layer2") && plain.has("B mb0 layer1"));
  EXPECT_FALSE(plain.has("W mb0 layer2"));
  double hidden_s = 0;
  // The backward runs layer 2, then 1, then 0 (dense, and the GPU's last
  // piece: it keeps its weight gradient). The second all-to-all of a
  // layer's name is the backward's.
  const std::vector<std::string> next = {"Bi mb0 layer1", "B mb0 layer0"};
  for (int layer : {2, 1}) {
    const std::string l = "layer" + std::to_string(layer);
    const Interval& bi = delayed.one("Bi mb0 " + l);
    const Interval& w = delayed.one("W mb0 " + l);
    const Interval& a2a = delayed.one("ep all_to_all mb0 " + l, 1);
    // Input and weight gradient add up to the layer's backward.
    EXPECT_NEAR(bi.length() + w.length(), plain.one("B mb0 " + l).length(), kTick) << l;
    EXPECT_GT(w.length(), 0.0) << l;
    // The all-to-all (the same bytes as without the flag) and the weight
    // gradient both start when the input gradient ends.
    EXPECT_NEAR(a2a.length(), plain.one("ep all_to_all mb0 " + l, 1).length(), kTick) << l;
    EXPECT_NEAR(a2a.start_s, bi.end_s, kTick) << l;
    EXPECT_NEAR(w.start_s, bi.end_s, kTick) << l;
    // The next layer's piece waits for both.
    EXPECT_NEAR(delayed.one(next[static_cast<std::size_t>(2 - layer)]).start_s, std::max(w.end_s, a2a.end_s),
                kTick)
        << l;
    hidden_s += std::min(w.length(), a2a.length());
  }
  EXPECT_TRUE(delayed.has("B mb0 layer0"));
  EXPECT_FALSE(delayed.has("W mb0 layer0"));
  // Nothing else moves: the step is shorter by min(W, all-to-all) per MoE layer.
  EXPECT_GT(hidden_s, 0.02 * plain.iteration_s);
  EXPECT_NEAR(plain.iteration_s - delayed.iteration_s, hidden_s, 1e-8);
}

// With overlap_grad_reduce and 1 MB buckets each layer's gradients reduce
// over the 2 GPUs in their own bucket: layer 2's once its deferred weight
// gradient (not only its input gradient) is done on both GPUs.
TEST(DelayWgradComputeCli, AGradientBucketWaitsForTheDeferredWeightGradient) {
  const Gpu0 gpu = run_case(
      "  delay_wgrad_compute: true\n  overlap_grad_reduce: true\n  grad_bucket_size: 1MB\n", "wgrad-buckets");
  const Interval& bi = gpu.one("Bi mb0 layer2");
  const Interval& w = gpu.one("W mb0 layer2");
  ASSERT_GT(w.end_s, bi.end_s);
  EXPECT_NEAR(gpu.one("dp all_reduce layer2").start_s, w.end_s, 1e-9);
  EXPECT_GE(gpu.one("dp all_reduce layer1").start_s, gpu.one("W mb0 layer1").end_s);
}

TEST(DelayWgradComputeCli, WithoutTheAllToAllOverlapOrOutside1f1bItIsRefusedNamingTheKey) {
  const auto off = run_text(with(kCase, "  moe_a2a_overlap: true\n", "  delay_wgrad_compute: true\n"));
  EXPECT_EQ(off.status, 1) << off.err;
  EXPECT_NE(off.err.find("delay_wgrad_compute"), std::string::npos) << off.err;
  EXPECT_NE(off.err.find("expected moe_a2a_overlap: true, or delay_wgrad_compute: false"), std::string::npos)
      << off.err;
  EXPECT_EQ(off.err.find("Backtrace"), std::string::npos) << off.err;
  // GPipe has no merged F&B steps: both keys are refused, each by name.
  const auto gpipe =
      run_text(with(kCase, "  moe_a2a_overlap: true\n",
                    "  moe_a2a_overlap: true\n  delay_wgrad_compute: true\n  schedule: gpipe\n"));
  EXPECT_EQ(gpipe.status, 1) << gpipe.err;
  EXPECT_NE(gpipe.err.find("expected schedule 1f1b or interleaved_1f1b, or delay_wgrad_compute: false"),
            std::string::npos)
      << gpipe.err;
}

}  // namespace
}  // namespace trainsim::testing
