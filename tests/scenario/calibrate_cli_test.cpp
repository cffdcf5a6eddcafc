// `trainsim export --kineto` and `trainsim calibrate` through the real CLI:
// a simulated iteration exported as PyTorch profiler traces calibrates back
// to the efficiency profile that produced it (within 1%), the profile it
// writes is one a scenario can name, and bad input is named.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "platforms/efficiency_profile.hpp"
#include "platforms/efficiency_profile_writer.hpp"
#include "platforms/gpu_spec.hpp"
#include "support/cli.hpp"
#include "workloads/cost_model_per_op.hpp"
#include "workloads/kineto/profile_fit.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using platforms::EfficiencyProfile;

// H100's profile with other peak fractions, knees and host overhead: what
// "another cluster" measured.
EfficiencyProfile producer() {
  EfficiencyProfile p = platforms::efficiency_profile_for("H100-SXM");
  p.name = "producer";
  p.gpus = {};
  p.matmul.peak_fraction = 0.61;
  p.matmul.output_elements = kineto::knee_curve(p.matmul.output_elements, 1.6e6);
  p.matmul.reduction_depth = kineto::knee_curve(p.matmul.reduction_depth, 240);
  p.memory.peak_fraction = 0.52;
  p.memory.bytes = kineto::knee_curve(p.memory.bytes, 7e5);
  p.flash_forward.peak_fraction = 0.47;
  p.flash_backward.peak_fraction = 0.29;
  p.host_overhead_per_kernel_s = 21e-6;
  return p;
}

// Two nodes of 4 H100, a 4-layer Llama 3 8B at 4,096 tokens, tp 2 x pp 2 x dp 2.
std::string scenario(const std::string& name, const std::string& gpu) {
  return "name: " + name + "\ncluster:\n  gpu: " + gpu +
         "\n  nodes: 2\n  gpus_per_node: 4\n"
         "model: {preset: llama3-8b, layers: 4, seq_len: 4096}\n"
         "plan: {dp: 2, tp: 2, pp: 2, micro_batch_size: 1, global_batch_size: 8, schedule: 1f1b}\n";
}

struct RoundTrip {
  fs::path dir;
  CliResult exported, calibrated;
};

const RoundTrip& round_trip() {
  static const RoundTrip r = [] {
    RoundTrip t;
    t.dir = fresh_dir("calibrate-round-trip");
    std::ofstream(t.dir / "producer.yaml") << platforms::efficiency_profile_yaml(producer(), "test producer");
    std::ofstream(t.dir / "produced-by.yaml")
        << scenario("produced-by", "{base: H100-SXM, name: H100-SXM, efficiency_profile: producer.yaml}");
    std::ofstream(t.dir / "base.yaml") << scenario("base", "H100-SXM");
    t.exported =
        run_cli({"export", (t.dir / "produced-by.yaml").string(), "--kineto", (t.dir / "traces").string()});
    t.calibrated =
        run_cli({"calibrate", (t.dir / "traces").string(), "--scenario", (t.dir / "base.yaml").string(),
                 "--out", (t.dir / "fit").string(), "--name", "fitted"});
    return t;
  }();
  return r;
}

EfficiencyProfile fitted() {
  const auto& r = round_trip();
  return platforms::parse_efficiency_profile(read_file(r.dir / "fit" / "fitted.yaml"), "fitted.yaml");
}

TEST(CalibrateCli, ExportedTracesOneFilePerGpuWithEveryClass) {
  const auto& r = round_trip();
  ASSERT_EQ(r.exported.status, 0) << r.exported.err;
  for (int g = 0; g < 8; ++g)
    EXPECT_TRUE(fs::exists(r.dir / "traces" / ("produced-by.rank" + std::to_string(g) + ".pt.trace.json")));
  const auto j = nlohmann::json::parse(read_file(r.dir / "traces" / "produced-by.rank0.pt.trace.json"));
  EXPECT_EQ(j["distributedInfo"]["rank"], 0);
  EXPECT_EQ(j["distributedInfo"]["world_size"], 8);
  std::set<std::string> cats;
  bool nccl_metadata = false;
  for (const auto& e : j["traceEvents"]) {
    cats.insert(e["cat"].get<std::string>());
    nccl_metadata = nccl_metadata || e["args"].contains("Collective name");
  }
  for (const char* c : {"user_annotation", "cpu_op", "cuda_runtime", "kernel"})
    EXPECT_TRUE(cats.count(c)) << c;
  EXPECT_TRUE(nccl_metadata);
}

