// Mixture of experts: the presets against their published parameter counts,
// the FLOP identities (task graph = analytic, per-op = analytic), the
// expert-parallel all-to-alls and gradient groups of the task graph, and
// memory per GPU under expert parallelism.
#include <gtest/gtest.h>

#include <algorithm>
#include <boost/graph/adjacency_list.hpp>
#include <map>
#include <set>

#include "support/small_moe.hpp"
#include "support/test_cluster.hpp"
#include "workloads/activation_memory.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/cost_model_per_op.hpp"
#include "workloads/expert_parallel.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/plan_checks.hpp"
#include "workloads/stage_slices.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::workloads {
namespace {

ModelSpec preset(const char* name) {
  const auto m = find_model_preset(name);
  EXPECT_TRUE(m.has_value()) << name;
  return *m;
}

TEST(MoePresets, Mixtral8x7bHas46Point7BParametersOf12Point9BActive) {
  // Jiang et al. 2024: 46.7B parameters, 12.9B used per token.
  const ModelSpec m = preset("mixtral-8x7b");
  EXPECT_NEAR(m.parameter_count() / 1e9, 46.7, 0.05);
  EXPECT_NEAR(m.active_parameter_count() / 1e9, 12.9, 0.05);
  EXPECT_EQ(m.moe_layers_in(0, m.layers), 32);
  // The Hugging Face checkpoint: 46,702,792,704 parameters.
  EXPECT_NEAR(m.parameter_count(), 46702792704.0, 1.0);
}

TEST(MoePresets, DeepSeekMoe16bHas16Point4BParametersOf2Point8BActive) {
  // Dai et al. 2024: 16.4B total, 2.8B activated; its first layer is dense.
  const ModelSpec m = preset("deepseek-moe-16b");
  EXPECT_NEAR(m.parameter_count() / 1e9, 16.4, 0.05);
  EXPECT_NEAR(m.active_parameter_count() / 1e9, 2.8, 0.05);
  EXPECT_FALSE(m.is_moe_layer(0));
  EXPECT_TRUE(m.is_moe_layer(1));
  EXPECT_EQ(m.moe_layers_in(0, m.layers), 27);
  EXPECT_EQ(m.expert_parameters(0), 0);
  EXPECT_DOUBLE_EQ(m.expert_parameters(5), 64 * 3.0 * 2048 * 1408);
}

TEST(MoeModel, LayerFrequencyAndDensePrefixPickTheMoeLayers) {
  ModelSpec m = preset("mixtral-8x7b");
  m.moe.layer_freq = 2;
  EXPECT_EQ(m.moe_layers_in(0, 32), 16);
  EXPECT_TRUE(m.is_moe_layer(0));
  EXPECT_FALSE(m.is_moe_layer(1));
  m.moe.first_dense_layers = 3;
  EXPECT_FALSE(m.is_moe_layer(2));
  EXPECT_TRUE(m.is_moe_layer(4));
  EXPECT_EQ(m.moe_layers_in(0, 32), 14);  // 4, 6, ..., 30
}

TEST(MoeModel, MoeLayerFlopsAreTwiceTokensTimesActiveMatmulParameters) {
  const ModelSpec m = preset("mixtral-8x7b");
  const double tokens = 2.0 * m.seq_len;
  // Active matmul parameters of a layer: attention (no biases, no norms),
  // router, top_k experts.
  const double h = m.hidden, kv = h * m.kv_heads / m.heads;
  const double matmuls = 2 * h * h + 2 * h * kv + h * 8 + 2 * 3 * h * 14336;
  EXPECT_NEAR(m.layer_forward_flops(2, 0), 2 * tokens * matmuls + m.attention_core_forward_flops(2), 1.0);
  // Model FLOPs are those of the active parameters: far below a dense
  // model of the same total size.
  EXPECT_LT(m.iteration_model_flops(8), 0.35 * 6 * m.parameter_count() * 8 * m.seq_len);
}

TEST(MoeOps, PerOpLayerFlopsEqualTheAnalyticMoeLayerAtAnyExpertParallelism) {
  for (const char* name : {"mixtral-8x7b", "deepseek-moe-16b"}) {
    ModelSpec m = preset(name);
    m.flash_attention = false;  // causal FlashAttention executes half the attention-core FLOPs
    for (int ep : {1, 2, 8}) {
      const auto ops = moe_layer_ops(m, layer_setup(m, 2, 1, false, ep));
      double forward = 0, backward = 0;
      for (const auto& op : ops)
        (op.pass == OpPass::forward ? forward : backward) += op.flops;
      const double analytic = m.layer_forward_flops(2, 3);
      EXPECT_NEAR(forward / analytic, 1.0, 1e-12) << name << " ep " << ep;
      EXPECT_NEAR(backward / (2 * analytic), 1.0, 1e-12) << name << " ep " << ep;
    }
  }
}

TEST(MoeOps, ExpertGemmsGetTheirBalancedShareOfTheEpGroupsTokens) {
  const ModelSpec m = preset("mixtral-8x7b");
  for (int ep : {1, 4, 8}) {
    const auto ops = moe_layer_ops(m, layer_setup(m, 1, 1, false, ep));
    bool found = false;
    for (const auto& op : ops)
      if (op.name == "experts_up") {
        found = true;
        EXPECT_DOUBLE_EQ(op.batch, 8.0 / ep);         // local experts
        EXPECT_DOUBLE_EQ(op.m, 4096.0 * 2 * ep / 8);  // tokens x top_k x ep / experts
        EXPECT_DOUBLE_EQ(op.n, 2.0 * 14336);          // gate and up
        EXPECT_EQ(op.kind, OpKind::batched_matmul);
        EXPECT_FALSE(op.attention_core);
      }
    EXPECT_TRUE(found);
  }
}

TEST(MoeOps, PerOpModelTimesMoeLayersSeparatelyFromDenseOnes) {
  const ModelSpec m = preset("deepseek-moe-16b");
  const ParallelPlan plan{.micro_batch_size = 1, .global_batch_size = 1};
  const PerOpCostModel cost(m, plan);
  const auto& gpu = *platforms::find_gpu("H100-SXM");
  const double dense = cost.layer_times(gpu).forward_s, moe = cost.moe_layer_times(gpu).forward_s;
  EXPECT_GT(dense, 0);
  EXPECT_GT(moe, 0);
  // Layers 0..3: one dense, three MoE; layers 4..7: four MoE.
  EXPECT_NEAR(cost.forward({.layers = 4, .first_layer = 0}, gpu).duration_s, dense + 3 * moe, 1e-12);
  EXPECT_NEAR(cost.forward({.layers = 4, .first_layer = 4}, gpu).duration_s, 4 * moe, 1e-12);
  // FLOPs stay the analytic ones.
  const AnalyticCostModel analytic(m, plan, 0.5);
  EXPECT_DOUBLE_EQ(cost.forward({.layers = 4, .first_layer = 0}, gpu).model_flops,
                   analytic.forward({.layers = 4, .first_layer = 0}, gpu).model_flops);
}

// A small MoE model for task-graph tests: 8 layers, 8 experts top-2.
ModelSpec small_moe() {
  return testing::small_moe_model(8, 8, 2, 2048);
}

struct Built {
  TaskGraph graph;
  ParallelPlan plan;
};

Built build(const ModelSpec& m, int dp, int pp, int ep, int micro_batches, int zero_stage = 0) {
  ParallelPlan plan{.dp = dp,
                    .pp = pp,
                    .ep = ep,
                    .micro_batch_size = 1,
                    .global_batch_size = micro_batches * dp,
                    .zero_stage = zero_stage};
  return {testing::iteration_on_one_node(m, plan), plan};
}

std::vector<const Task*> tasks_of(const TaskGraph& g, CommKind comm) {
  std::vector<const Task*> out;
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies())))
    if (g[v].comm == comm)
      out.push_back(&g[v]);
  return out;
}

