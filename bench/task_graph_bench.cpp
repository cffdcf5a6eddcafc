// Cost of the parts of a run that do not need SimGrid: building the task
// graph of one iteration, summarizing a timeline and writing the Chrome
// trace, for the 512-GPU plan of scenarios/scale-512.yaml (TP 8 x PP 8 x DP 8,
// 32 micro-batches). The replay itself is timed end to end by
// bench/time_scenarios (one simulation per process).
#include <benchmark/benchmark.h>

#include <sstream>

#include "analysis/memory_curve.hpp"
#include "analysis/report.hpp"
#include "analysis/reporters/reporters.hpp"
#include "analysis/summary.hpp"
#include "platforms/gpu_spec.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/stage_slices.hpp"

namespace {
using namespace trainsim;

struct Plan512 {
  workloads::ModelSpec model = *workloads::find_model_preset("gpt3-175b");
  workloads::ParallelPlan plan{.dp = 8, .tp = 8, .pp = 8, .micro_batch_size = 1, .global_batch_size = 256};
  platforms::ClusterSpec cluster;
  Plan512() {
    platforms::NodeGroup group;
    group.gpu = *platforms::find_gpu("A100");
    group.nodes = 64;
    group.gpus_per_node = 8;
    group.nvlink = {300e9, 2e-6};
    group.nic = {25e9, 5e-6};
    cluster.groups = {group};
    plan.recompute = workloads::Recompute::full;
  }
};

// A fake timeline: every task runs for 1 ms one after the other on its GPU.
analysis::Timeline fake_timeline(const workloads::TaskGraph& graph) {
  analysis::Timeline t;
  std::vector<double> clock(static_cast<std::size_t>(graph.gpu_count), 0.0);
  for (auto v : boost::make_iterator_range(boost::vertices(graph.dependencies()))) {
    const auto& task = graph[v];
    if (task.kind == workloads::TaskKind::collective) {
      for (int gpu : graph.groups[static_cast<std::size_t>(task.group)]) {
        auto& c = clock[static_cast<std::size_t>(gpu)];
        t.records.push_back({v, gpu, analysis::stream_of(task), c, c + 1e-3});
        c += 1e-3;
      }
    } else {
      auto& c = clock[static_cast<std::size_t>(task.gpu)];
      t.records.push_back({v, task.gpu, analysis::stream_of(task), c, c + 1e-3});
      c += 1e-3;
    }
  }
  for (double c : clock)
    t.end_s = std::max(t.end_s, c);
  return t;
}

// The plan as written (`default`), and with ZeRO-3 / FSDP (`fsdp`): every op
// split per layer, a parameter all-gather and a gradient reduce-scatter per
// layer and micro-batch.
void BM_BuildIteration512Gpus(benchmark::State& state, int zero_stage) {
  Plan512 p;
  if (zero_stage >= 0)
    p.plan.zero_stage = zero_stage;
  const workloads::AnalyticCostModel cost(p.model, p.plan);
  std::size_t tasks = 0;
  for (auto _ : state) {
    auto graph = workloads::build_iteration(p.model, p.plan, p.cluster, cost);
    tasks = graph.size();
    benchmark::DoNotOptimize(graph);
  }
  state.counters["tasks"] = static_cast<double>(tasks);
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * tasks));
}
BENCHMARK_CAPTURE(BM_BuildIteration512Gpus, default, -1)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_BuildIteration512Gpus, fsdp, 3)->Unit(benchmark::kMillisecond);

// The static memory estimate the loader runs before anything is simulated.
void BM_MemoryEstimate512Gpus(benchmark::State& state) {
  Plan512 p;
  const workloads::AnalyticCostModel cost(p.model, p.plan);
  for (auto _ : state) {
    const auto schedule = workloads::schedule_for(p.model, p.plan, p.cluster, cost);
    benchmark::DoNotOptimize(workloads::estimate_memory(p.model, p.plan, schedule));
  }
}
BENCHMARK(BM_MemoryEstimate512Gpus)->Unit(benchmark::kMillisecond);

void BM_MemoryCurves512Gpus(benchmark::State& state) {
  Plan512 p;
  const workloads::AnalyticCostModel cost(p.model, p.plan);
  const auto graph = workloads::build_iteration(p.model, p.plan, p.cluster, cost);
  const auto timeline = fake_timeline(graph);
  for (auto _ : state)
    benchmark::DoNotOptimize(analysis::memory_curves(graph, timeline));
  state.counters["events"] = static_cast<double>(graph.memory.size());
}
BENCHMARK(BM_MemoryCurves512Gpus)->Unit(benchmark::kMillisecond);

void BM_Summarize512Gpus(benchmark::State& state) {
  Plan512 p;
  const workloads::AnalyticCostModel cost(p.model, p.plan);
  const auto graph = workloads::build_iteration(p.model, p.plan, p.cluster, cost);
  const auto timeline = fake_timeline(graph);
  for (auto _ : state)
    benchmark::DoNotOptimize(analysis::summarize(graph, timeline, p.model, p.plan, p.cluster));
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * timeline.records.size()));
}
BENCHMARK(BM_Summarize512Gpus)->Unit(benchmark::kMillisecond);

void BM_ChromeTrace512Gpus(benchmark::State& state) {
  Plan512 p;
  const workloads::AnalyticCostModel cost(p.model, p.plan);
  const auto graph = workloads::build_iteration(p.model, p.plan, p.cluster, cost);
  const auto timeline = fake_timeline(graph);
  const analysis::RunContext run{"bench", "", p.cluster, p.model, p.plan, graph, nullptr};
  const auto report = analysis::build_report(run, timeline);
  for (auto _ : state) {
    std::ostringstream out;
    analysis::write_chrome_trace(out, run, timeline, report);
    benchmark::DoNotOptimize(out.str().size());
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(state.iterations() * timeline.records.size()));
}
BENCHMARK(BM_ChromeTrace512Gpus)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
