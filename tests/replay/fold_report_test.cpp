// The analyses per fold class (analysis/fold_classes.hpp) against the same
// analyses over the folded timeline's records materialised (every image a
// record of its own, so that every GPU and link is computed on its own): every
// figure must be bit for bit the same. One TEST = one simulation (SimGrid
// keeps one engine per process).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/execution_index.hpp"
#include "analysis/fold_classes.hpp"
#include "analysis/gpu_power.hpp"
#include "analysis/memory_curve.hpp"
#include "analysis/report.hpp"
#include "analysis/summary.hpp"
#include "sim/replay/simulation.hpp"
#include "sim/scenario/scenario.hpp"

namespace trainsim::analysis {
namespace {

// The folded timeline as the full list reads, held record by record.
Timeline materialised(const Timeline& folded) {
  Timeline full;
  full.end_s = folded.end_s;
  full.collectives = folded.collectives;
  full.links = folded.links;
  full.flow_links = folded.flow_links;
  full.gpu_energy_J = folded.gpu_energy_J;
  for (const auto& r : folded.records)
    full.records.push_back(r);
  for (const auto& f : folded.flows)
    full.flows.push_back(f);
  return full;
}

void expect_same(const Utilization& a, const Utilization& b) {
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  for (std::size_t g = 0; g < a.gpus.size(); ++g) {
    const auto &x = a.gpus[g], &y = b.gpus[g];
    EXPECT_EQ(x.gpu, y.gpu);
    EXPECT_EQ(x.compute_busy_s, y.compute_busy_s) << "gpu " << g;
    EXPECT_EQ(x.comm_busy_s, y.comm_busy_s) << "gpu " << g;
    EXPECT_EQ(x.overlap_s, y.overlap_s) << "gpu " << g;
    EXPECT_EQ(x.comm_busy_by_kind_s, y.comm_busy_by_kind_s) << "gpu " << g;
    EXPECT_EQ(x.exposed_by_kind_s, y.exposed_by_kind_s) << "gpu " << g;
  }
  EXPECT_EQ(a.exposed_by_kind_s, b.exposed_by_kind_s);
  EXPECT_EQ(a.exposed_by_op_s, b.exposed_by_op_s);
  ASSERT_EQ(a.links.size(), b.links.size());
  for (std::size_t l = 0; l < a.links.size(); ++l) {
    const auto &x = a.links[l], &y = b.links[l];
    EXPECT_EQ(x.link, y.link);
    EXPECT_EQ(x.name, y.name);
    EXPECT_EQ(x.bytes, y.bytes) << x.name;
    EXPECT_EQ(x.flows, y.flows) << x.name;
    EXPECT_EQ(x.busy_s, y.busy_s) << x.name;
    EXPECT_EQ(x.busy_fraction, y.busy_fraction) << x.name;
    EXPECT_EQ(x.utilization, y.utilization) << x.name;
    EXPECT_EQ(x.peak_concurrent_flows, y.peak_concurrent_flows) << x.name;
  }
  EXPECT_EQ(a.hottest, b.hottest);
}

void expect_same(const BubbleReport& a, const BubbleReport& b) {
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  for (std::size_t g = 0; g < a.gpus.size(); ++g) {
    const auto &x = a.gpus[g], &y = b.gpus[g];
    EXPECT_EQ(x.cause_s, y.cause_s) << "gpu " << g;
    EXPECT_EQ(x.idle_part_s, y.idle_part_s) << "gpu " << g;
    EXPECT_EQ(x.waiting_part_s, y.waiting_part_s) << "gpu " << g;
    EXPECT_EQ(x.idle_s, y.idle_s) << "gpu " << g;
    EXPECT_EQ(x.exposed_comm_s, y.exposed_comm_s) << "gpu " << g;
    EXPECT_EQ(x.lost_s, y.lost_s) << "gpu " << g;
  }
  EXPECT_EQ(a.total_cause_s, b.total_cause_s);
  EXPECT_EQ(a.total_lost_s, b.total_lost_s);
  ASSERT_EQ(a.stages.size(), b.stages.size());
  for (std::size_t s = 0; s < a.stages.size(); ++s)
    EXPECT_EQ(a.stages[s].cause_s, b.stages[s].cause_s) << "stage " << s;
}

void expect_same(const EnergyReport& a, const EnergyReport& b) {
  EXPECT_TRUE(a.measured);
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  for (std::size_t g = 0; g < a.gpus.size(); ++g) {
    EXPECT_EQ(a.gpus[g].idle_energy_J, b.gpus[g].idle_energy_J) << "gpu " << g;
    EXPECT_EQ(a.gpus[g].communication_energy_J, b.gpus[g].communication_energy_J) << "gpu " << g;
  }
  EXPECT_EQ(a.energy_J, b.energy_J);
  EXPECT_EQ(a.idle_energy_J, b.idle_energy_J);
  EXPECT_EQ(a.communication_energy_J, b.communication_energy_J);
  EXPECT_EQ(a.idle_energy_by_cause_J, b.idle_energy_by_cause_J);
}

void expect_same(const CriticalPath& a, const CriticalPath& b) {
  ASSERT_EQ(a.segments.size(), b.segments.size());
  int links = 0;
  for (std::size_t i = 0; i < a.segments.size(); ++i) {
    EXPECT_EQ(a.segments[i].task, b.segments[i].task) << i;
    EXPECT_EQ(a.segments[i].link, b.segments[i].link) << i;
    EXPECT_EQ(a.segments[i].start_s, b.segments[i].start_s) << i;
    links += a.segments[i].link >= 0;
  }
  EXPECT_GT(links, 0) << "the critical path crosses no link: the link-load index is not exercised";
}

// The execution index over the folded records (an image task's releaser
// taken as the image of its class's first's) against the one over every
// record: task by task, and the same topological order.
void expect_same(const ExecutionIndex& a, const ExecutionIndex& b, std::size_t tasks) {
  for (workloads::TaskId v = 0; v < tasks; ++v) {
    ASSERT_EQ(a.ran(v), b.ran(v)) << "task " << v;
    EXPECT_EQ(a.start_s(v), b.start_s(v)) << "task " << v;
    EXPECT_EQ(a.end_s(v), b.end_s(v)) << "task " << v;
    EXPECT_EQ(a.stream_predecessor(v), b.stream_predecessor(v)) << "task " << v;
    EXPECT_EQ(a.releaser(v), b.releaser(v)) << "task " << v;
    EXPECT_EQ(a.tied(v), b.tied(v)) << "task " << v;
  }
  EXPECT_EQ(a.last_task(), b.last_task());
  EXPECT_EQ(a.topological_order(), b.topological_order());
}

// Every GPU's memory curve, peak and breakdown, bit for bit; `shared`: the
// GPUs of one orbit hold their representative's curve (one copy of its
// points), else every GPU its own.
void expect_same(const MemoryCurves& a, const MemoryCurves& b, const GpuClasses& classes, bool shared) {
  ASSERT_EQ(a.gpus.size(), b.gpus.size());
  std::size_t images = 0;
  for (std::size_t g = 0; g < a.gpus.size(); ++g) {
    const auto &x = a.gpus[g], &y = b.gpus[g];
    EXPECT_EQ(x.gpu, y.gpu);
    ASSERT_EQ(x.points().size(), y.points().size()) << "gpu " << g;
    for (std::size_t i = 0; i < x.points().size(); ++i) {
      EXPECT_EQ(x.points()[i].time_s, y.points()[i].time_s) << "gpu " << g << " point " << i;
      EXPECT_EQ(x.points()[i].bytes, y.points()[i].bytes) << "gpu " << g << " point " << i;
    }
    EXPECT_EQ(x.peak_bytes, y.peak_bytes) << "gpu " << g;
    EXPECT_EQ(x.peak_time_s, y.peak_time_s) << "gpu " << g;
    for (int k = 0; k < workloads::kMemoryKindCount; ++k) {
      EXPECT_EQ(x.resident.bytes[k], y.resident.bytes[k]) << "gpu " << g;
      EXPECT_EQ(x.at_peak.bytes[k], y.at_peak.bytes[k]) << "gpu " << g;
    }
    const auto rep = classes.representative(g);
    EXPECT_EQ(x.curve == a.gpus[rep].curve, shared || rep == g) << "gpu " << g;
    images += rep != g;
  }
  EXPECT_EQ(images > 0, shared);
  EXPECT_EQ(a.peak_bytes, b.peak_bytes);
  EXPECT_EQ(a.peak_gpu, b.peak_gpu);
}

// Simulates `file` folded (with `overrides`), then holds every analysis per
// class to the same analysis over the materialised records.
void expect_per_class_equals_full(const std::string& file, const std::vector<std::string>& overrides,
                                  int class_size) {
  const auto scenario = scenario::load_scenario(std::string(TRAINSIM_SOURCE_DIR) + "/" + file, overrides);
  sim::SimulationOptions options;
  options.fold = sim::FoldMode::on;
  const auto result = sim::simulate(scenario, options);
  const Timeline& folded = result.timeline;
  ASSERT_TRUE(folded.records.expanded()) << "not folded";
  ASSERT_EQ(folded.records.fold_images()->order, class_size);
  const auto gpus = static_cast<std::size_t>(result.graph.gpu_count);
  // The classes are taken (not the identity fallback) on the folded
  // timeline, and not on the materialised one.
  EXPECT_TRUE(GpuClasses::of(result.graph, folded, gpus).folded());
  EXPECT_TRUE(LinkClasses::of(folded).folded());
  const Timeline full = materialised(folded);
  EXPECT_FALSE(GpuClasses::of(result.graph, full, gpus).folded());
  EXPECT_FALSE(LinkClasses::of(full).folded());

  const RunContext run{.scenario_name = "fold",
                       .scenario_file = file,
                       .cluster = scenario.cluster,
                       .model = scenario.model,
                       .plan = scenario.plan,
                       .graph = result.graph};
  const auto a = build_report(run, folded, &result.summary);
  const auto b = build_report(run, full, &result.summary);
  expect_same(a.utilization, b.utilization);
  expect_same(a.bubbles, b.bubbles);
  EXPECT_EQ(a.bubbles.reference_iteration_time_s, b.bubbles.reference_iteration_time_s);
  EXPECT_EQ(a.bubbles.balanced_routing_iteration_time_s, b.bubbles.balanced_routing_iteration_time_s);
  expect_same(ExecutionIndex(result.graph, folded), ExecutionIndex(result.graph, full), result.graph.size());
  // The report's bubbles read their communication intervals from
  // utilisation's pass: the same figures as the bubbles' own pass, per class
  // (the full timeline's are held against these above).
  {
    const auto classes = GpuClasses::of(result.graph, folded, gpus);
    SharedIntervalLists comm_busy;
    analyze_utilization(result.graph, folded, classes, LinkClasses::of(folded), &comm_busy);
    ASSERT_EQ(comm_busy.size(), gpus);
    const ExecutionIndex index(result.graph, folded);
    const auto own = analyze_bubbles(result.graph, folded, scenario.plan, index, classes);
    expect_same(a.bubbles, own);
    expect_same(analyze_bubbles(result.graph, folded, scenario.plan, index, classes, nullptr, &comm_busy),
                own);
    // GPU activity's lists reserved from the classes' landing counts: each
    // representative's count is its records as for_each_record gives them.
    std::vector<std::uint32_t> read(gpus, 0);
    classes.for_each_record([&](const TaskRecord& r) {
      ++read[static_cast<std::size_t>(r.gpu)];
      const auto& task = result.graph[r.task];
      if (task.kind == workloads::TaskKind::send && task.peer >= 0)
        ++read[static_cast<std::size_t>(task.peer)];
    });
    ASSERT_EQ(classes.landing_counts().size(), gpus);
    for (std::size_t g = 0; g < gpus; ++g) {
      if (classes.is_representative(g)) {
        EXPECT_EQ(classes.landing_counts()[g], read[g]) << "gpu " << g;
      }
    }
  }
  // The image GPUs' gaps are their representative's, not walked again.
  EXPECT_EQ(a.bubbles.gpus_from_representative, gpus - gpus / static_cast<std::size_t>(class_size));
  EXPECT_EQ(b.bubbles.gpus_from_representative, 0u);
  expect_same(a.energy, b.energy);
  expect_same(a.critical_path, b.critical_path);
  // The collectives' usage read class by class (a record of a task that is
  // not a collective, or of one already counted, skips its images).
  ASSERT_EQ(a.collectives.size(), b.collectives.size());
  EXPECT_FALSE(a.collectives.empty());
  for (std::size_t i = 0; i < a.collectives.size(); ++i) {
    const auto &x = a.collectives[i], &y = b.collectives[i];
    EXPECT_EQ(x.comm, y.comm) << i;
    EXPECT_EQ(x.op, y.op) << i;
    EXPECT_EQ(x.algorithm, y.algorithm) << i;
    EXPECT_EQ(x.channels, y.channels) << i;
    EXPECT_EQ(x.count, y.count) << i;
    EXPECT_EQ(x.bytes, y.bytes) << i;
    EXPECT_EQ(x.busy_s, y.busy_s) << i;
    EXPECT_EQ(x.by_representation, y.by_representation) << i;
  }
  const auto sa = summarize(result.graph, folded, scenario.model, scenario.plan, scenario.cluster);
  const auto sb = summarize(result.graph, full, scenario.model, scenario.plan, scenario.cluster);
  ASSERT_EQ(sa.gpus.size(), sb.gpus.size());
  for (std::size_t g = 0; g < sa.gpus.size(); ++g) {
    const auto &x = sa.gpus[g], &y = sb.gpus[g];
    EXPECT_EQ(x.node, y.node) << "gpu " << g;
    EXPECT_EQ(x.compute_s, y.compute_s) << "gpu " << g;
    EXPECT_EQ(x.communication_s, y.communication_s) << "gpu " << g;
    EXPECT_EQ(x.overlap_s, y.overlap_s) << "gpu " << g;
    EXPECT_EQ(x.idle_s, y.idle_s) << "gpu " << g;
    EXPECT_EQ(x.model_flops, y.model_flops) << "gpu " << g;
    EXPECT_EQ(x.hardware_flops, y.hardware_flops) << "gpu " << g;
  }
  EXPECT_EQ(sa.model_flops, sb.model_flops);
  ASSERT_EQ(sa.stages.size(), sb.stages.size());
  for (std::size_t i = 0; i < sa.stages.size(); ++i) {
    EXPECT_EQ(sa.stages[i].compute_fraction, sb.stages[i].compute_fraction) << "stage " << i;
    EXPECT_EQ(sa.stages[i].bubble_fraction, sb.stages[i].bubble_fraction) << "stage " << i;
  }
  const auto pa = gpu_activity(result.graph, folded, scenario.cluster);
  const auto pb = gpu_activity(result.graph, full, scenario.cluster);
  ASSERT_EQ(pa.size(), pb.size());
  for (std::size_t g = 0; g < pa.size(); ++g) {
    EXPECT_EQ(pa[g].energy_J, pb[g].energy_J) << "gpu " << g;
    EXPECT_EQ(pa[g].waiting_s, pb[g].waiting_s) << "gpu " << g;
    EXPECT_EQ(pa[g].idle_s, pb[g].idle_s) << "gpu " << g;
  }
  EXPECT_EQ(nccl_wait_spans(result.graph, folded), nccl_wait_spans(result.graph, full));

  // The memory curves once per GPU orbit against every GPU's own, and the
  // report's and summary's figures read from them.
  const auto classes = GpuClasses::of(result.graph, folded, gpus);
  expect_same(memory_curves(result.graph, folded), memory_curves(result.graph, full), classes, true);
  ASSERT_EQ(a.memory.gpus.size(), b.memory.gpus.size());
  for (std::size_t g = 0; g < a.memory.gpus.size(); ++g) {
    const auto &x = a.memory.gpus[g], &y = b.memory.gpus[g];
    EXPECT_EQ(x.resident_bytes, y.resident_bytes) << "gpu " << g;
    EXPECT_EQ(x.peak_bytes, y.peak_bytes) << "gpu " << g;
    EXPECT_EQ(x.peak_time_s, y.peak_time_s) << "gpu " << g;
    ASSERT_EQ(x.samples().size(), y.samples().size()) << "gpu " << g;
    for (std::size_t i = 0; i < x.samples().size(); ++i) {
      EXPECT_EQ(x.samples()[i].time_s, y.samples()[i].time_s) << "gpu " << g;
      EXPECT_EQ(x.samples()[i].bytes, y.samples()[i].bytes) << "gpu " << g;
    }
    EXPECT_EQ(x.curve, a.memory.gpus[classes.representative(g)].curve) << "gpu " << g;
  }
  EXPECT_EQ(a.memory.peak_bytes, b.memory.peak_bytes);
  EXPECT_EQ(a.memory.peak_gpu, b.memory.peak_gpu);
  EXPECT_EQ(a.memory.components, b.memory.components);
  for (std::size_t g = 0; g < sa.gpus.size(); ++g) {
    EXPECT_EQ(sa.gpus[g].peak_memory_bytes, sb.gpus[g].peak_memory_bytes) << "gpu " << g;
    EXPECT_EQ(sa.gpus[g].peak_memory_time_s, sb.gpus[g].peak_memory_time_s) << "gpu " << g;
  }
  EXPECT_EQ(sa.peak_memory_bytes, sb.peak_memory_bytes);
  EXPECT_EQ(sa.peak_memory_gpu, sb.peak_memory_gpu);
  EXPECT_EQ(sa.fits_in_memory, sb.fits_in_memory);
}

// scale-16k's plan on 4 rail groups of 4 nodes (m = 2): rings and pipeline
// sends cross the spine, the data-parallel all-reduces span both classes.
TEST(FoldReport, PerClassAnalysesEqualTheFullComputationOnScale16kShrunk) {
  expect_per_class_equals_full(
      "scenarios/scale-16k.yaml",
      {"cluster.nodes=32", "plan.dp=8", "plan.pp=4", "model.layers=8", "plan.stage_layers=[2,2,2,2]",
       "plan.global_batch_size=64", "cluster.fabric.nodes_per_leaf=4"},
      2);
}

// scale-16k-hsdp-70b's plan shrunk (m = 8): per-layer gathers and
// reduce-scatters inside each shard group, shards' all-reduces spanning.
TEST(FoldReport, PerClassAnalysesEqualTheFullComputationOnHsdpShrunk) {
  expect_per_class_equals_full("scenarios/scale-16k-hsdp-70b.yaml",
                               {"cluster.nodes=32", "plan.dp=32", "plan.dp_shard=4", "model.layers=4",
                                "plan.global_batch_size=32", "cluster.fabric.nodes_per_leaf=4"},
                               8);
}

}  // namespace
}  // namespace trainsim::analysis
