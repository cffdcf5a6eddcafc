#include "analysis/reporters/run_archive.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
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

// A run the fold considered is written in the fold's format version (its
// records and flows coded as differences) and read back.
RunArchive folded_round_trip(const testing::TwoStagePipeline& h) {
  FoldSummary fold;
  fold.considered = true;
  std::stringstream buffer;
  write_run_archive(buffer, "{}", h.graph, h.timeline, fold);
  std::uint32_t version = 0;
  std::memcpy(&version, buffer.str().data() + 8, sizeof version);
  EXPECT_EQ(version, kRunArchiveFoldVersion);
  return read_run_archive(buffer);
}

std::uint64_t bits(double x) {
  return std::bit_cast<std::uint64_t>(x);
}

// Version 8 codes each flow against the one before: GPUs and routes going
// down as well as up, task ids far apart, bytes and times repeated, a start
// at the previous end, -0 against 0 and a NaN must read back bit for bit.
TEST(RunArchive, FlowsCodedAsDifferencesReadBackBitForBit) {
  testing::TwoStagePipeline h;
  const auto last = static_cast<std::uint64_t>(h.graph.size() - 1);
  h.timeline.flow_links = {0, 1, 0, 1};
  h.timeline.flows = {{3, 1, 0, 1e6, 0.1, 0.2, 2, 2},
                      {0, 0, 1, 1e6, 0.2, 0.2, 0, 1},
                      {last, 1, 0, -0.0, 0.2, 1e300, 1, 3},
                      {1, 0, 0, 0.0, std::nan(""), 0.0, 0, 0},
                      {1, 0, 0, 0.0, std::nan(""), -0.0, 4, 0}};
  const auto a = folded_round_trip(h);
  ASSERT_EQ(a.timeline.flows.size(), h.timeline.flows.size());
  for (std::size_t i = 0; i < h.timeline.flows.size(); ++i) {
    const FlowRecord x = a.timeline.flows[i], y = h.timeline.flows[i];
    EXPECT_TRUE(x.task == y.task && x.src_gpu == y.src_gpu && x.dst_gpu == y.dst_gpu &&
                bits(x.bytes) == bits(y.bytes) && bits(x.start_s) == bits(y.start_s) &&
                bits(x.end_s) == bits(y.end_s) && x.first_link == y.first_link &&
                x.link_count == y.link_count)
        << "flow " << i;
  }
}

// Version 9 codes each task record against the one before, its stream in
// the flags' high bits: tasks and GPUs going down as well as up, every
// stream, times repeated, a start at the previous end, -0 against 0, a NaN
// and an infinity must read back bit for bit; a folded run's records are
// stored by class, so the first record's fields are read as they were.
TEST(RunArchive, RecordsCodedAsDifferencesReadBackBitForBit) {
  testing::TwoStagePipeline h;
  const auto last = static_cast<std::uint64_t>(h.graph.size() - 1);
  h.timeline.records = {
      {last, 1, Stream::ep_comm, 0.5, 0.5},       {0, 0, Stream::compute, 0.5, 0.75},
      {0, 1, Stream::tp_comm, 0.75, 0.75},        {3, 0, Stream::pp_comm, -0.0, 0.0},
      {2, 1, Stream::dp_comm, 0.0, std::nan("")}, {2, 0, Stream::cp_comm, std::nan(""), HUGE_VAL},
      {1, 1, Stream::compute, 0.0, -0.0}};
  const auto a = folded_round_trip(h);
  ASSERT_EQ(a.timeline.records.size(), h.timeline.records.size());
  for (std::size_t i = 0; i < h.timeline.records.size(); ++i) {
    const TaskRecord x = a.timeline.records[i], y = h.timeline.records[i];
    EXPECT_TRUE(x.task == y.task && x.gpu == y.gpu && x.stream == y.stream &&
                bits(x.start_s) == bits(y.start_s) && bits(x.end_s) == bits(y.end_s))
        << "record " << i;
  }
}

