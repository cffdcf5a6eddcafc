// trace.json's detail (`run --trace`, docs/outputs.md): `replica` keeps the
// GPUs of data-parallel replica 0 with every one of their slices exactly as
// the full trace has them (arrows only between them), and the whole
// critical path; `auto` writes the
// full trace for a run whose full trace is small; `report --trace` writes the
// same file as `run --trace`.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "support/cli.hpp"
#include "support/scenario_text.hpp"

namespace trainsim::testing {
namespace {

namespace fs = std::filesystem;

// kSmallPipelineScenario: dp 2 x tp 2 x pp 4 on 16 GPUs (tp fastest, then dp).
int dp_rank_of(int gpu) {
  return (gpu / 2) % 2;
}

fs::path run_with_trace(const fs::path& file, const std::string& name, const std::string& trace) {
  const auto out = file.parent_path() / name;
  std::vector<std::string> args{"run", file.string(), "-q", "--out", out.string()};
  if (!trace.empty())
    args.insert(args.end(), {"--trace", trace});
  const auto r = run_cli(args);
  EXPECT_EQ(r.status, 0) << r.err;
  return out / "trace.json";
}

// The GPU of each (pid, tid) thread, from the thread names ("GPU 3 stream ...").
std::map<std::pair<int, int>, int> thread_gpus(const nlohmann::json& trace) {
  std::map<std::pair<int, int>, int> gpus;
  for (const auto& e : trace["traceEvents"])
    if (e["ph"] == "M" && e["name"] == "thread_name" &&
        e["args"]["name"].get<std::string>().rfind("GPU ", 0) == 0)
      gpus[{e["pid"].get<int>(), e["tid"].get<int>()}] =
          std::stoi(e["args"]["name"].get<std::string>().substr(4));
  return gpus;
}

// The events of phase `ph` on GPUs of replica 0 (arrow ids left out: they
// are numbered in the order written).
std::multiset<std::string> replica_zero_events(const nlohmann::json& trace, const std::string& ph) {
  const auto gpus = thread_gpus(trace);
  std::multiset<std::string> events;
  for (const auto& e : trace["traceEvents"]) {
    if (e["ph"] != ph || e.value("cat", "") == "critical_path")
      continue;
    const auto it = gpus.find({e["pid"].get<int>(), e.value("tid", -1)});
    EXPECT_NE(it, gpus.end()) << e.dump();
    if (it != gpus.end() && dp_rank_of(it->second) == 0) {
      auto copy = e;
      copy.erase("id");
      events.insert(copy.dump());
    }
  }
  return events;
}

std::vector<std::string> critical_path(const nlohmann::json& trace) {
  std::vector<std::string> segments;
  for (const auto& e : trace["traceEvents"])
    if (e.value("cat", "") == "critical_path")
      segments.push_back(e.dump());
  return segments;
}

TEST(TraceDetail, ReplicaHoldsEverySliceOfReplicaZeroAndTheWholeCriticalPath) {
  const auto file = write_temp_file("trace.yaml", kSmallPipelineScenario);
  const auto full = nlohmann::json::parse(read_file(run_with_trace(file, "full", "full")));
  const auto replica = nlohmann::json::parse(read_file(run_with_trace(file, "replica", "replica")));
  EXPECT_EQ(replica["otherData"]["trace"], "replica");
  EXPECT_EQ(replica["otherData"]["trace_gpus"], 8);
  EXPECT_EQ(replica["otherData"]["gpus"], 16);
  EXPECT_FALSE(full["otherData"].contains("trace"));
  for (const auto& [thread, gpu] : thread_gpus(replica))
    EXPECT_EQ(dp_rank_of(gpu), 0) << "GPU " << gpu;
  // Every slice of replica 0's GPUs, as the full trace has it.
  const auto slices = replica_zero_events(replica, "X");
  EXPECT_GT(slices.size(), 100u);
  EXPECT_EQ(slices, replica_zero_events(full, "X"));
  EXPECT_EQ(critical_path(replica), critical_path(full));
  EXPECT_GT(critical_path(full).size(), 5u);
  // Instants and arrows too, except the data-parallel steps to or from
  // another replica's GPUs (their other end is not in the file).
  for (const std::string ph : {"i", "s", "f"}) {
    const auto kept = replica_zero_events(replica, ph);
    const auto all = replica_zero_events(full, ph);
    EXPECT_FALSE(kept.empty()) << ph;
    EXPECT_TRUE(std::includes(all.begin(), all.end(), kept.begin(), kept.end())) << ph;
  }
  EXPECT_LT(replica["traceEvents"].size(), full["traceEvents"].size());
}

TEST(TraceDetail, AutoWritesTheFullTraceOfASmallRunAndReportWritesWhatRunWrote) {
  const auto file = write_temp_file("trace.yaml", kSmallPipelineScenario);
  EXPECT_EQ(read_file(run_with_trace(file, "auto", "")), read_file(run_with_trace(file, "full", "full")));
  const auto replica = run_with_trace(file, "replica", "replica");
  const auto again = file.parent_path() / "again";
  const auto r = run_cli(
      {"report", replica.parent_path().string(), "-q", "--out", again.string(), "--trace", "replica"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_file(again / "trace.json"), read_file(replica));
}

TEST(TraceDetail, AnUnknownDetailIsRefused) {
  const auto file = write_temp_file("trace.yaml", kSmallPipelineScenario);
  const auto r = run_cli({"run", file.string(), "-q", "--trace", "sampled"});
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.err.find("--trace"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace trainsim::testing
