// The `plan` keys for heterogeneous clusters: an uneven partition of the
// layers over the pipeline stages (stage_layers) and uneven micro-batch
// shares over the data-parallel replicas (dp_micro_batches), and the rules
// that tie them to the model and the rest of the plan. docs/heterogeneous.md.
#include <fmt/format.h>

#include <numeric>

#include "sim/scenario/sections.hpp"

namespace trainsim::scenario {
namespace {

std::string list_text(const std::vector<int>& values) {
  std::string text;
  for (int v : values)
    text += (text.empty() ? "" : ", ") + std::to_string(v);
  return "[" + text + "]";
}

// Entries below 1, as "entry 2 (stage 2) is 0".
std::string zero_entries(const std::vector<int>& values, const char* what) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] < 1)
      text += fmt::format("{}entry {} ({} {}) is {}", text.empty() ? "" : ", ", i, what, i, values[i]);
  return text;
}

}  // namespace

void read_partition_options(platforms::MapReader& p, Scenario& scenario) {
  auto& plan = scenario.plan;
  if (auto layers = p.integer_list("stage_layers", 0, kMaxCount))
    plan.stage_layers.assign(layers->begin(), layers->end());
  if (auto shares = p.integer_list("dp_micro_batches", 0, kMaxCount))
    plan.dp_micro_batches.assign(shares->begin(), shares->end());
}

bool validate_stage_layers(platforms::MapReader& p, const Scenario& scenario) {
  const auto& plan = scenario.plan;
  const auto& layers = plan.stage_layers;
  const int stages = plan.pp * plan.virtual_stages;
  const std::string stages_text = plan.virtual_stages > 1 ? fmt::format("pp x virtual_stages = {} x {} = {}",
                                                                        plan.pp, plan.virtual_stages, stages)
                                                          : fmt::format("pp = {}", plan.pp);
  const std::size_t before = p.error_count();
  if (static_cast<int>(layers.size()) != stages)
    p.error("stage_layers",
            fmt::format("{} has {} entr{}, but the pipeline has {} stages; expected one layer count per "
                        "{}stage ({} entries) in model order",
                        list_text(layers), layers.size(), layers.size() == 1 ? "y" : "ies", stages_text,
                        plan.virtual_stages > 1 ? "virtual " : "", stages));
  if (const std::string zeros = zero_entries(layers, plan.virtual_stages > 1 ? "virtual stage" : "stage");
      !zeros.empty())
    p.error("stage_layers",
            fmt::format("{}: {}; expected every stage to hold at least one layer", list_text(layers), zeros));
  const int sum = std::accumulate(layers.begin(), layers.end(), 0);
  if (sum != scenario.model.layers)
    p.error("stage_layers",
            fmt::format("{} adds up to {} layers, but model.layers = {}; expected the "
                        "entries to add up to {}",
                        list_text(layers), sum, scenario.model.layers, scenario.model.layers));
  return p.error_count() == before;
}

bool validate_dp_micro_batches(platforms::MapReader& p, const Scenario& scenario) {
  const auto& plan = scenario.plan;
  const auto& shares = plan.dp_micro_batches;
  const std::size_t before = p.error_count();
  if (static_cast<int>(shares.size()) != plan.dp)
    p.error(
        "dp_micro_batches",
        fmt::format("{} has {} entr{}, but dp = {}; expected one micro-batch count per data-parallel "
                    "replica ({} entries)",
                    list_text(shares), shares.size(), shares.size() == 1 ? "y" : "ies", plan.dp, plan.dp));
  if (const std::string zeros = zero_entries(shares, "replica"); !zeros.empty())
    p.error("dp_micro_batches", fmt::format("{}: {}; expected every replica to run at least one micro-batch",
                                            list_text(shares), zeros));
  const long long sum = std::accumulate(shares.begin(), shares.end(), 0LL);
  if (sum * plan.micro_batch_size != plan.global_batch_size)
    p.error("dp_micro_batches",
            fmt::format("{} adds up to {} micro-batches of micro_batch_size {} = {} sequences, but "
                        "global_batch_size = {}; expected the entries to add up to global_batch_size / "
                        "micro_batch_size = {}",
                        list_text(shares), sum, plan.micro_batch_size, sum * plan.micro_batch_size,
                        plan.global_batch_size,
                        plan.global_batch_size % plan.micro_batch_size == 0
                            ? std::to_string(plan.global_batch_size / plan.micro_batch_size)
                            : fmt::format("{} / {} (not a whole number: fix global_batch_size)",
                                          plan.global_batch_size, plan.micro_batch_size)));
  if (plan.zero_stage >= 2)
    p.error("dp_micro_batches",
            fmt::format("given with zero_stage {}: ZeRO-{} runs a collective over the data-parallel group "
                        "after every micro-batch, which needs every replica to run the same number; "
                        "expected zero_stage 0 or 1, or the key left out",
                        plan.zero_stage, plan.zero_stage));
  return p.error_count() == before;
}

}  // namespace trainsim::scenario
