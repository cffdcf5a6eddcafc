// The fold's fact that every image of a recorded record is alike
// (Timeline::alike, analysis/images_alike.hpp), which the fold's expansion
// sets from the fold's check and timeline.csv, gantt.svg and trace.json rest
// on, against reading every image's task; and the writers' bytes with the
// fact against without it, also on the same records over a graph edited so
// that one image differs. One TEST = one simulation (SimGrid keeps one
// engine per process).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "analysis/images_alike.hpp"
#include "analysis/report.hpp"
#include "analysis/reporters/reporters.hpp"
#include "sim/replay/simulation.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::analysis {
namespace {

template <class Write>
std::string text(Write&& write) {
  std::ostringstream out;
  write(out);
  return out.str();
}

// timeline.csv, gantt.svg and trace.json of `timeline` and of `reference`
// (the same records) are the same bytes.
void expect_same_outputs(const RunContext& run, const Timeline& timeline, const Timeline& reference) {
  const Report report = build_report(run, timeline);
  EXPECT_EQ(text([&](std::ostream& o) { write_timeline_csv(o, run, timeline); }),
            text([&](std::ostream& o) { write_timeline_csv(o, run, reference); }));
  EXPECT_EQ(text([&](std::ostream& o) { write_gantt_svg(o, run, timeline, report); }),
            text([&](std::ostream& o) { write_gantt_svg(o, run, reference, report); }));
  EXPECT_EQ(text([&](std::ostream& o) { write_chrome_trace(o, run, timeline, report); }),
            text([&](std::ostream& o) { write_chrome_trace(o, run, reference, report); }));
}

// scale-16k's plan on 4 rail groups of 4 nodes (m = 2): pipeline sends
// whose peers' images are other GPUs, all-reduces spanning both classes
// (their own images).
TEST(FoldedImagesAlike, TheFoldsFactIsWhatReadingEveryImageFindsAndTheWritersBytesHoldWithoutIt) {
  const auto scenario = scenario::load_scenario(
      std::string(TRAINSIM_SOURCE_DIR) + "/scenarios/scale-16k.yaml",
      {"cluster.nodes=32", "plan.dp=8", "plan.pp=4", "model.layers=8", "plan.stage_layers=[2,2,2,2]",
       "plan.global_batch_size=64", "cluster.fabric.nodes_per_leaf=4"});
  sim::SimulationOptions options;
  options.fold = sim::FoldMode::on;
  const auto result = sim::simulate(scenario, options);
  const Timeline& folded = result.timeline;
  ASSERT_TRUE(folded.records.expanded()) << "not folded";
  ASSERT_TRUE(folded.alike.known()) << "the fold's expansion did not set the fact";
  const auto& recorded = folded.records.recorded();

  // The fold's fact, record by record, is what reading every image finds.
  const ImagesAlike read = images_alike_by_reading(result.graph, folded.records);
  std::size_t with_images = 0, sends = 0;
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    EXPECT_TRUE(folded.images_alike(i)) << "record " << i;
    EXPECT_TRUE(read.of(folded.records, i)) << "record " << i;
    if (folded.records.images_of(recorded[i]) > 1) {
      ++with_images;
      sends += result.graph[recorded[i].task].kind == workloads::TaskKind::send;
    }
  }
  EXPECT_GT(with_images, recorded.size() / 2);
  EXPECT_GT(sends, 0u);

  const RunContext run{.scenario_name = "fold",
                       .scenario_file = "scale-16k.yaml",
                       .cluster = scenario.cluster,
                       .model = scenario.model,
                       .plan = scenario.plan,
                       .graph = result.graph};
  Timeline unknown = folded;
  unknown.alike = {};
  ASSERT_FALSE(unknown.images_alike(0));
  expect_same_outputs(run, folded, unknown);

  // One image's task edited into another micro-batch (a forward's) and
  // another's peer (a send's): reading finds those two records and no
  // other, and the writers, taking the others from their records, write
  // what they write reading every image.
  workloads::TaskGraph changed = result.graph;
  std::vector<std::size_t> edited;
  for (std::size_t i = 0; i < recorded.size() && edited.size() < 2; ++i) {
    const auto& task = result.graph[recorded[i].task];
    if (folded.records.images_of(recorded[i]) < 2)
      continue;
    const workloads::TaskId image = folded.records.image(recorded[i], 1).task;
    if (edited.empty() && task.kind == workloads::TaskKind::forward) {
      changed[image].micro_batch += 100;
      edited.push_back(i);
    } else if (edited.size() == 1 && task.kind == workloads::TaskKind::send) {
      changed[image].peer = changed[image].gpu;
      edited.push_back(i);
    }
  }
  ASSERT_EQ(edited.size(), 2u);
  Timeline edited_timeline = folded;
  edited_timeline.alike = images_alike_by_reading(changed, folded.records);
  for (std::size_t i = 0; i < recorded.size(); ++i)
    EXPECT_EQ(edited_timeline.images_alike(i), i != edited[0] && i != edited[1]) << "record " << i;
  const RunContext changed_run{.scenario_name = "fold",
                               .scenario_file = "scale-16k.yaml",
                               .cluster = scenario.cluster,
                               .model = scenario.model,
                               .plan = scenario.plan,
                               .graph = changed};
  expect_same_outputs(changed_run, edited_timeline, unknown);
}

}  // namespace
}  // namespace trainsim::analysis
