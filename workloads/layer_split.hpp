#pragma once
// Megatron-LM's ways of asking for a pipeline partition without listing it,
// turned into plan.stage_layers (layers per virtual stage, in model order;
// a virtual stage may hold 0 transformer layers, and the first one always
// holds the embedding, the last the output layer and the loss):
//
//   first_stage_layers / last_stage_layers
//       --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers:
//       the first (last) pipeline rank holds this many layers over all its
//       chunks; the other ranks share the rest evenly; every rank's layers
//       split evenly over its chunks (megatron/core/transformer/
//       transformer_block.py, get_num_layers_to_build).
//   embedding_in_split / loss_in_split
//       --account-for-embedding-in-pipeline-split / --account-for-loss-in-pipeline-split:
//       the embedding (the loss) counts as one layer in the even split of
//       layers + 1 (+ 1) over pp x v virtual stages, so the first (last)
//       virtual stage holds one transformer layer fewer: Llama 3's "first
//       model chunk has only the embedding, the last only the output
//       projection and loss" when chunks hold one layer.
//   pipeline_layout
//       --pipeline-model-parallel-layout: one string of virtual stages
//       separated by '|', in model order, 'E' the embedding, 't' a
//       transformer layer, 'L' the loss, "(...)*n" and "x*n" repeat, commas
//       cosmetic (pipeline_parallel_layer_layout.py, parse_str_to_list):
//       "Et|(tt|)*62,tL" is 64 virtual stages.
// Megatron's own rules apply: the first two not with the next two, the
// layout alone. Each broken rule is a problem keyed by the plan key.
#include <optional>
#include <string>
#include <vector>

#include "platforms/problem.hpp"

namespace trainsim::workloads {

struct LayerSplitRequest {
  std::optional<int> first_stage_layers;
  std::optional<int> last_stage_layers;
  bool embedding_in_split = false;
  bool loss_in_split = false;
  std::optional<std::string> pipeline_layout;
  bool given() const {
    return first_stage_layers || last_stage_layers || embedding_in_split || loss_in_split || pipeline_layout;
  }
};

struct LayerSplit {
  std::vector<int> stage_layers;  // empty when a problem stopped it
  std::vector<platforms::Problem> problems;
};

// The partition `request` asks for, for a model of `layers` layers over pp
// ranks of `virtual_stages` chunks (0: not given; a layout then says it).
LayerSplit split_layers(const LayerSplitRequest& request, int layers, int pp, int virtual_stages);

// The virtual stages a layout string lists (0 when it cannot be read), to
// derive virtual_stages as Megatron does.
int layout_stage_count(const std::string& layout);

}  // namespace trainsim::workloads