TEST(ExpertParallelGraph, WithoutExpertParallelismThereIsNoAllToAll) {
  const auto b = build(small_moe(), 4, 2, 1, 4);
  EXPECT_TRUE(tasks_of(b.graph, CommKind::ep).empty());
  for (auto v : boost::make_iterator_range(boost::vertices(b.graph.dependencies())))
    EXPECT_FALSE(b.graph[v].kind == TaskKind::collective && b.graph[v].op == CollectiveOp::all_to_all);
}

TEST(ExpertParallelGraph, EveryMoeLayerRunsFourAllToAllsPerMicroBatchInEachEpGroup) {
  const ModelSpec m = small_moe();
  const int dp = 4, pp = 2, ep = 2, mbs = 3;
  const auto b = build(m, dp, pp, ep, mbs);
  // Per (EP group, micro-batch): folded passes add up to 4 per MoE layer of
  // the group's stage (2 forward: dispatch, combine; 2 backward).
  std::map<std::pair<int, int>, int> passes;
  std::set<int> groups;
  for (const Task* t : tasks_of(b.graph, CommKind::ep)) {
    EXPECT_EQ(t->kind, TaskKind::collective);
    EXPECT_EQ(t->op, CollectiveOp::all_to_all);
    EXPECT_EQ(b.graph.groups[static_cast<std::size_t>(t->group)].size(), static_cast<std::size_t>(ep));
    passes[{t->group, t->micro_batch}] += t->fold;
    groups.insert(t->group);
    // Bytes: each rank's b x s tokens, top_k copies of h in bf16.
    EXPECT_DOUBLE_EQ(t->bytes, 2.0 * 1 * m.seq_len * m.moe.top_k * m.hidden);
  }
  // pp ranks x (dp / ep) EP groups.
  EXPECT_EQ(groups.size(), static_cast<std::size_t>(pp * dp / ep));
  EXPECT_EQ(passes.size(), groups.size() * mbs);
  for (const auto& [key, n] : passes)
    EXPECT_EQ(n, 4 * m.layers / pp) << "group " << key.first << " mb " << key.second;
  // EP groups are ep consecutive data-parallel ranks of one stage.
  for (int g : groups) {
    const auto& members = b.graph.groups[static_cast<std::size_t>(g)];
    EXPECT_EQ(b.plan.pp_rank_of(members[0]), b.plan.pp_rank_of(members[1]));
    EXPECT_EQ(b.plan.dp_rank_of(members[0]) / ep, b.plan.dp_rank_of(members[1]) / ep);
  }
}