TEST(CalibrateCli, ExportedTracesCalibrateBackToTheProfileThatProducedThemWithinOnePercent) {
  const auto& r = round_trip();
  ASSERT_EQ(r.calibrated.status, 0) << r.calibrated.err;
  const EfficiencyProfile truth = producer();
  const EfficiencyProfile q = fitted();
  EXPECT_NEAR(q.matmul.peak_fraction, truth.matmul.peak_fraction, 0.01 * truth.matmul.peak_fraction);
  EXPECT_NEAR(q.memory.peak_fraction, truth.memory.peak_fraction, 0.01 * truth.memory.peak_fraction);
  EXPECT_NEAR(q.flash_forward.peak_fraction, truth.flash_forward.peak_fraction, 0.01 * 0.47);
  EXPECT_NEAR(q.flash_backward.peak_fraction, truth.flash_backward.peak_fraction, 0.01 * 0.29);
  EXPECT_NEAR(q.host_overhead_per_kernel_s, truth.host_overhead_per_kernel_s, 0.01 * 21e-6);
  // Every op of the model's layers (and its embedding and logits) timed by
  // the fitted profile within 1% of the profile that produced the traces.
  const auto model = *workloads::find_model_preset("llama3-8b");
  const auto setup = workloads::layer_setup(model, 1, 2);
  auto ops = workloads::layer_ops(model, setup);
  for (const auto& extra : {workloads::embedding_ops(model, setup), workloads::logits_ops(model, setup)})
    ops.insert(ops.end(), extra.begin(), extra.end());
  const auto gpu = *platforms::find_gpu("H100-SXM");
  for (const auto& op : ops) {
    const double want = workloads::time_op(op, gpu, truth).duration_s;
    const double got = workloads::time_op(op, gpu, q).duration_s;
    EXPECT_NEAR(got, want, 0.01 * want) << op.name;
  }
  // The table says so.
  EXPECT_NE(r.calibrated.out.find("0.748 -> 0.61"), std::string::npos) << r.calibrated.out;
  EXPECT_NE(r.calibrated.out.find("host overhead per kernel: 58 us -> 21 us"), std::string::npos)
      << r.calibrated.out;
}

TEST(CalibrateCli, TheWrittenScenarioNamesTheFittedProfileAndRuns) {
  const auto& r = round_trip();
  ASSERT_EQ(r.calibrated.status, 0) << r.calibrated.err;
  const std::string text = read_file(r.dir / "fit" / "scenario.yaml");
  EXPECT_NE(text.find("efficiency_profile: fitted.yaml"), std::string::npos) << text;
  // The same iteration as the producing scenario's, within 1%.
  const auto a =
      run_cli({"run", (r.dir / "produced-by.yaml").string(), "-q", "--out", (r.dir / "run-a").string()});
  const auto b =
      run_cli({"run", (r.dir / "fit" / "scenario.yaml").string(), "-q", "--out", (r.dir / "run-b").string()});
  ASSERT_EQ(a.status, 0) << a.err;
  ASSERT_EQ(b.status, 0) << b.err;
  const auto sa = nlohmann::json::parse(read_file(r.dir / "run-a" / "summary.json"));
  const auto sb = nlohmann::json::parse(read_file(r.dir / "run-b" / "summary.json"));
  const double ta = sa["iteration_time_s"], tb = sb["iteration_time_s"];
  EXPECT_NEAR(tb, ta, 0.01 * ta);
  // fit.csv and fit.json: one row per part, class, the host overhead and each link.
  const std::string csv = read_file(r.dir / "fit" / "fit.csv");
  EXPECT_EQ(csv.rfind("kind,name,method,", 0), 0u);
  for (const char* row : {"part,matmul,shapes", "part,flash_forward,shapes", "class,gemm,",
                          "class,attention,", "host_overhead,host_overhead_per_kernel,launch_intervals",
                          "collective,nvlink.efficiency,nccl_kernels"})
    EXPECT_NE(csv.find(row), std::string::npos) << row;
  const auto j = nlohmann::json::parse(read_file(r.dir / "fit" / "fit.json"));
  EXPECT_EQ(j["profile"], "fitted");
}

