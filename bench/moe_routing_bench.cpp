// Cost of skewed routing's per-layer work outside SimGrid: drawing a
// layer's expert shares and the Monte Carlo of DeepEP's touch
// probabilities (workloads/skewed_touch.hpp, 32,768 tokens), which the
// graph builder runs once per MoE layer and EP layout of a skewed deepep
// plan. DeepSeek-V3's router (256 experts, top-8, at most 4 nodes a token
// as its report trains it) over EP 64 on 8 nodes, Zipf 0.5.
#include <benchmark/benchmark.h>

#include "workloads/expert_routing.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/skewed_touch.hpp"

namespace {
using namespace trainsim;

workloads::ModelSpec zipf_deepseek_v3() {
  workloads::ModelSpec m = *workloads::find_model_preset("deepseek-v3");
  m.moe.routing.kind = workloads::RoutingKind::zipf;
  m.moe.routing.skew = 0.5;
  m.moe.routing.seed = 1;
  m.moe.max_nodes_per_token = 4;
  return m;
}

void BM_ExpertLoadsDeepseekV3(benchmark::State& state) {
  const workloads::ModelSpec m = zipf_deepseek_v3();
  for (auto _ : state)
    benchmark::DoNotOptimize(workloads::expert_loads(m));
}
BENCHMARK(BM_ExpertLoadsDeepseekV3)->Unit(benchmark::kMillisecond);

void BM_SkewedTouchOneLayerEp64(benchmark::State& state) {
  const workloads::ModelSpec m = zipf_deepseek_v3();
  const workloads::ExpertLoads loads = workloads::expert_loads(m);
  const auto& share = loads.of_layer(m.layers - 1);
  for (auto _ : state)
    benchmark::DoNotOptimize(
        workloads::skewed_touch_probabilities(m.moe, 64, {.nodes = 8, .ranks_per_node = 8}, share));
}
BENCHMARK(BM_SkewedTouchOneLayerEp64)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
