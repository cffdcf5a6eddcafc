#include "analysis/run_archive.hpp"

#include <gtest/gtest.h>

#include <sstream>

#include "hand_made_runs.hpp"

namespace trainsim::analysis {
namespace {

TEST(RunArchive, RoundTripKeepsGraphAndTimelineBitExact) {
  testing::TwoStagePipeline h;
  h.timeline.gpu_energy_J = {1.0 / 3, 2.0 / 7};
  std::stringstream buffer;
  write_run_archive(buffer, "{\"x\":1}", h.graph, h.timeline);
  const auto a = read_run_archive(buffer);
  EXPECT_EQ(a.metadata_json, "{\"x\":1}");
  ASSERT_EQ(a.graph.size(), h.graph.size());
  EXPECT_EQ(a.graph.gpu_count, 2);
  EXPECT_EQ(boost::num_edges(a.graph.graph), boost::num_edges(h.graph.graph));
  for (workloads::TaskId v = 0; v < h.graph.size(); ++v) {
    EXPECT_EQ(a.graph[v].kind, h.graph[v].kind);
    EXPECT_EQ(a.graph[v].peer, h.graph[v].peer);
    EXPECT_EQ(a.graph[v].duration_s, h.graph[v].duration_s);
    EXPECT_EQ(boost::in_degree(v, a.graph.graph), boost::in_degree(v, h.graph.graph));
  }
  ASSERT_EQ(a.timeline.records.size(), h.timeline.records.size());
  EXPECT_EQ(a.timeline.records[3].end_s, h.timeline.records[3].end_s);
  EXPECT_EQ(a.timeline.links[1].name, "gpu1-nic_DOWN");
  EXPECT_EQ(a.timeline.flows[1].first_link, 2u);
  EXPECT_EQ(a.timeline.flow_links, h.timeline.flow_links);
  EXPECT_EQ(a.timeline.gpu_energy_J, h.timeline.gpu_energy_J);
  EXPECT_EQ(a.timeline.end_s, 8.5);
}

TEST(RunArchive, TruncatedOrForeignFilesAreRejectedWithAReason) {
  testing::TwoStagePipeline h;
  std::stringstream buffer;
  write_run_archive(buffer, "{}", h.graph, h.timeline);
  const std::string bytes = buffer.str();
  std::stringstream truncated(bytes.substr(0, bytes.size() / 2));
  EXPECT_THROW(
      {
        try {
          read_run_archive(truncated);
        } catch (const std::runtime_error& e) {
          EXPECT_NE(std::string(e.what()).find("truncated"), std::string::npos) << e.what();
          throw;
        }
      },
      std::runtime_error);
  std::stringstream foreign("name: not an archive\n");
  EXPECT_THROW(read_run_archive(foreign), std::runtime_error);
}

}  // namespace
}  // namespace trainsim::analysis