TEST(ExpertParallelGraph, DenseLayersOfAMoeModelExchangeNothing) {
  ModelSpec m = small_moe();
  m.moe.layer_freq = 2;  // layers 0, 2, 4, 6
  const auto b = build(m, 2, 1, 2, 2);
  int passes = 0;
  for (const Task* t : tasks_of(b.graph, CommKind::ep))
    passes += t->fold;
  EXPECT_EQ(passes, 4 * 4 * 2);  // 4 per MoE layer, 4 MoE layers, 2 micro-batches, one EP group
}

TEST(ExpertParallelGraph, CapacityFactorScalesTheAllToAllBytes) {
  ModelSpec m = small_moe();
  ParallelPlan plan{.dp = 2, .ep = 2, .micro_batch_size = 2, .global_batch_size = 4};
  const double balanced = ep_all_to_all_bytes(m, plan);
  EXPECT_DOUBLE_EQ(balanced, 2.0 * 2 * 1024 * 2 * 1024);
  m.moe.capacity_factor = 1.25;
  EXPECT_DOUBLE_EQ(ep_all_to_all_bytes(m, plan), 1.25 * balanced);
  // Sequence parallelism: each TP rank dispatches its share of the tokens.
  plan.tp = 2;
  plan.sequence_parallel = true;
  EXPECT_DOUBLE_EQ(ep_all_to_all_bytes(m, plan), 1.25 * balanced / 2);
}

TEST(ExpertParallelGraph, TaskGraphModelFlopsSumToTheAnalyticTotal) {
  const ModelSpec m = small_moe();
  for (int ep : {1, 4}) {
    const auto b = build(m, 4, 2, ep, 4);
    double flops = 0;
    for (auto v : boost::make_iterator_range(boost::vertices(b.graph.dependencies())))
      flops += b.graph[v].model_flops;
    EXPECT_NEAR(flops / m.iteration_model_flops(b.plan.global_batch_size), 1.0, 1e-12) << "ep " << ep;
  }
}