// A record's stream is the flags' tag: a tag past the last stream is refused
// (the body edited and sealed again, as damage the checksum would not catch).
TEST(RunArchive, ACodedRecordOfAnUnknownStreamIsRefused) {
  testing::TwoStagePipeline h;
  h.timeline.records = {{0, 0, Stream::ep_comm, 0.5, 0.5}};
  FoldSummary fold;
  fold.considered = true;
  std::stringstream buffer;
  write_run_archive(buffer, "{}", h.graph, h.timeline, fold);
  std::string body = run_archive_body(buffer.str());
  // Body: metadata "{}" (8 + 2), GPU count (4), task count (8), fingerprint
  // (8), the fold's summary (1 + 1 + 3 x 4 + two empty strings, 8 each), the
  // order (4), the records' count (8), then the record's flags.
  const std::size_t flags_at = 10 + 4 + 8 + 8 + 30 + 4 + 8;
  ASSERT_LT(flags_at, body.size());
  EXPECT_EQ(static_cast<unsigned char>(body[flags_at]) >> 3, static_cast<unsigned>(Stream::ep_comm));
  EXPECT_NO_THROW(parse_run_archive(seal_run_archive(body, kRunArchiveFoldVersion)));
  body[flags_at] = static_cast<char>((body[flags_at] & 7) | (kStreamCount << 3));
  try {
    (void)parse_run_archive(seal_run_archive(body, kRunArchiveFoldVersion));
    ADD_FAILURE() << "read a record of stream " << kStreamCount;
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown stream"), std::string::npos) << e.what();
  }
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

TEST(RunArchive, AnyFlippedBitIsRefusedByTheChecksum) {
  testing::TwoStagePipeline h;
  std::stringstream buffer;
  write_run_archive(buffer, "{}", h.graph, h.timeline);
  const std::string bytes = buffer.str();
  // Every byte after the header, one bit each: never read as other figures.
  for (std::size_t at = 12; at < bytes.size(); ++at) {
    std::string flipped = bytes;
    flipped[at] = static_cast<char>(flipped[at] ^ (1 << (at % 8)));
    EXPECT_THROW(parse_run_archive(flipped), std::runtime_error) << "byte " << at;
  }
}

TEST(RunArchive, ResealingAnIntactArchiveChangesNoByte) {
  testing::TwoStagePipeline h;
  std::stringstream buffer;
  write_run_archive(buffer, "{}", h.graph, h.timeline);
  std::string bytes = buffer.str();
  reseal_run_archive(bytes);
  EXPECT_EQ(bytes, buffer.str());
}

TEST(RunArchive, ACorruptCountIsRefusedBeforeAnyAllocation) {
  // A body that starts with an absurd metadata length: the count is checked
  // against the bytes left, not allocated.
  std::string body(64, '\0');
  const std::uint64_t huge = 1ull << 40;
  std::memcpy(body.data(), &huge, sizeof huge);
  for (const auto version : {kRunArchiveWholeVersion, kRunArchiveRawFlowsFoldVersion,
                             kRunArchiveCodedFlowsFoldVersion, kRunArchiveFoldVersion}) {
    try {
      decode_run_archive_body(body, version);
      ADD_FAILURE() << "accepted a corrupt length, version " << version;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("do not fit"), std::string::npos) << e.what();
    }
  }
}

// Versions 6 to 10 are read; another is refused, saying which are read.
TEST(RunArchive, AnArchiveOfAnotherVersionIsRefusedNamingTheVersionsRead) {
  testing::TwoStagePipeline h;
  std::stringstream buffer;
  write_run_archive(buffer, "{}", h.graph, h.timeline);
  std::string bytes = buffer.str();
  const std::uint32_t five = 5;
  std::memcpy(bytes.data() + 8, &five, sizeof five);
  reseal_run_archive(bytes);
  try {
    parse_run_archive(bytes);
    FAIL() << "accepted version 5";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("format version 5, this trainsim reads 6 to 10"), std::string::npos)
        << e.what();
  }
}

// The body size is the second-to-last 8 bytes: a claim far beyond what the
// frame can hold (a decompression bomb, or damage under a matching
// checksum) is refused before anything is allocated or decompressed.
TEST(RunArchive, ABodySizeTheFrameCannotHoldIsRefusedBeforeDecompressing) {
  testing::TwoStagePipeline h;
  std::stringstream buffer;
  write_run_archive(buffer, "{}", h.graph, h.timeline);
  std::string bytes = buffer.str();
  const std::uint64_t huge = 1ull << 40;
  std::memcpy(bytes.data() + bytes.size() - 16, &huge, sizeof huge);
  reseal_run_archive(bytes);
  try {
    parse_run_archive(bytes);
    FAIL() << "accepted a body size of 1 TiB";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot hold"), std::string::npos) << e.what();
  }
  // One byte more than the body: zstd's frame does not fill it.
  bytes = buffer.str();
  std::uint64_t size = 0;
  std::memcpy(&size, bytes.data() + bytes.size() - 16, sizeof size);
  ++size;
  std::memcpy(bytes.data() + bytes.size() - 16, &size, sizeof size);
  reseal_run_archive(bytes);
  EXPECT_THROW(parse_run_archive(bytes), std::runtime_error);
}

