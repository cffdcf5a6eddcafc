#include <gtest/gtest.h>

#include "support/cli.hpp"

namespace trainsim::testing {
namespace {

TEST(Determinism, SameInputGivesByteIdenticalOutputs) {
  const auto a = fresh_dir("det-a"), b = fresh_dir("det-b");
  ASSERT_EQ(run_cli({"run", "scenarios/quickstart.yaml", "-q", "--out", a.string()}).status, 0);
  ASSERT_EQ(run_cli({"run", "scenarios/quickstart.yaml", "-q", "--out", b.string()}).status, 0);
  for (const char* file :
       {"summary.json", "timeline.csv", "trace.json", "per_gpu.csv", "per_stage.csv", "links.csv",
        "critical_path.csv", "gantt.svg", "bubbles.svg", "memory.svg", "run.trainsim"}) {
    SCOPED_TRACE(file);
    const auto x = read_file(a / file);
    EXPECT_FALSE(x.empty());
    EXPECT_TRUE(x == read_file(b / file));
  }
  std::filesystem::remove_all(a);
  std::filesystem::remove_all(b);
}

}  // namespace
}  // namespace trainsim::testing