TEST(CalibrateCli, BadTracesAndProfilesAreNamed) {
  const fs::path dir = fresh_dir("calibrate-bad");
  std::ofstream(dir / "s.yaml") << scenario("s", "H100-SXM");
  const auto s = (dir / "s.yaml").string();
  std::ofstream(dir / "cpu.json")
      << R"({"traceEvents": [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 5}]})";
  const auto cpu =
      run_cli({"calibrate", (dir / "cpu.json").string(), "--scenario", s, "--out", (dir / "o").string()});
  EXPECT_EQ(cpu.status, 1);
  EXPECT_NE(cpu.err.find("cpu.json: no GPU kernels"), std::string::npos) << cpu.err;
  const auto missing = run_cli({"calibrate", (dir / "nope.json").string(), "--scenario", s});
  EXPECT_EQ(missing.status, 1);
  EXPECT_NE(missing.err.find("nope.json: no such file or folder"), std::string::npos) << missing.err;
  std::ofstream(dir / "far.json") << R"({"distributedInfo": {"rank": 64}, "traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 50},
      {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "ts": 1, "dur": 5}]})";
  const auto far = run_cli({"calibrate", (dir / "far.json").string(), "--scenario", s});
  EXPECT_EQ(far.status, 1);
  EXPECT_NE(far.err.find("far.json: rank 64 is beyond the scenario's 8 GPUs"), std::string::npos) << far.err;
  std::ofstream(dir / "bad-event.json")
      << R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1}]})";
  const auto bad = run_cli({"calibrate", (dir / "bad-event.json").string(), "--scenario", s});
  EXPECT_EQ(bad.status, 1);
  EXPECT_NE(bad.err.find("bad-event.json: traceEvents[0] ('k'): kernel event: 'dur' is missing"),
            std::string::npos)
      << bad.err;
  // A scenario naming a profile that is not one.
  std::ofstream(dir / "broken.yaml") << "name: broken\nmatmul: 3\n";
  std::ofstream(dir / "names-broken.yaml")
      << scenario("names-broken", "{base: H100-SXM, name: H100-SXM, efficiency_profile: broken.yaml}");
  const auto named =
      run_cli({"run", (dir / "names-broken.yaml").string(), "-q", "--out", (dir / "r").string()});
  EXPECT_EQ(named.status, 1);
  EXPECT_NE(named.err.find("cluster.gpu.efficiency_profile"), std::string::npos) << named.err;
  EXPECT_NE(named.err.find("broken.yaml"), std::string::npos) << named.err;
  std::ofstream(dir / "names-missing.yaml")
      << scenario("names-missing", "{base: H100-SXM, name: H100-SXM, efficiency_profile: absent.yaml}");
  const auto absent =
      run_cli({"run", (dir / "names-missing.yaml").string(), "-q", "--out", (dir / "r").string()});
  EXPECT_EQ(absent.status, 1);
  EXPECT_NE(absent.err.find("absent.yaml"), std::string::npos) << absent.err;
  // A class table that is not one.
  std::ofstream(dir / "classes.yaml") << "classes:\n  - {name: x, role: nope, patterns: ['']}\n";
  std::ofstream(dir / "one.json") << R"({"traceEvents": [
      {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "ts": 0, "dur": 50},
      {"ph": "X", "cat": "kernel", "name": "ampere_sgemm_128x64_nn", "ts": 1, "dur": 5}]})";
  const auto classes = run_cli({"calibrate", (dir / "one.json").string(), "--scenario", s, "--classes",
                                (dir / "classes.yaml").string(), "--out", (dir / "o").string()});
  EXPECT_EQ(classes.status, 1);
  EXPECT_NE(classes.err.find("classes.yaml:2"), std::string::npos) << classes.err;
  EXPECT_NE(classes.err.find("nope"), std::string::npos) << classes.err;
  // --chakra and --kineto together, or neither.
  EXPECT_EQ(run_cli({"export", s, "--chakra", (dir / "a").string(), "--kineto", (dir / "b").string()}).status,
            1);
  const auto neither = run_cli({"export", s});
  EXPECT_EQ(neither.status, 1);
  EXPECT_NE(neither.err.find("--chakra DIR"), std::string::npos) << neither.err;
}

}  // namespace
}  // namespace trainsim::testing
