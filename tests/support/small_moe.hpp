#pragma once
// Mixtral's MoE shape shrunk for task-graph tests: narrow layers (hidden
// 1024, 8 heads, 1,024-token sequences, an 8,000-word vocabulary) so a
// graph builds in milliseconds, with the experts a test reasons about; and
// the iteration of a plan on one node of uniform links (100 GB/s, 1 us)
// under the analytic cost model, as the MoE task-graph tests build it; and
// the op of a layer's list a test asks for by name.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "support/test_cluster.hpp"
#include "workloads/cost_model.hpp"
#include "workloads/graph_builder/iteration_builder.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/transformer_ops.hpp"

namespace trainsim::testing {

inline workloads::ModelSpec small_moe_model(int layers, int experts, int top_k, int expert_ffn_hidden) {
  workloads::ModelSpec m = *workloads::find_model_preset("mixtral-8x7b");
  m.layers = layers;
  m.hidden = 1024;
  m.heads = 8;
  m.kv_heads = 8;
  m.ffn_hidden = 2048;
  m.seq_len = 1024;
  m.vocab = 8000;
  m.moe.experts = experts;
  m.moe.top_k = top_k;
  m.moe.expert_ffn_hidden = expert_ffn_hidden;
  return m;
}

inline workloads::TaskGraph iteration_on_one_node(const workloads::ModelSpec& m,
                                                  const workloads::ParallelPlan& plan) {
  const auto cluster = uniform_cluster(1, plan.gpu_count(), 100e9, 1e-6);
  const workloads::AnalyticCostModel cost(m, plan, 0.5);
  return workloads::build_iteration(m, plan, cluster, cost);
}

// A failure (and an empty op) when the list has no op of that name.
inline workloads::TransformerOp op_named(const std::vector<workloads::TransformerOp>& ops,
                                         const std::string& name) {
  for (const auto& op : ops)
    if (op.name == name)
      return op;
  ADD_FAILURE() << "no op named " << name;
  return workloads::TransformerOp{};
}

}  // namespace trainsim::testing
