#include "analysis/reporters/run_archive.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <sstream>

#include "support/hand_made_runs.hpp"
#include "workloads/task_graph_fingerprint.hpp"

namespace trainsim::analysis {
namespace {

TEST(RunArchive, RoundTripKeepsTheTimelineBitExactAndTheGraphsFingerprint) {
  testing::TwoStagePipeline h;
  h.timeline.gpu_energy_J = {1.0 / 3, 2.0 / 7};
  std::stringstream buffer;
  write_run_archive(buffer, "{\"x\":1}", h.graph, h.timeline);
  const auto a = read_run_archive(buffer);
  EXPECT_EQ(a.metadata_json, "{\"x\":1}");
  EXPECT_EQ(a.task_count, h.graph.size());
  EXPECT_EQ(a.gpu_count, 2);
  EXPECT_EQ(a.graph_fingerprint, workloads::graph_fingerprint(h.graph));
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

TEST(GraphFingerprint, ChangesWithAnyTaskFieldDependencyOrMemoryEvent) {
  testing::TwoStagePipeline h;
  const auto base = workloads::graph_fingerprint(h.graph);
  EXPECT_EQ(workloads::graph_fingerprint(h.graph), base);  // stable
  auto layer = h.graph;
  layer.graph[0].layer = 7;
  EXPECT_NE(workloads::graph_fingerprint(layer), base);
  auto duration = h.graph;
  duration.graph[1].duration_s = std::nextafter(duration.graph[1].duration_s, 1e9);
  EXPECT_NE(workloads::graph_fingerprint(duration), base);
  auto edge = h.graph;
  edge.depend(0, edge.size() - 1);
  EXPECT_NE(workloads::graph_fingerprint(edge), base);
  auto memory = h.graph;
  memory.add_memory(0, 0, workloads::MemoryEvent::At::start, workloads::MemoryKind::activations, 1);
  EXPECT_NE(workloads::graph_fingerprint(memory), base);
}

}  // namespace
}  // namespace trainsim::analysis
