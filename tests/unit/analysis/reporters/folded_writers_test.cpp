// The writers read a folded timeline class by class (RecordList::images_of):
// what a record's images share is formatted once. Their files must be the
// bytes they write for the same records materialised one by one, including
// where an image's task does not share its record's row fields.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

#include "analysis/images_alike.hpp"
#include "analysis/report.hpp"
#include "analysis/reporters/reporters.hpp"
#include "analysis/reporters/run_archive.hpp"
#include "support/test_cluster.hpp"

namespace trainsim::analysis {
namespace {

using workloads::CommKind;
using workloads::TaskKind;

// Two replicas of one GPU each (GPU 0 -> 1 -> 0 under the rotation):
//   task 0 forward mb0 on GPU 0, its image task 1 on GPU 1;
//   task 2 a send 0 -> 1, its image task 3 a send 1 -> 0;
//   task 4 an all-reduce over both GPUs, its own image;
//   task 5 forward mb1 on GPU 0, its image task 6 forward mb2 on GPU 1: not
//   the same name, so its row is formatted whole.
struct FoldedPair {
  workloads::TaskGraph graph;
  platforms::ClusterSpec cluster = testing::uniform_cluster(2, 1, 1e9, 0);
  workloads::ModelSpec model;
  workloads::ParallelPlan plan{.dp = 2, .tp = 1, .pp = 1, .micro_batch_size = 1, .global_batch_size = 2};
  Timeline folded, full;