// A timeline of many similar records: the archive is compressed.
TEST(RunArchive, TheBodyIsCompressed) {
  testing::TwoStagePipeline h;
  const auto one = h.timeline.records;
  for (int i = 0; i < 2000; ++i)
    for (auto r : one) {
      r.start_s += i * 10.0;
      r.end_s += i * 10.0;
      h.timeline.records.push_back(r);
    }
  std::stringstream buffer;
  write_run_archive(buffer, "{}", h.graph, h.timeline);
  const double raw = 29.0 * h.timeline.records.size();  // a record's bytes in the body
  EXPECT_LT(static_cast<double>(buffer.str().size()), raw / 4);
  EXPECT_EQ(read_run_archive(buffer).timeline.records.size(), h.timeline.records.size());
}

// The fuzz campaign mutates these: a seed of an older format would only ever
// reach the version check. Written again as tests/fuzz/seeds/run_archive/README.md says.
TEST(RunArchive, TheFuzzSeedsAreIntactArchivesOfThisVersion) {
  const std::filesystem::path seeds =
      std::filesystem::path(TRAINSIM_SOURCE_DIR) / "tests/fuzz/seeds/run_archive";
  int archives = 0, folded = 0, fold_considered = 0;
  for (const auto& entry : std::filesystem::directory_iterator(seeds)) {
    if (entry.path().extension() != ".trainsim")
      continue;
    ++archives;
    EXPECT_LE(entry.file_size(), 65536u) << entry.path() << ": over scripts/fuzz's -max_len";
    std::ifstream in(entry.path(), std::ios::binary);
    try {
      const auto archive = read_run_archive(in);
      EXPECT_GT(archive.timeline.records.size(), 0u) << entry.path();
      folded += archive.timeline.records.expanded();
      fold_considered += archive.fold.considered;
      (void)run_metadata_from_json(archive.metadata_json);
    } catch (const std::exception& e) {
      ADD_FAILURE() << entry.path() << ": " << e.what();
    }
  }
  EXPECT_EQ(archives, 9);
  EXPECT_EQ(fold_considered, 6);  // versions 7, 8 and 9
  EXPECT_EQ(folded, 3);           // of them, stored by class
}

TEST(RunMetadata, RoundTripsAndRefusesWrongTypes) {
  RunMetadata m{.trainsim_version = {},
                .scenario_file = "a.yaml",
                .overrides = {"plan.pp=2"},
                .scenario_yaml = "name: a\n",
                .balance = std::nullopt,
                .repeats = RepeatedRuns{.seed = 7,
                                        .iteration_times_s = {1.5, 1.25},
                                        .perturbations = std::nullopt,
                                        .failures = JobFailureOutcome{.run_time_s = 3600, .failures = 2},
                                        .seeds = {}}};
  const auto back = run_metadata_from_json(run_metadata_json(m));
  EXPECT_EQ(back.scenario_file, "a.yaml");
  EXPECT_EQ(back.overrides, m.overrides);
  ASSERT_TRUE(back.repeats && back.repeats->failures);
  EXPECT_EQ(back.repeats->iteration_times_s, m.repeats->iteration_times_s);
  EXPECT_EQ(back.repeats->failures->failures, 2);
  EXPECT_EQ(summary_blocks(*back.repeats).dump(), summary_blocks(*m.repeats).dump());
  // A number where a string belongs, once an internal error (json type_error.302).
  EXPECT_THROW(run_metadata_from_json(R"({"schema": "trainsim.run/1", "trainsim_version": "x",
      "scenario_file": 3, "overrides": [], "scenario_yaml": ""})"),
               std::runtime_error);
  EXPECT_THROW(run_metadata_from_json("[1, 2"), std::runtime_error);
}

