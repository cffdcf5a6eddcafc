// Chakra execution traces: the ET file format, the import of traces other
// tools wrote (ASTRA-sim's examples, tests/fixtures/chakra/astra-sim), and
// the export / import round trip of trainsim's own task graphs.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/graph/adjacency_list.hpp>
#include <filesystem>
#include <fstream>
#include <functional>

#include "platforms/input_error.hpp"
#include "support/files.hpp"
#include "support/test_cluster.hpp"
#include "workloads/chakra/et_file.hpp"
#include "workloads/chakra/trace_export.hpp"
#include "workloads/chakra/trace_import.hpp"
#include "workloads/chakra/trainsim_attributes.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"

namespace trainsim::chakra {
namespace {
namespace fs = std::filesystem;
using workloads::TaskGraph;
using workloads::TaskKind;

const fs::path kFixtures = fs::path(TRAINSIM_SHARED_DIR) / "chakra" / "astra-sim";

std::vector<RankTrace> read_all(const fs::path& where) {
  std::vector<RankTrace> ranks;
  for (const auto& f : find_trace_files(where))
    ranks.push_back({f.path.string(), read_et_file(f.path)});
  return ranks;
}

std::vector<RankTrace> as_ranks(const ExportedTrace& trace) {
  std::vector<RankTrace> ranks;
  for (std::size_t r = 0; r < trace.ranks.size(); ++r)
    ranks.push_back({"rank" + std::to_string(r) + ".et", trace.ranks[r]});
  return ranks;
}

ImportOptions options_for(const ExportedTrace& trace) {
  ImportOptions o;
  for (const auto& [id, ranks] : trace.comm_groups)
    o.comm_groups[std::to_string(id)] = ranks;
  return o;
}

// A 2 x 2 x 2 (dp x tp x pp) 1F1B iteration with ZeRO-1 and sequence
// parallelism: every kind of task and several kinds of groups.
TaskGraph built_graph() {
  auto model = *workloads::find_model_preset("gpt3-1.3b");
  workloads::ParallelPlan plan{.dp = 2, .tp = 2, .pp = 2, .micro_batch_size = 1, .global_batch_size = 8};
  plan.zero_stage = 1;
  plan.sequence_parallel = true;
  const auto cluster = testing::uniform_cluster(1, 8, 100e9, 1e-6);
  return workloads::build_iteration(model, plan, cluster, testing::FixedCostModel(1.25e-3, 2.5e-3));
}

void expect_same_tasks(const TaskGraph& a, const TaskGraph& b) {
  ASSERT_EQ(a.size(), b.size());
  for (workloads::TaskId v = 0; v < a.size(); ++v) {
    const auto &x = a[v], &y = b[v];
    SCOPED_TRACE("task " + std::to_string(v) + " " + workloads::task_label(x));
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.comm, y.comm);
    EXPECT_EQ(x.op, y.op);
    EXPECT_EQ(x.gpu, y.gpu);
    EXPECT_EQ(x.peer, y.peer);
    EXPECT_EQ(x.stage, y.stage);
    EXPECT_EQ(x.chunk, y.chunk);
    EXPECT_EQ(x.transfer, y.transfer);
    EXPECT_EQ(x.micro_batch, y.micro_batch);
    EXPECT_EQ(x.duration_s, y.duration_s);
    EXPECT_EQ(x.model_flops, y.model_flops);
    EXPECT_EQ(x.hardware_flops, y.hardware_flops);
    EXPECT_EQ(x.bytes, y.bytes);
    EXPECT_EQ(x.algorithm, y.algorithm);
    EXPECT_EQ(x.fold, y.fold);
    EXPECT_EQ(x.layer, y.layer);
    EXPECT_EQ(x.attention, y.attention);
    if (x.kind == TaskKind::collective) {
      EXPECT_EQ(a.groups[static_cast<std::size_t>(x.group)], b.groups[static_cast<std::size_t>(y.group)]);
    }
  }
}

// Each task's successors and predecessors, in the graph's own order.
std::vector<std::vector<std::size_t>> neighbours(const TaskGraph& g, bool out) {
  std::vector<std::vector<std::size_t>> result(g.size());
  for (workloads::TaskId v = 0; v < g.size(); ++v) {
    if (out)
      for (auto [e, end] = boost::out_edges(workloads::task_vertex(v), g.dependencies()); e != end; ++e)
        result[v].push_back(boost::target(*e, g.dependencies()));
    else
      for (auto [e, end] = boost::in_edges(workloads::task_vertex(v), g.dependencies()); e != end; ++e)
        result[v].push_back(boost::source(*e, g.dependencies()));
  }
  return result;
}

TEST(ChakraEtFile, WritesAndReadsBackNodesDependenciesAndAttributes) {
  Trace trace;
  trace.version = "0.0.4";
  trace.metadata.push_back(Attribute::string("producer", "test"));
  Node a;
  a.id = 7;
  a.name = "matmul";
  a.type = NodeType::compute;
  a.duration_micros = 42;
  a.attrs = {Attribute::int64("num_ops", 1LL << 40), Attribute::boolean("is_cpu_op", false)};
  Node b;
  b.id = 9;
  b.name = "all_reduce";
  b.type = NodeType::collective;
  b.data_deps = {7};
  b.ctrl_deps = {3};
  b.attrs = {Attribute::int64("comm_type", 0), Attribute::string("pg_name", "2"),
             Attribute::real_value("trainsim.bytes", 1.5), Attribute::int64_list("list", {1, -2, 3})};
  trace.nodes = {a, b};
  const fs::path dir = testing::fresh_dir("chakra-et");
  write_et_file(dir / "t.0.et", trace);
  const Trace back = read_et_file(dir / "t.0.et");
  EXPECT_EQ(back.version, "0.0.4");
  ASSERT_EQ(back.nodes.size(), 2u);
  EXPECT_EQ(back.nodes[0].id, 7u);
  EXPECT_EQ(back.nodes[0].duration_micros, 42u);
  EXPECT_EQ(back.nodes[0].number("num_ops"), double(1LL << 40));
  EXPECT_EQ(back.nodes[1].data_deps, std::vector<std::uint64_t>{7});
  EXPECT_EQ(back.nodes[1].ctrl_deps, std::vector<std::uint64_t>{3});
  EXPECT_EQ(back.nodes[1].text("pg_name"), "2");
  EXPECT_EQ(back.nodes[1].number("trainsim.bytes"), 1.5);
  EXPECT_EQ(back.nodes[1].attr("list")->integers, (std::vector<std::int64_t>{1, -2, 3}));
  fs::remove_all(dir);
}

TEST(ChakraEtFile, ATextFileIsRefusedWithItsName) {
  const fs::path dir = testing::fresh_dir("chakra-bad");
  std::ofstream(dir / "x.0.et") << "this is not a trace, just some text that protobuf cannot parse\n";
  try {
    read_et_file(dir / "x.0.et");
    FAIL() << "expected InputError";
  } catch (const platforms::InputError& e) {
    EXPECT_NE(e.problems().front().find("x.0.et"), std::string::npos) << e.problems().front();
  }
  fs::remove_all(dir);
}

TEST(ChakraTraceFiles, FindsEveryRankByFolderOrPrefixAndNamesAMissingRank) {
  const auto dir = kFixtures / "all_reduce_4npus_1MB";
  EXPECT_EQ(find_trace_files(dir).size(), 4u);
  EXPECT_EQ(find_trace_files(dir / "all_reduce").size(), 4u);
  EXPECT_EQ(find_trace_files(dir / "all_reduce.2.et").size(), 1u);
  const fs::path gap = testing::fresh_dir("chakra-gap");
  fs::copy_file(dir / "all_reduce.0.et", gap / "x.0.et");
  fs::copy_file(dir / "all_reduce.2.et", gap / "x.2.et");
  try {
    find_trace_files(gap);
    FAIL() << "expected InputError";
  } catch (const platforms::InputError& e) {
    EXPECT_NE(e.problems().front().find("rank 1 has no file"), std::string::npos) << e.problems().front();
  }
  fs::remove_all(gap);
}

TEST(ChakraEtFile, ADeviceOrAFifoIsRefusedByTheInputReader) {
  const auto message = [](const fs::path& path) {
    try {
      read_et_file(path);
    } catch (const platforms::InputError& e) {
      return e.problems().front();
    }
    return std::string();
  };
  EXPECT_EQ(
      message("/dev/zero"),
      "/dev/zero: is not a regular file but a character device (expected the Chakra trace file, a file)");
  const fs::path dir = testing::fresh_dir("chakra-fifo");
  ASSERT_EQ(::mkfifo((dir / "t.0.et").c_str(), 0600), 0);
  EXPECT_NE(message(dir / "t.0.et").find("pipe"), std::string::npos);
  fs::remove_all(dir);
}

TEST(ChakraTraceFiles, ALinkLoopNamedLikeARankFileIsNamedAndAFolderSoNamedIsSkipped) {
  const fs::path dir = testing::fresh_dir("chakra-walk");
  fs::copy_file(kFixtures / "all_reduce_4npus_1MB" / "all_reduce.0.et", dir / "x.0.et");
  fs::create_directories(dir / "x.1.et");  // not a rank file
  EXPECT_EQ(find_trace_files(dir).size(), 1u);
  fs::create_symlink(dir / "x.2.et", dir / "x.2.et");
  try {
    find_trace_files(dir);
    FAIL() << "expected InputError";
  } catch (const platforms::InputError& e) {
    EXPECT_EQ(e.problems().front(),
              (dir / "x.2.et").string() +
                  ": cannot read this Chakra trace file: a symbolic link loop (or a chain "
                  "of more than 40 links)");
  }
  // The prefix form reads the same folder the same way.
  EXPECT_THROW(find_trace_files(dir / "x"), platforms::InputError);
  fs::remove_all(dir);
}

TEST(ChakraCommGroups, ARankBeyondAnyClusterAndAFifoAreRefusedNamingTheFile) {
  const fs::path dir = testing::fresh_dir("chakra-groups");
  std::ofstream(dir / "g.json") << R"({"1": [0, 1], "2": [0, 1099511627776]})";
  try {
    read_comm_groups((dir / "g.json").string());
    FAIL() << "expected InputError";
  } catch (const platforms::InputError& e) {
    EXPECT_NE(e.problems().front().find("g.json: group \"2\" holds 1099511627776, not a rank"),
              std::string::npos)
        << e.problems().front();
  }
  ASSERT_EQ(::mkfifo((dir / "f.json").c_str(), 0600), 0);
  EXPECT_THROW(read_comm_groups((dir / "f.json").string()), platforms::InputError);
  fs::remove_all(dir);
}

TEST(ChakraEtFile, GzipCompressedFilesReadTheSame) {
  const fs::path dir = testing::fresh_dir("chakra-gzip");
  const fs::path plain = kFixtures / "custom_ring_allreduce_8npus_1MB" / "custom_allreduce.3.et";
  fs::copy_file(plain, dir / "r.0.et");
  ASSERT_EQ(std::system(("gzip " + testing::shell_quote((dir / "r.0.et").string())).c_str()), 0);
  const Trace a = read_et_file(plain), b = read_et_file(dir / "r.0.et.gz");
  ASSERT_EQ(a.nodes.size(), b.nodes.size());
  for (std::size_t i = 0; i < a.nodes.size(); ++i) {
    EXPECT_EQ(a.nodes[i].id, b.nodes[i].id);
    EXPECT_EQ(a.nodes[i].name, b.nodes[i].name);
    EXPECT_EQ(a.nodes[i].data_deps, b.nodes[i].data_deps);
  }
  EXPECT_EQ(find_trace_files(dir).size(), 1u);
  fs::remove_all(dir);
}

TEST(ChakraImport, AstraSimAllReduceMicrobenchmarkIsOneCollectiveOverEveryRank) {
  const auto imported = import_trace(read_all(kFixtures / "all_reduce_4npus_1MB"), {});
  const auto& g = imported.graph;
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g.gpu_count, 4);
  EXPECT_EQ(g[0].kind, TaskKind::collective);
  EXPECT_EQ(g[0].op, workloads::CollectiveOp::all_reduce);
  EXPECT_EQ(g[0].bytes, 1048576.0);
  EXPECT_EQ(g.groups[static_cast<std::size_t>(g[0].group)], (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(workloads::task_label(g, 0), "all_reduce_4npus_1MB");
}

TEST(ChakraImport, AstraSimRingAllReducePairsEverySendWithItsReceive) {
  const auto imported = import_trace(read_all(kFixtures / "custom_ring_allreduce_8npus_1MB"), {});
  const auto& g = imported.graph;
  const auto& s = imported.stats;
  EXPECT_EQ(g.gpu_count, 8);
  EXPECT_EQ(s.sends, s.recvs);
  EXPECT_GT(s.sends, 0u);
  EXPECT_EQ(s.collectives, 0u);
  std::size_t sends = 0, compute = 0;
  for (workloads::TaskId v = 0; v < g.size(); ++v) {
    const auto& t = g[v];
    if (t.kind == TaskKind::send) {
      ++sends;
      EXPECT_EQ(t.bytes, 131072.0);                                       // 1 MiB in 8 chunks
      EXPECT_EQ(t.peer, (t.gpu + 1) % 8) << workloads::task_label(g, v);  // the ring
    } else {
      ++compute;
      EXPECT_EQ(t.kind, TaskKind::compute);
      EXPECT_DOUBLE_EQ(t.duration_s, 7e-6);
    }
  }
  EXPECT_EQ(sends, s.sends);
  EXPECT_EQ(compute, s.compute);
  EXPECT_EQ(s.nodes, s.sends + s.recvs + s.compute + s.skipped);
  // Every receive's reduction waits for it: a chain through the ring.
  EXPECT_GT(boost::num_edges(g.dependencies()), sends);
}

TEST(ChakraRoundTrip, ExportThenImportGivesTheSameTasksAndEdgeOrder) {
  const TaskGraph original = built_graph();
  const auto exported = export_trace(original, "test");
  ASSERT_EQ(exported.ranks.size(), 8u);
  const auto imported = import_trace(as_ranks(exported), options_for(exported));
  expect_same_tasks(original, imported.graph);
  for (const bool out : {true, false}) {
    const auto a = neighbours(original, out), b = neighbours(imported.graph, out);
    for (std::size_t v = 0; v < a.size(); ++v)
      ASSERT_EQ(a[v], b[v]) << (out ? "successors" : "predecessors") << " of task " << v << " ("
                            << workloads::task_label(original[v]) << ")";
  }
  EXPECT_EQ(boost::num_edges(original.dependencies()), boost::num_edges(imported.graph.dependencies()));
  EXPECT_TRUE(imported.graph.labels.empty());  // trainsim's own labels
}

TEST(ChakraRoundTrip, ThroughFilesOnDiskToo) {
  const TaskGraph original = built_graph();
  const auto exported = export_trace(original, "test");
  const fs::path dir = testing::fresh_dir("chakra-roundtrip");
  write_trace(dir, "it", exported, [](const fs::path& path, const std::function<void(std::ostream&)>& write) {
    std::ofstream out(path, std::ios::binary);
    write(out);
  });
  ImportOptions options;
  options.comm_groups = read_comm_groups((dir / "it.comm_groups.json").string());
  const auto imported = import_trace(read_all(dir / "it"), options);
  expect_same_tasks(original, imported.graph);
  fs::remove_all(dir);
}

TEST(ChakraRoundTrip, ChakraFieldsAloneKeepTheWorkToTheMicrosecond) {
  // What ASTRA-sim sees: no trainsim attributes.
  const TaskGraph original = built_graph();
  const auto exported = export_trace(original, "test");
  auto options = options_for(exported);
  options.trainsim_attributes = false;
  const auto imported = import_trace(as_ranks(exported), options);
  EXPECT_EQ(imported.graph.size(), original.size() + exported.dependency_pairs);
  double original_s = 0, imported_s = 0, original_bytes = 0, imported_bytes = 0;
  for (workloads::TaskId v = 0; v < original.size(); ++v) {
    original_s += original[v].duration_s;
    original_bytes += original[v].bytes;
  }
  for (workloads::TaskId v = 0; v < imported.graph.size(); ++v) {
    imported_s += imported.graph[v].duration_s;
    imported_bytes += imported.graph[v].bytes;
  }
  EXPECT_NEAR(imported_s, original_s, 0.5e-6 * double(original.size()));
  EXPECT_NEAR(imported_bytes, original_bytes, 0.5 * double(original.size()));
}

TEST(ChakraImport, UnmatchedSendNamesTheNodeAndThePeer) {
  Trace r0, r1;
  Node send;
  send.id = 1;
  send.name = "lonely";
  send.type = NodeType::send;
  send.attrs = {Attribute::int32("comm_dst", 1), Attribute::int64("comm_size", 64)};
  r0.nodes = {send};
  try {
    import_trace({{"a.0.et", r0}, {"a.1.et", r1}}, {});
    FAIL() << "expected InputError";
  } catch (const platforms::InputError& e) {
    EXPECT_NE(e.problems().front().find("a.0.et: node 1 (lonely): has no matching COMM_RECV_NODE on rank 1"),
              std::string::npos)
        << e.problems().front();
  }
}

TEST(ChakraImport, CollectiveMissingOnOneRankIsNamed) {
  Trace r0, r1;
  Node coll;
  coll.id = 1;
  coll.name = "ar";
  coll.type = NodeType::collective;
  coll.attrs = {Attribute::int64("comm_type", 0), Attribute::int64("comm_size", 64)};
  r0.nodes = {coll};
  try {
    import_trace({{"a.0.et", r0}, {"a.1.et", r1}}, {});
    FAIL() << "expected InputError";
  } catch (const platforms::InputError& e) {
    EXPECT_NE(e.problems().front().find("has no counterpart on rank 1"), std::string::npos)
        << e.problems().front();
  }
}

TEST(ChakraImport, UnknownDependencyAndProcessGroupAreNamed) {
  Trace r0;
  Node a;
  a.id = 1;
  a.name = "c";
  a.type = NodeType::compute;
  a.data_deps = {99};
  Node b;
  b.id = 2;
  b.name = "ar";
  b.type = NodeType::collective;
  b.attrs = {Attribute::int64("comm_type", 0), Attribute::string("pg_name", "5")};
  r0.nodes = {a, b};
  try {
    import_trace({{"a.0.et", r0}}, {});
    FAIL() << "expected InputError";
  } catch (const platforms::InputError& e) {
    EXPECT_NE(e.problems().front().find("a.0.et: node 1 (c): depends on node 99"), std::string::npos)
        << e.problems().front();
  }
  r0.nodes[0].data_deps.clear();
  try {
    import_trace({{"a.0.et", r0}}, {});
    FAIL() << "expected InputError";
  } catch (const platforms::InputError& e) {
    EXPECT_NE(e.problems().front().find("pg_name '5' is not a known communicator group"), std::string::npos)
        << e.problems().front();
  }
}

TEST(ChakraImport, SkippedNodesPassTheirDependenciesOn) {
  // c1 -> cpu op -> c2: c2 still waits for c1.
  Trace r0;
  Node c1, cpu, c2;
  c1.id = 1;
  c1.type = NodeType::compute;
  c1.duration_micros = 5;
  cpu.id = 2;
  cpu.type = NodeType::compute;
  cpu.attrs = {Attribute::boolean("is_cpu_op", true)};
  cpu.ctrl_deps = {1};
  c2.id = 3;
  c2.type = NodeType::compute;
  c2.duration_micros = 5;
  c2.data_deps = {2};
  r0.nodes = {c1, cpu, c2};
  const auto imported = import_trace({{"a.0.et", r0}}, {});
  ASSERT_EQ(imported.graph.size(), 2u);
  EXPECT_EQ(imported.stats.skipped, 1u);
  EXPECT_TRUE(boost::edge(workloads::task_vertex(0), workloads::task_vertex(1), imported.graph.dependencies())
                  .second);
}

TEST(ChakraImport, FlopsWithoutDurationRunAtTheGivenRate) {
  Trace r0;
  Node c;
  c.id = 1;
  c.type = NodeType::compute;
  c.attrs = {Attribute::int64("num_ops", 2'000'000'000'000), Attribute::uint64("tensor_size", 1'000'000)};
  r0.nodes = {c};
  ImportOptions o;
  o.rates = {{1e15, 1e12}};
  const auto imported = import_trace({{"a.0.et", r0}}, o);
  EXPECT_DOUBLE_EQ(imported.graph[0].duration_s, 2e-3);  // FLOP-bound: 2e12 / 1e15
  EXPECT_EQ(imported.graph[0].model_flops, 2e12);
}

// A task holds its chunk and layer in 16 bits (workloads/task_graph.hpp,
// kMaxTaskLayers): a trace's wider value is named, not wrapped.
TEST(ChakraImport, AChunkOrLayerBeyondWhatATaskHoldsIsNamed) {
  Trace r0;
  Node c;
  c.id = 1;
  c.name = "c";
  c.type = NodeType::compute;
  c.duration_micros = 5;
  c.attrs = {Attribute::uint64(std::string(attribute::task), 0),
             Attribute::int64(std::string(attribute::chunk), 40000),
             Attribute::int64(std::string(attribute::layer), 7)};
  r0.nodes = {c};
  try {
    import_trace({{"a.0.et", r0}}, {});
    FAIL() << "expected InputError";
  } catch (const platforms::InputError& e) {
    EXPECT_NE(e.problems().front().find("a.0.et: node 1 (c): trainsim.chunk 40000 is outside 0..32767"),
              std::string::npos)
        << e.problems().front();
  }
  r0.nodes[0].attrs[1] = Attribute::int64(std::string(attribute::chunk), 3);
  const auto imported = import_trace({{"a.0.et", r0}}, {});
  EXPECT_EQ(imported.graph[0].chunk, 3);
  EXPECT_EQ(imported.graph[0].layer, 7);
}

}  // namespace
}  // namespace trainsim::chakra