  // `image_mb`: task 6's micro-batch (1: an image alike to task 5, so GPU
  // 1's row is GPU 0's and gantt.svg draws GPU 0 only). `repeated`: the
  // send and task 5 recorded twice in a row at other times (the writers
  // find an image's task once per run of records of one task).
  explicit FoldedPair(int image_mb = 2, bool repeated = false) {
    graph.gpu_count = 2;
    graph.groups = {{0, 1}};
    for (int gpu : {0, 1})
      graph.add({.kind = TaskKind::forward, .gpu = gpu, .stage = 0, .micro_batch = 0, .duration_s = 1});
    for (int gpu : {0, 1})
      graph.add({.kind = TaskKind::send,
                 .comm = CommKind::pp,
                 .gpu = gpu,
                 .peer = 1 - gpu,
                 .stage = 0,
                 .micro_batch = 0,
                 .bytes = 1e6});
    graph.add({.kind = TaskKind::collective, .comm = CommKind::dp, .group = 0, .stage = 0, .bytes = 3e6});
    for (int gpu : {0, 1})
      graph.add({.kind = TaskKind::forward,
                 .gpu = gpu,
                 .stage = 0,
                 .micro_batch = gpu == 0 ? 1 : image_mb,
                 .duration_s = 1});
    graph.resident_memory.resize(2);
    graph.seal();

    const CollectiveChoice ring{platforms::CollectiveAlgorithm::ring, 2, platforms::Fidelity::automatic};
    for (Timeline* t : {&folded, &full}) {
      t->end_s = 5;
      t->links = {{"gpu0-nic_UP", 1e9, 1e-6}, {"gpu1-nic_UP", 1e9, 1e-6}};
      t->flow_links = {0, 1};
      t->collectives[4] = ring;
      t->gpu_energy_J = {1.5, 2.5};
    }
    folded.records = {{0, 0, Stream::compute, 0, 1.25},
                      {2, 0, Stream::pp_comm, 1.25, 2},
                      {4, 0, Stream::dp_comm, 2, 3.1},
                      {4, 1, Stream::dp_comm, 2, 3.1},
                      {5, 0, Stream::compute, 3.1, 4.5}};
    folded.flows = {{2, 0, 1, 1e6, 1.25, 2, 0, 1}};
    full.records = {{0, 0, Stream::compute, 0, 1.25},  {1, 1, Stream::compute, 0, 1.25},
                    {2, 0, Stream::pp_comm, 1.25, 2},  {3, 1, Stream::pp_comm, 1.25, 2},
                    {4, 0, Stream::dp_comm, 2, 3.1},   {4, 1, Stream::dp_comm, 2, 3.1},
                    {5, 0, Stream::compute, 3.1, 4.5}, {6, 1, Stream::compute, 3.1, 4.5}};
    if (repeated) {  // the same records, the send and task 5 twice
      folded.records = {{0, 0, Stream::compute, 0, 1.25},   {2, 0, Stream::pp_comm, 1.25, 2},
                        {2, 0, Stream::pp_comm, 1.5, 2.25}, {4, 0, Stream::dp_comm, 2, 3.1},
                        {4, 1, Stream::dp_comm, 2, 3.1},    {5, 0, Stream::compute, 3.1, 4.5},
                        {5, 0, Stream::compute, 4.5, 4.75}};
      full.records = {{0, 0, Stream::compute, 0, 1.25},   {1, 1, Stream::compute, 0, 1.25},
                      {2, 0, Stream::pp_comm, 1.25, 2},   {3, 1, Stream::pp_comm, 1.25, 2},
                      {2, 0, Stream::pp_comm, 1.5, 2.25}, {3, 1, Stream::pp_comm, 1.5, 2.25},
                      {4, 0, Stream::dp_comm, 2, 3.1},    {4, 1, Stream::dp_comm, 2, 3.1},
                      {5, 0, Stream::compute, 3.1, 4.5},  {6, 1, Stream::compute, 3.1, 4.5},
                      {5, 0, Stream::compute, 4.5, 4.75}, {6, 1, Stream::compute, 4.5, 4.75}};
    }
    full.flows = {{2, 0, 1, 1e6, 1.25, 2, 0, 1}, {3, 1, 0, 1e6, 1.25, 2, 1, 1}};

    FoldImages images;
    images.order = 2;
    images.tasks = *PermutationPowers::of(std::vector<std::size_t>{1, 0, 3, 2, 4, 6, 5}, 2);
    images.endpoints = *PermutationPowers::of(std::vector<int>{1, 0}, 2);
    images.route_slot = {0, FoldImages::kNoRoute, FoldImages::kNoRoute};
    images.route_images = {0, 1};
    const auto shared = std::make_shared<const FoldImages>(std::move(images));
    folded.records.expand(shared);
    folded.flows.expand(shared);
  }
  RunContext run() const { return {"pair", "pair.yaml", cluster, model, plan, graph}; }
};

TEST(FoldedWriters, TimelineCsvOfAFoldedTimelineIsTheMaterialisedOnesBytes) {
  const FoldedPair p;
  ASSERT_EQ(p.folded.records.size(), p.full.records.size());
  std::ostringstream folded, full;
  write_timeline_csv(folded, p.run(), p.folded);
  write_timeline_csv(full, p.run(), p.full);
  EXPECT_EQ(folded.str(), full.str());
  // The rows the fold shares and the one it formats whole are both there.
  EXPECT_NE(full.str().find("\n1,compute,forward,F mb0,0,0,0,1.25,0,-1,\n"), std::string::npos) << full.str();
  EXPECT_NE(full.str().find("\n1,compute,forward,F mb2,2,0,3.1,4.5,0,-1,\n"), std::string::npos)
      << full.str();
  EXPECT_NE(full.str().find("\n1,pp_comm,send,pp send mb0,0,0,1.25,2,1000000,0,\n"), std::string::npos)
      << full.str();
  EXPECT_NE(full.str().find("\n1,dp_comm,collective,dp all_reduce,-1,0,2,3.1,3000000,-1,ring\n"),
            std::string::npos)
      << full.str();
}

// gantt.svg, trace.json and links.csv of a folded timeline: the bytes of the
// same records materialised, whether an image's row is drawn (image_mb 2)
// or folded into its record's (1: gantt.svg then skips the images on GPU 1
// without reading their tasks, but a send's, whose peer is drawn).
TEST(FoldedWriters, GanttTraceAndLinksOfAFoldedTimelineAreTheMaterialisedOnesBytes) {
  for (int image_mb : {1, 2}) {
    const FoldedPair p(image_mb);
    const Report folded_report = build_report(p.run(), p.folded);
    const Report full_report = build_report(p.run(), p.full);
    const auto text = [](const auto& write) {
      std::ostringstream out;
      write(out);
      return out.str();
    };
    const std::string gantt =
        text([&](std::ostream& o) { write_gantt_svg(o, p.run(), p.full, full_report); });
    EXPECT_EQ(text([&](std::ostream& o) { write_gantt_svg(o, p.run(), p.folded, folded_report); }), gantt)
        << "image_mb " << image_mb;
    EXPECT_EQ(gantt.find("GPU 1 \u00b7") == std::string::npos, image_mb == 1) << gantt;
    // Each row drawn shows its GPU's send and the one it receives, also
    // when the sender's row is folded away (the long path's boxes).
    std::size_t sends = 0;
    for (auto at = gantt.find("pp send mb0 ("); at != std::string::npos;
         at = gantt.find("pp send mb0 (", at + 1))
      ++sends;
    EXPECT_EQ(sends, image_mb == 1 ? 2u : 4u) << gantt;
    EXPECT_EQ(text([&](std::ostream& o) { write_chrome_trace(o, p.run(), p.folded, folded_report); }),
              text([&](std::ostream& o) { write_chrome_trace(o, p.run(), p.full, full_report); }))
        << "image_mb " << image_mb;
    EXPECT_EQ(text([&](std::ostream& o) { write_links_csv(o, folded_report); }),
              text([&](std::ostream& o) { write_links_csv(o, full_report); }))
        << "image_mb " << image_mb;
    // One hot link, which the flow's image 0 crosses and image 1 does not:
    // the flow is read (an image of its route is hot), each image's counter
    // events only where its own route is.
    for (const int hot : {0, 1}) {
      Report folded_one = folded_report, full_one = full_report;
      folded_one.utilization.hottest = full_one.utilization.hottest = {hot};
      const std::string trace =
          text([&](std::ostream& o) { write_chrome_trace(o, p.run(), p.full, full_one); });
      EXPECT_EQ(text([&](std::ostream& o) { write_chrome_trace(o, p.run(), p.folded, folded_one); }), trace)
          << "image_mb " << image_mb << ", hot link " << hot;
      EXPECT_NE(trace.find("\"link gpu" + std::to_string(hot) + "-nic_UP\""), std::string::npos) << trace;
    }
  }
}

// timeline.csv and gantt.svg find an image's task (whether it is alike, its
// peer) once per run of records of one task: a task recorded twice in a row
// at other times, an alike send and an image of another micro-batch, writes
// the bytes of its records materialised.
TEST(FoldedWriters, RecordsOfOneTaskInARowWriteTheMaterialisedOnesBytes) {
  for (int image_mb : {1, 2}) {
    const FoldedPair p(image_mb, /*repeated=*/true);
    ASSERT_EQ(p.folded.records.size(), p.full.records.size());
    const auto text = [](const auto& write) {
      std::ostringstream out;
      write(out);
      return out.str();
    };
    const std::string csv = text([&](std::ostream& o) { write_timeline_csv(o, p.run(), p.full); });
    EXPECT_EQ(text([&](std::ostream& o) { write_timeline_csv(o, p.run(), p.folded); }), csv)
        << "image_mb " << image_mb;
    EXPECT_NE(csv.find(fmt::format("\n1,compute,forward,F mb{},{},0,4.5,4.75,0,-1,\n", image_mb, image_mb)),
              std::string::npos)
        << csv;
    EXPECT_NE(csv.find("\n1,pp_comm,send,pp send mb0,0,0,1.5,2.25,1000000,0,\n"), std::string::npos) << csv;
    const Report folded_report = build_report(p.run(), p.folded);
    const Report full_report = build_report(p.run(), p.full);
    EXPECT_EQ(text([&](std::ostream& o) { write_gantt_svg(o, p.run(), p.folded, folded_report); }),
              text([&](std::ostream& o) { write_gantt_svg(o, p.run(), p.full, full_report); }))
        << "image_mb " << image_mb;
  }
}

// Which records have alike images, read image by image: the pair's record
// of task 5 when its image (task 6) is of another micro-batch, the send's
// when its image sends elsewhere than its peer's image; none known of a
// list that is not folded, nor of one read through other images than those
// the fact was found for.
TEST(FoldedWriters, ImagesAlikeByReadingFindsTheRecordWhoseImageDiffers) {
  const auto alike = [](const Timeline& t) {
    std::vector<int> out;
    for (std::size_t i = 0; i < t.records.recorded().size(); ++i)
      out.push_back(t.images_alike(i) ? 1 : 0);
    return out;
  };
  // Records: task 0, the send 2, the all-reduce 4 on each GPU (its own
  // image), task 5.
  for (int image_mb : {1, 2}) {
    FoldedPair p(image_mb);
    EXPECT_EQ(alike(p.folded), (std::vector<int>{0, 0, 0, 0, 0})) << "not known until found";
    p.folded.alike = images_alike_by_reading(p.graph, p.folded.records);
    EXPECT_EQ(alike(p.folded), (std::vector<int>{1, 1, 1, 1, image_mb == 1 ? 1 : 0})) << image_mb;
  }
  {
    FoldedPair p(1);
    p.graph[3].peer = 1;  // GPU 1 sends to itself, not to GPU 0 (the image of GPU 0's peer)
    p.folded.alike = images_alike_by_reading(p.graph, p.folded.records);
    EXPECT_EQ(alike(p.folded), (std::vector<int>{1, 0, 1, 1, 1}));
  }
  FoldedPair p(1);
  EXPECT_FALSE(images_alike_by_reading(p.graph, p.full.records).known());
  p.folded.alike = ImagesAlike::every(p.folded.records.shared_fold_images());
  EXPECT_EQ(alike(p.folded), (std::vector<int>{1, 1, 1, 1, 1}));
  // The same records read through a copy of the images: not the ones found.
  Timeline other = p.folded;
  const std::vector<TaskRecord> records = std::as_const(p.folded.records).recorded();
  other.records.clear();
  for (const TaskRecord& r : records)
    other.records.push_back(r);
  other.records.expand(std::make_shared<const FoldImages>(*p.folded.records.fold_images()));
  EXPECT_EQ(alike(other), (std::vector<int>{0, 0, 0, 0, 0}));
}

// timeline.csv, gantt.svg and trace.json take an alike record's images'
// fields and peers from the record (Timeline::alike) instead of reading
// their tasks: the same bytes as without the fact and as the records
// materialised, with a record whose image differs (image_mb 2) among them.
TEST(FoldedWriters, WritersThatTakeAlikeImagesFromTheirRecordWriteTheSameBytes) {
  const auto text = [](const auto& write) {
    std::ostringstream out;
    write(out);
    return out.str();
  };
  for (const bool repeated : {false, true}) {
    for (int image_mb : {1, 2}) {
      FoldedPair p(image_mb, repeated);
      Timeline known = p.folded;
      known.alike = images_alike_by_reading(p.graph, known.records);
      ASSERT_TRUE(known.images_alike(0));
      const Report folded_report = build_report(p.run(), p.folded);
      const Report full_report = build_report(p.run(), p.full);
      for (const Timeline* t : {&p.full, &p.folded, &known}) {
        const Report& report = t == &p.full ? full_report : folded_report;
        EXPECT_EQ(text([&](std::ostream& o) { write_timeline_csv(o, p.run(), *t); }),
                  text([&](std::ostream& o) { write_timeline_csv(o, p.run(), p.full); }))
            << image_mb << repeated;
        EXPECT_EQ(text([&](std::ostream& o) { write_gantt_svg(o, p.run(), *t, report); }),
                  text([&](std::ostream& o) { write_gantt_svg(o, p.run(), p.full, full_report); }))
            << image_mb << repeated;
        EXPECT_EQ(text([&](std::ostream& o) { write_chrome_trace(o, p.run(), *t, report); }),
                  text([&](std::ostream& o) { write_chrome_trace(o, p.run(), p.full, full_report); }))
            << image_mb << repeated;
      }
    }
  }
}

// Every record, flow, link, route and collective choice, field by field, in order.
void expect_same_timeline(const Timeline& a, const Timeline& b) {
  ASSERT_EQ(a.records.size(), b.records.size());
  for (std::size_t i = 0; i < a.records.size(); ++i) {
    const TaskRecord x = a.records[i], y = b.records[i];
    EXPECT_TRUE(x.task == y.task && x.gpu == y.gpu && x.stream == y.stream && x.start_s == y.start_s &&
                x.end_s == y.end_s)
        << "record " << i;
  }
  ASSERT_EQ(a.flows.size(), b.flows.size());
  for (std::size_t i = 0; i < a.flows.size(); ++i) {
    const FlowRecord x = a.flows[i], y = b.flows[i];
    EXPECT_TRUE(x.task == y.task && x.src_gpu == y.src_gpu && x.dst_gpu == y.dst_gpu && x.bytes == y.bytes &&
                x.start_s == y.start_s && x.end_s == y.end_s && x.first_link == y.first_link &&
                x.link_count == y.link_count)
        << "flow " << i;
  }
  ASSERT_EQ(a.links.size(), b.links.size());
  for (std::size_t i = 0; i < a.links.size(); ++i)
    EXPECT_EQ(a.links[i].name, b.links[i].name);
  EXPECT_EQ(a.flow_links, b.flow_links);
  EXPECT_EQ(a.gpu_energy_J, b.gpu_energy_J);
  EXPECT_EQ(a.end_s, b.end_s);
  ASSERT_EQ(a.collectives.size(), b.collectives.size());
  for (const auto& [task, c] : b.collectives) {
    const auto* other = a.collective_choice(task);
    ASSERT_NE(other, nullptr) << "task " << task;
    EXPECT_TRUE(other->algorithm == c.algorithm && other->channels == c.channels &&
                other->fidelity == c.fidelity && other->representation == c.representation)
        << "task " << task;
  }
}

// The pair with a collective choice on a class of tasks (2 and its image 3),
// expanded on the folded timeline as the fold's expansion does.
FoldedPair with_class_choices() {
  FoldedPair p;
  const CollectiveChoice tree{platforms::CollectiveAlgorithm::tree, 4, platforms::Fidelity::detailed,
                              Representation::isolated};
  for (Timeline* t : {&p.folded, &p.full})
    t->collectives[2] = t->collectives[3] = tree;
  return p;
}

std::uint32_t version_of(const std::string& archive) {
  std::uint32_t version = 0;
  (void)run_archive_body(archive, &version);
  return version;
}

TEST(FoldedWriters, TheArchiveOfAFoldedTimelineHoldsEachClassOnceAndReadsAsTheMaterialisedOne) {
  const FoldedPair p = with_class_choices();
  std::ostringstream folded, full;
  write_run_archive(folded, "{}", p.graph, p.folded);
  write_run_archive(full, "{}", p.graph, p.full);
  EXPECT_EQ(version_of(folded.str()), kRunArchiveFoldVersion);
  EXPECT_EQ(version_of(full.str()), kRunArchiveWholeVersion);
  const auto back = parse_run_archive(folded.str());
  EXPECT_TRUE(back.timeline.records.expanded());
  EXPECT_EQ(back.timeline.records.recorded().size(), 5u);  // the classes, not their 8 records
  EXPECT_EQ(back.timeline.flows.recorded().size(), 1u);
  expect_same_timeline(back.timeline, p.full);
  expect_same_timeline(parse_run_archive(full.str()).timeline, p.full);
  EXPECT_FALSE(back.fold.considered);
  // Written again from what was read: the same bytes.
  std::ostringstream again;
  write_run_archive(again, "{}", p.graph, back.timeline);
  EXPECT_EQ(again.str(), folded.str());
  // The writers read it as the records materialised.
  std::ostringstream csv_back, csv_full;
  write_timeline_csv(csv_back, p.run(), back.timeline);
  write_timeline_csv(csv_full, p.run(), p.full);
  EXPECT_EQ(csv_back.str(), csv_full.str());
}

TEST(FoldedWriters, AFoldedTimelineWhoseClassChoicesDifferIsArchivedWhole) {
  FoldedPair p = with_class_choices();
  for (Timeline* t : {&p.folded, &p.full})
    t->collectives[3].channels = 8;
  std::ostringstream folded;
  write_run_archive(folded, "{}", p.graph, p.folded);
  EXPECT_EQ(version_of(folded.str()), kRunArchiveWholeVersion);
  const auto back = parse_run_archive(folded.str());
  EXPECT_FALSE(back.timeline.records.expanded());
  expect_same_timeline(back.timeline, p.full);
}

TEST(FoldedWriters, TheFoldsSummaryIsArchivedWithAFoldedOrWholeTimeline) {
  const FoldedPair p = with_class_choices();
  const FoldSummary fold{.considered = true,
                         .folded = true,
                         .replicas = 2,
                         .simulated = 1,
                         .class_size = 2,
                         .folded_why = "2 replicas in 1 class of 2",
                         .stopped = "nothing"};
  for (const Timeline* t : {&p.folded, &p.full}) {
    std::ostringstream out;
    write_run_archive(out, "{}", p.graph, *t, fold);
    EXPECT_EQ(version_of(out.str()), kRunArchiveFoldVersion);
    const auto back = parse_run_archive(out.str());
    EXPECT_EQ(back.timeline.records.expanded(), t == &p.folded);
    EXPECT_TRUE(back.fold.considered && back.fold.folded);
    EXPECT_EQ(back.fold.replicas, 2);
    EXPECT_EQ(back.fold.simulated, 1);
    EXPECT_EQ(back.fold.class_size, 2);
    EXPECT_EQ(back.fold.folded_why, fold.folded_why);
    EXPECT_EQ(back.fold.stopped, fold.stopped);
    expect_same_timeline(back.timeline, p.full);
  }
}

// A folded archive's body edited at `at` (4 bytes) and sealed again, as
// damage the checksum would not catch: the decoder must refuse it, saying why.
void expect_refused(const std::string& archive, std::size_t at, std::uint32_t value, const std::string& why) {
  std::string body = run_archive_body(archive);
  ASSERT_LE(at + 4, body.size());
  std::memcpy(body.data() + at, &value, sizeof value);
  try {
    (void)parse_run_archive(seal_run_archive(body, kRunArchiveFoldVersion));
    ADD_FAILURE() << "read: " << why;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

TEST(FoldedWriters, AFoldedArchiveWithDamagedImagesIsRefused) {
  const FoldedPair p = with_class_choices();
  std::ostringstream out;
  write_run_archive(out, "{}", p.graph, p.folded);
  const std::string archive = out.str();
  // Body: metadata "{}" (8 + 2), GPU count (4), task count (8), fingerprint
  // (8), the fold's summary (1 + 1 + 3 x 4 + two empty strings, 8 each), the
  // order (4), the task images' count (8) and the 7 tasks' images (4 each),
  // the 2 endpoints' (8 + 2 x 4), the 2 route images (8 + 2 x 4), ...
  const std::size_t tasks_at = 10 + 4 + 8 + 8 + 30 + 4 + 8;
  const std::size_t routes_at = tasks_at + 7 * 4 + 8 + 2 * 4 + 8;
  expect_refused(archive, tasks_at, 0, "task images are not a rotation of order 2");  // task 0 fixed, 1 not
  expect_refused(archive, routes_at + 4, 5, "route image out of range");
  expect_refused(archive, routes_at, 1, "route images out of order");
  // The choices, last before the end mark (15 bytes each, by task: 2, then
  // the spanning 4): task 2's class stored under its image 3.
  const std::size_t choices_end = run_archive_body(archive).size() - 4;
  expect_refused(archive, choices_end - 30, 3, "stored under another task");
}

}  // namespace
}  // namespace trainsim::analysis
