#pragma once
// Other names the scenario sections accept for their keys: Megatron-LM's
// argument names (its YAML config and its --flags with '-' for '_'), so a
// Megatron user can write `num_layers: 24` or `--set
// plan.tensor_model_parallel_size=2`. Only names that mean exactly the same
// thing in the same unit are here: Megatron's --ddp-bucket-size counts
// parameters (ours is bytes) and its --swiglu is a flag (ours: mlp), so
// they are not aliases.
#include "platforms/yaml_reader.hpp"

namespace trainsim::scenario {

inline const platforms::KeyAliases kModelKeyAliases{
    {"num_layers", "layers"},
    {"hidden_size", "hidden"},
    {"num_attention_heads", "heads"},
    {"seq_length", "seq_len"},
    {"padded_vocab_size", "vocab"},
    {"vocab_size", "vocab"},
    {"ffn_hidden_size", "ffn_hidden"},
    {"num_query_groups", "kv_heads"},
    {"use_flash_attn", "flash_attention"},
};

inline const platforms::KeyAliases kMoeKeyAliases{
    {"num_experts", "experts"},
    {"moe_router_topk", "top_k"},
    {"moe_ffn_hidden_size", "expert_ffn_hidden"},
    {"moe_router_num_groups", "router_num_groups"},
    {"moe_router_group_topk", "router_group_topk"},
};

inline const platforms::KeyAliases kPlanKeyAliases{
    {"tensor_model_parallel_size", "tp"},
    {"pipeline_model_parallel_size", "pp"},
    {"data_parallel_size", "dp"},
    {"virtual_pipeline_model_parallel_size", "virtual_stages"},
    {"context_parallel_size", "context_parallel"},
    {"expert_model_parallel_size", "expert_parallel"},
    {"expert_tensor_parallel_size", "expert_tensor_parallel"},
    {"recompute_granularity", "recompute"},
    {"decoder_first_pipeline_num_layers", "first_stage_layers"},
    {"decoder_last_pipeline_num_layers", "last_stage_layers"},
    {"account_for_embedding_in_pipeline_split", "embedding_in_split"},
    {"account_for_loss_in_pipeline_split", "loss_in_split"},
    {"pipeline_model_parallel_layout", "pipeline_layout"},
};

}  // namespace trainsim::scenario