TEST(ExpertParallelGraph, ExpertGradientsReduceOverTheExpertDataParallelGroup) {
  const ModelSpec m = small_moe();
  const int dp = 4, ep = 2;
  const auto b = build(m, dp, 1, ep, 2);
  const double experts = stage_expert_parameters_per_gpu(m, b.plan, 0);
  const double all = stage_parameters_per_gpu(m, b.plan, 0);
  EXPECT_NEAR(experts, m.layers * m.expert_parameters(0) / ep, 1.0);
  std::map<std::size_t, double> bytes_by_group_size;
  int reductions = 0;
  for (const Task* t : tasks_of(b.graph, CommKind::dp)) {
    EXPECT_EQ(t->op, CollectiveOp::all_reduce);
    bytes_by_group_size[b.graph.groups[static_cast<std::size_t>(t->group)].size()] += t->bytes;
    ++reductions;
  }
  EXPECT_EQ(reductions, 1 + ep);  // the dense one, one per expert data-parallel group
  EXPECT_DOUBLE_EQ(bytes_by_group_size[dp], 2 * (all - experts));
  EXPECT_DOUBLE_EQ(bytes_by_group_size[dp / ep], ep * 2 * experts);
  // The expert data-parallel groups are the positions equal modulo ep.
  for (const Task* t : tasks_of(b.graph, CommKind::dp)) {
    const auto& g = b.graph.groups[static_cast<std::size_t>(t->group)];
    if (g.size() == static_cast<std::size_t>(dp / ep)) {
      EXPECT_EQ(b.plan.dp_rank_of(g[0]) % ep, b.plan.dp_rank_of(g[1]) % ep);
    }
  }
}

TEST(ExpertParallelGraph, ZeroOneShardsDenseAndExpertStateOverTheirOwnGroups) {
  const ModelSpec m = small_moe();
  const auto b = build(m, 4, 1, 2, 2, 1);
  int scatters = 0, gathers = 0;
  for (const Task* t : tasks_of(b.graph, CommKind::dp)) {
    scatters += t->op == CollectiveOp::reduce_scatter;
    gathers += t->op == CollectiveOp::all_gather;
  }
  EXPECT_EQ(scatters, 3);
  EXPECT_EQ(gathers, 3);
}

TEST(ExpertParallelGraph, OverlappedReductionBucketsDenseOverDpAndExpertsOverExpertDpDuringTheBackward) {
  const ModelSpec m = small_moe();
  const int dp = 4, ep = 2;
  ParallelPlan plan{.dp = dp, .ep = ep, .micro_batch_size = 1, .global_batch_size = 2 * dp, .zero_stage = 1};
  plan.overlap_grad_reduce = true;
  // Buckets of about two layers' experts: several of each kind per stage.
  const double layer_experts = m.expert_parameters(0) / ep;
  plan.grad_bucket_bytes = 2 * 2 * layer_experts;
  const auto g = testing::iteration_on_one_node(m, plan);
  const double experts = stage_expert_parameters_per_gpu(m, plan, 0);
  const double all = stage_parameters_per_gpu(m, plan, 0);
  std::map<std::size_t, double> bytes_by_group_size;
  std::map<std::size_t, int> reductions_by_group_size;
  int mid_op = 0;
  for (const Task* t : tasks_of(g, CommKind::dp)) {
    if (t->op != CollectiveOp::reduce_scatter)
      continue;
    const std::size_t size = g.groups[static_cast<std::size_t>(t->group)].size();
    bytes_by_group_size[size] += t->bytes;
    ++reductions_by_group_size[size];
    mid_op += t->layer > 0;  // fired by a layer before the op's last (the backward ends at layer 0)
  }
  // The same bytes as after the backward, in more collectives.
  EXPECT_NEAR(bytes_by_group_size[dp], 2 * (all - experts), 1.0);
  EXPECT_NEAR(bytes_by_group_size[dp / ep], ep * 2 * experts, 1.0);
  EXPECT_GE(reductions_by_group_size[dp / ep], ep * 4);  // 8 MoE layers, 2 a bucket, each expert group
  EXPECT_GT(mid_op, 0);
  // Each expert bucket waits for its own group's backward, not the other
  // group's: no expert reduction depends on a GPU outside its group's
  // compute (checked through the members' backward tasks it follows).
  for (auto v : boost::make_iterator_range(boost::vertices(g.dependencies()))) {
    const Task& t = g[v];
    if (t.kind != TaskKind::collective || t.comm != CommKind::dp || t.op != CollectiveOp::reduce_scatter)
      continue;
    const auto& members = g.groups[static_cast<std::size_t>(t.group)];
    if (members.size() != static_cast<std::size_t>(dp / ep))
      continue;
    for (auto e : boost::make_iterator_range(boost::in_edges(workloads::task_vertex(v), g.dependencies()))) {
      const Task& before = g[boost::source(e, g.dependencies())];
      if (before.kind == TaskKind::backward) {
        EXPECT_NE(std::find(members.begin(), members.end(), before.gpu), members.end());
      }
    }
  }
  // The reductions still precede every GPU's optimizer step, and the step
  // time of the replayed graph is not what this checks (the validation
  // rows are): the overlap shows as reductions inside the backward.
}