TEST(GraphFingerprint, ChangesWithAnyTaskFieldDependencyOrMemoryEvent) {
  testing::TwoStagePipeline h;
  const auto base = workloads::graph_fingerprint(h.graph);
  EXPECT_EQ(workloads::graph_fingerprint(h.graph), base);  // stable
  auto layer = h.graph;
  layer[0].layer = 7;
  EXPECT_NE(workloads::graph_fingerprint(layer), base);
  auto duration = h.graph;
  duration[1].duration_s = std::nextafter(duration[1].duration_s, 1e9);
  EXPECT_NE(workloads::graph_fingerprint(duration), base);
  // The same graph rebuilt with one dependency more (a sealed graph takes
  // none): the rebuilt one without it keeps the fingerprint.
  const auto rebuilt = [&](bool one_more) {
    workloads::TaskGraph g;
    g.gpu_count = h.graph.gpu_count;
    g.groups = h.graph.groups;
    g.resident_memory = h.graph.resident_memory;
    g.memory = h.graph.memory;
    for (workloads::TaskId v = 0; v < h.graph.size(); ++v)
      g.add(h.graph[v]);
    h.graph.for_each_dependency_in_order([&](workloads::TaskId a, workloads::TaskId b) { g.depend(a, b); });
    if (one_more)
      g.depend(0, g.size() - 1);
    g.seal();
    return g;
  };
  EXPECT_EQ(workloads::graph_fingerprint(rebuilt(false)), base);
  EXPECT_NE(workloads::graph_fingerprint(rebuilt(true)), base);
  auto memory = h.graph;
  memory.add_memory(0, 0, workloads::MemoryEvent::At::start, workloads::MemoryKind::activations, 1);
  EXPECT_NE(workloads::graph_fingerprint(memory), base);
}

// Version 10's fingerprint reads every field of a task: one field of one
// task changed, to any other value, changes it (each step a bijection of
// the hash, each field its own bits of one hashed word). Version 6-9's
// changes with every field it reads.
TEST(GraphFingerprint, MultiplyRotateChangesWithEachFieldOfOneTask) {
  using workloads::FingerprintHash;
  using workloads::graph_fingerprint;
  using workloads::Task;
  testing::TwoStagePipeline h;
  const auto base = graph_fingerprint(h.graph, FingerprintHash::multiply_rotate);
  const auto base_fnv1a = graph_fingerprint(h.graph, FingerprintHash::fnv1a);
  EXPECT_NE(base, base_fnv1a);
  struct Edit {
    const char* field;
    void (*edit)(Task&);
    bool fnv1a_reads;
  };
  const Edit edits[] = {
      {"kind", [](Task& t) { t.kind = static_cast<workloads::TaskKind>(static_cast<int>(t.kind) + 1); },
       true},
      {"comm", [](Task& t) { t.comm = static_cast<workloads::CommKind>(static_cast<int>(t.comm) + 1); },
       true},
      {"op", [](Task& t) { t.op = static_cast<workloads::CollectiveOp>(static_cast<int>(t.op) + 1); }, true},
      {"transfer",
       [](Task& t) { t.transfer = static_cast<workloads::TransferKind>(static_cast<int>(t.transfer) + 1); },
       true},
      {"algorithm",
       [](Task& t) {
         t.algorithm = static_cast<platforms::CollectiveAlgorithm>(static_cast<int>(t.algorithm) + 1);
       },
       true},
      {"attention", [](Task& t) { t.attention = !t.attention; }, true},
      {"copy_engine", [](Task& t) { t.copy_engine = !t.copy_engine; }, false},
      {"chunk", [](Task& t) { t.chunk = static_cast<std::int16_t>(-t.chunk - 1); }, true},
      {"layer", [](Task& t) { t.layer = static_cast<std::int16_t>(t.layer + 0x100); }, true},
      {"gpu", [](Task& t) { t.gpu ^= 1 << 20; }, true},
      {"peer", [](Task& t) { t.peer += 1; }, true},
      {"group", [](Task& t) { t.group -= 1; }, true},
      {"stage", [](Task& t) { t.stage += 3; }, true},
      {"micro_batch", [](Task& t) { t.micro_batch = -7; }, true},
      {"exchange", [](Task& t) { t.exchange = 0; }, true},
      {"fold", [](Task& t) { t.fold = 2; }, true},
      {"duration_s", [](Task& t) { t.duration_s = std::nextafter(t.duration_s, 1e9); }, true},
      {"memory_bound_fraction", [](Task& t) { t.memory_bound_fraction = 0.25; }, false},
      {"model_flops", [](Task& t) { t.model_flops = -0.0; }, true},
      {"hardware_flops", [](Task& t) { t.hardware_flops += 1; }, true},
      {"bytes", [](Task& t) { t.bytes = std::nextafter(t.bytes, -1.0); }, true},
      {"imbalance_s", [](Task& t) { t.imbalance_s = 1e-9; }, true},
      {"memory_begin", [](Task& t) { t.memory_begin += 1u << 31; }, true},
      {"memory_end", [](Task& t) { t.memory_end += 1; }, true},
  };
  for (const workloads::TaskId v : {workloads::TaskId{0}, workloads::TaskId{3}}) {
    for (const Edit& e : edits) {
      auto g = h.graph;
      e.edit(g[v]);
      EXPECT_NE(graph_fingerprint(g, FingerprintHash::multiply_rotate), base) << e.field << " of task " << v;
      if (e.fnv1a_reads) {
        EXPECT_NE(graph_fingerprint(g, FingerprintHash::fnv1a), base_fnv1a) << e.field << " of task " << v;
      } else {
        EXPECT_EQ(graph_fingerprint(g, FingerprintHash::fnv1a), base_fnv1a) << e.field << " of task " << v;
      }
    }
  }
}

// The step is a bijection of the hash for each value: two hashes never meet
// after the same value (checked on hashes differing in one bit, and on
// 100,000 pairs), nor one hash after two values.
TEST(GraphFingerprint, MultiplyRotateStepKeepsDifferentHashesAndValuesApart) {
  std::mt19937_64 draw(5);
  for (int i = 0; i < 100000; ++i) {
    const std::uint64_t hash = draw(), value = draw(), other = draw() | 1;
    ASSERT_NE(workloads::multiply_rotate(hash, value), workloads::multiply_rotate(hash ^ other, value));
    ASSERT_NE(workloads::multiply_rotate(hash, value), workloads::multiply_rotate(hash, value ^ other));
    const std::uint64_t bit = std::uint64_t{1} << (i % 64);
    ASSERT_NE(workloads::multiply_rotate(hash, value), workloads::multiply_rotate(hash ^ bit, value));
  }
  // The closed form: (hash ^ value) times 2^64 / the golden ratio (odd), rotated left by 29.
  EXPECT_EQ(workloads::multiply_rotate(0, 1), std::rotl(0x9e3779b97f4a7c15ull, 29));
  EXPECT_EQ(workloads::multiply_rotate(3, 1), std::rotl(0x9e3779b97f4a7c15ull * 2, 29));
}

// Which hash each format version's fingerprint is: FNV-1a through version
// 9, multiply-rotate from 10; written and read back accordingly.
TEST(RunArchive, EachVersionStoresAndReadsItsOwnFingerprintHash) {
  using workloads::FingerprintHash;
  for (const auto version : {kRunArchiveWholeVersion, kRunArchiveRawFlowsFoldVersion,
                             kRunArchiveCodedFlowsFoldVersion, kRunArchiveCodedRecordsFoldVersion})
    EXPECT_EQ(run_archive_fingerprint_hash(version), FingerprintHash::fnv1a) << version;
  EXPECT_EQ(run_archive_fingerprint_hash(kRunArchiveFoldVersion), FingerprintHash::multiply_rotate);
  testing::TwoStagePipeline h;
  FoldSummary considered;
  considered.considered = true;
  for (const bool folded : {false, true}) {
    std::stringstream buffer;
    write_run_archive(buffer, "{}", h.graph, h.timeline, folded ? considered : FoldSummary{});
    std::uint32_t version = 0;
    const std::string body = run_archive_body(buffer.str(), &version);
    EXPECT_EQ(version, folded ? kRunArchiveFoldVersion : kRunArchiveWholeVersion);
    const auto hash = folded ? FingerprintHash::multiply_rotate : FingerprintHash::fnv1a;
    const auto a = decode_run_archive_body(body, version);
    EXPECT_EQ(a.fingerprint_hash, hash);
    EXPECT_EQ(a.graph_fingerprint, workloads::graph_fingerprint(h.graph, hash));
    if (folded) {  // the same body read as version 9: the same numbers, its hash FNV-1a
      const auto v9 = decode_run_archive_body(body, kRunArchiveCodedRecordsFoldVersion);
      EXPECT_EQ(v9.fingerprint_hash, FingerprintHash::fnv1a);
      EXPECT_EQ(v9.graph_fingerprint, a.graph_fingerprint);
      ASSERT_EQ(v9.timeline.records.size(), a.timeline.records.size());
      const auto bits = [](double x) { return std::bit_cast<std::uint64_t>(x); };
      for (std::size_t i = 0; i < a.timeline.records.size(); ++i) {
        const TaskRecord x = v9.timeline.records[i], y = a.timeline.records[i];
        EXPECT_TRUE(x.task == y.task && x.gpu == y.gpu && x.stream == y.stream &&
                    bits(x.start_s) == bits(y.start_s) && bits(x.end_s) == bits(y.end_s))
            << i;
      }
    }
  }
}

}  // namespace
}  // namespace trainsim::analysis