TEST(ExpertParallelGraph, OverlapIsRefusedOnlyWithExpertTensorParallelBelowTpOrParameterGatherOverlap) {
  const ModelSpec m = small_moe();
  ParallelPlan plan{.dp = 4, .ep = 2, .micro_batch_size = 1, .global_batch_size = 8, .zero_stage = 1};
  plan.overlap_grad_reduce = true;
  EXPECT_TRUE(plan_problems(m, plan).empty());
  auto has = [](const std::vector<platforms::Problem>& problems, const std::string& text) {
    for (const auto& p : problems)
      if (p.message.find(text) != std::string::npos)
        return true;
    return false;
  };
  ParallelPlan folded = plan;
  folded.tp = 2;
  folded.dp = 2;
  folded.sequence_parallel = true;
  folded.etp = 1;
  folded.global_batch_size = 4;
  EXPECT_TRUE(has(plan_problems(m, folded), "with expert_tensor_parallel = tp only"));
  ParallelPlan gather = plan;
  gather.overlap_param_gather = true;
  EXPECT_TRUE(has(plan_problems(m, gather), "with overlap_param_gather"));
}

TEST(ExpertParallelMemory, OverlappedReductionAddsNoMemoryUnderZeroOne) {
  const ModelSpec m = preset("mixtral-8x7b");
  ParallelPlan plan{
      .dp = 8, .pp = 4, .ep = 4, .micro_batch_size = 1, .global_batch_size = 64, .zero_stage = 1};
  const GpuMemoryModel without(m, plan);
  plan.overlap_grad_reduce = true;
  const GpuMemoryModel with(m, plan);
  for (int rank = 0; rank < 4; ++rank)
    EXPECT_DOUBLE_EQ(with.resident(rank).total(), without.resident(rank).total()) << rank;
}

TEST(ExpertParallelMemory, ExpertWeightsAndOptimizerStateShrinkWithEp) {
  const ModelSpec m = preset("mixtral-8x7b");
  double previous = 0;
  for (int ep : {8, 4, 2, 1}) {
    const ParallelPlan plan{
        .dp = 8, .pp = 4, .ep = ep, .micro_batch_size = 1, .global_batch_size = 64, .zero_stage = 1};
    const GpuMemoryModel memory(m, plan);
    const MemoryBreakdown r = memory.resident(1);
    // Rank 1: layers 8..15, no embedding or logits.
    double dense = 0, experts = 0;
    for (int l = 8; l < 16; ++l) {
      experts += m.expert_parameters(l) / ep;
      dense += m.layer_parameters(l) - m.expert_parameters(l);
    }
    EXPECT_NEAR(memory.parameters(1), dense + experts, 1.0);
    EXPECT_NEAR(memory.expert_parameters(1), experts, 1.0);
    // bf16 weights and gradients everywhere; fp32 optimizer state sharded
    // over dp = 8 for dense weights, over dp / ep for the experts.
    EXPECT_NEAR(r[MemoryKind::weights], 2 * (dense + experts), 1.0);
    EXPECT_NEAR(r[MemoryKind::optimizer], 12 * dense / 8 + 12 * experts / (8 / ep), 1.0);
    EXPECT_GT(r.total(), previous);  // less ep, more memory
    previous = r.total();
  }
}

TEST(ExpertParallelMemory, MoeLayerActivationsCountTopKCopiesAtTheExpertSize) {
  const ModelSpec m = preset("mixtral-8x7b");
  const ParallelPlan plan{.micro_batch_size = 1, .global_batch_size = 1, .recompute = Recompute::selective};
  const double sbh = double(m.seq_len) * m.hidden;
  // Dense terms 10 + 4 + 4 x 8/32 per token (in h), SwiGLU 6 f / h per
  // routed copy, and 4 per copy for the permuted inputs and expert outputs.
  const double f = 14336.0 / 4096;
  const double expected = sbh * (10 + 4 + 1 + 6 * f * 2 + 4 * 2);
  EXPECT_NEAR(layer_activation_bytes(m, plan, Recompute::selective, true), expected, 1.0);
  EXPECT_NEAR(stage_activation_bytes(m, plan, 4, 0), 4 * expected, 4.0);
}

}  // namespace
}  // namespace trainsim::workloads
