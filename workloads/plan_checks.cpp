#include "workloads/plan_checks.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>
#include <string>

#include "workloads/op_selective_recompute.hpp"
#include "workloads/recompute_modules.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::workloads {
namespace {

class Problems {
 public:
  void add(const std::string& plan_key, std::string message) {
    list_.push_back({"plan." + plan_key, std::move(message)});
  }
  std::size_t size() const { return list_.size(); }
  std::vector<platforms::Problem> take() { return std::move(list_); }

 private:
  std::vector<platforms::Problem> list_;
};

std::string list_text(const std::vector<int>& values) {
  std::string text;
  for (int v : values)
    text += (text.empty() ? "" : ", ") + std::to_string(v);
  return "[" + text + "]";
}

// The divisors of n, as "1, 2, 4".
std::string divisors_text(int n) {
  std::string text;
  for (int d = 1; d <= n; ++d)
    if (n % d == 0)
      text += (text.empty() ? "" : ", ") + std::to_string(d);
  return text;
}

// Entries below 1, as "entry 2 (stage 2) is 0".
std::string zero_entries(const std::vector<int>& values, const char* what) {
  std::string text;
  for (std::size_t i = 0; i < values.size(); ++i)
    if (values[i] < 1)
      text += fmt::format("{}entry {} ({} {}) is {}", text.empty() ? "" : ", ", i, what, i, values[i]);
  return text;
}

// plan.stage_layers: one layer count per virtual stage, each >= 0, adding
// up to the model's layers. A stage of 0 layers holds what it holds besides
// them (the first the embedding, the last the output layer and the loss;
// Llama 3's and Megatron's layouts), or only passes activations on. True
// when right.
bool check_stage_layers(const ModelSpec& model, const ParallelPlan& plan, Problems& problems) {
  const auto& layers = plan.stage_layers;
  // DualPipe's two chunks are copies of the same pp stages: one entry each.
  const int stages = plan.model_stages();
  const std::string stages_text = stages > plan.pp ? fmt::format("pp x virtual_stages = {} x {} = {}",
                                                                 plan.pp, plan.virtual_stages, stages)
                                                   : fmt::format("pp = {}", plan.pp);
  const std::size_t before = problems.size();
  if (static_cast<int>(layers.size()) != stages)
    problems.add("stage_layers",
                 fmt::format("{} has {} entr{}, but the pipeline has {} stages; expected one layer count per "
                             "{}stage ({} entries) in model order",
                             list_text(layers), layers.size(), layers.size() == 1 ? "y" : "ies", stages_text,
                             stages > plan.pp ? "virtual " : "", stages));
  if (std::any_of(layers.begin(), layers.end(), [](int l) { return l < 0; }))
    problems.add("stage_layers",
                 fmt::format("{} has a negative entry; expected layer counts >= 0", list_text(layers)));
  const int sum = std::accumulate(layers.begin(), layers.end(), 0);
  if (sum != model.layers)
    problems.add("stage_layers", fmt::format("{} adds up to {} layers, but model.layers = {}; expected the "
                                             "entries to add up to {}",
                                             list_text(layers), sum, model.layers, model.layers));
  return problems.size() == before;
}

// plan.dp_micro_batches: one micro-batch count per replica, each >= 1,
// adding up to the global batch. True when right.
bool check_dp_micro_batches(const ParallelPlan& plan, Problems& problems) {
  const auto& shares = plan.dp_micro_batches;
  const std::size_t before = problems.size();
  if (static_cast<int>(shares.size()) != plan.dp)
    problems.add(
        "dp_micro_batches",
        fmt::format("{} has {} entr{}, but dp = {}; expected one micro-batch count per data-parallel "
                    "replica ({} entries)",
                    list_text(shares), shares.size(), shares.size() == 1 ? "y" : "ies", plan.dp, plan.dp));
  if (const std::string zeros = zero_entries(shares, "replica"); !zeros.empty())
    problems.add("dp_micro_batches", fmt::format("{}: {}; expected every replica to run at least one "
                                                 "micro-batch",
                                                 list_text(shares), zeros));
  const long long sum = std::accumulate(shares.begin(), shares.end(), 0LL);
  if (sum * plan.micro_batch_size != plan.global_batch_size)
    problems.add("dp_micro_batches",
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
    problems.add("dp_micro_batches",
                 fmt::format("given with zero_stage {}: ZeRO-{} runs a collective over the data-parallel "
                             "group after every micro-batch, which needs every replica to run the same "
                             "number; expected zero_stage 0 or 1, or the key left out",
                             plan.zero_stage, plan.zero_stage));
  return problems.size() == before;
}

// plan.expert_parallel (workloads/expert_parallel.hpp): Megatron-core's
// rules, and what trainsim's builder supports.
void check_expert_parallel(const ModelSpec& model, const ParallelPlan& plan, Problems& problems) {
  if (plan.ep <= 1)
    return;
  const std::string key = "expert_parallel";
  if (!model.is_moe()) {
    problems.add(key, fmt::format("{} with a dense model ({}): expert parallelism spreads the experts of MoE "
                                  "layers; expected expert_parallel: 1, or a model with model.moe (e.g. "
                                  "preset mixtral-8x7b)",
                                  plan.ep, model.name));
    return;
  }
  if (model.moe.experts % plan.ep != 0)
    problems.add(key, fmt::format("{} does not divide model.moe.experts = {}; expected a divisor of {}",
                                  plan.ep, model.moe.experts, model.moe.experts));
  const int positions = plan.data_parallel_size();
  if (plan.expert_tp_folded()) {
    // Folding: checked with expert_tensor_parallel (the EP group is carved
    // out of the whole stage).
  } else if (positions % plan.ep != 0)
    problems.add(key,
                 fmt::format("{} does not divide dp x cp = {} x {} = {}: the EP group is formed within the "
                             "data-parallel (and context-parallel) GPUs, as in Megatron-core; expected a "
                             "divisor of {}",
                             plan.ep, plan.dp, plan.cp, positions, positions));
  if (plan.tp > 1 && !plan.sequence_parallel)
    problems.add(key,
                 fmt::format("{} with tp = {} needs sequence_parallel: true (Megatron requires sequence "
                             "parallelism for MoE with tensor parallelism: each TP rank dispatches its own "
                             "share of the tokens); expected sequence_parallel: true",
                             plan.ep, plan.tp));
  if (plan.zero_stage >= 2)
    problems.add(key,
                 fmt::format("{} with zero_stage {}: trainsim's expert parallelism supports ZeRO stages 0 "
                             "and 1 (the distributed optimizer); expected zero_stage 0 or 1, or "
                             "expert_parallel: 1",
                             plan.ep, plan.zero_stage));
  if (!plan.dp_micro_batches.empty())
    problems.add(key,
                 fmt::format("{} with dp_micro_batches: an EP group's all-to-alls join GPUs of different "
                             "data-parallel replicas, which must then run the same micro-batches; expected "
                             "no dp_micro_batches, or expert_parallel: 1",
                             plan.ep));
  if (plan.overlap_grad_reduce && plan.expert_tp_folded())
    problems.add(
        key, fmt::format("{} with overlap_grad_reduce and expert_tensor_parallel {} below tp = {}: trainsim "
                         "overlaps the dense and expert gradient reductions with expert_tensor_parallel = "
                         "tp only; expected overlap_grad_reduce: false, or expert_tensor_parallel: {}",
                         plan.ep, plan.expert_tp(), plan.tp, plan.tp));
  if (plan.overlap_param_gather)
    problems.add(
        key, fmt::format("{} with overlap_param_gather: trainsim gathers a MoE model's updated parameters "
                         "(dense and expert groups) after the optimizer step; expected "
                         "overlap_param_gather: false, or expert_parallel: 1",
                         plan.ep));
}

// plan.expert_tensor_parallel: Megatron's --expert-tensor-parallel-size.
// Any divisor of tp: tp (the default), 1 (parallel folding), or one in
// between, whose expert-TP groups all-gather the dispatched tokens before
// the experts and reduce-scatter their outputs after them
// (expert_tensor_parallel_collectives.cpp). Megatron itself takes any etp
// with etp x ep dividing the stage; a divisor of tp keeps each expert-TP
// group inside one NVLink-connected TP group, which is what its users run.
void check_expert_tensor_parallel(const ModelSpec& model, const ParallelPlan& plan, Problems& problems) {
  if (plan.etp <= 0)
    return;
  const std::string key = "expert_tensor_parallel";
  if (!model.is_moe()) {
    problems.add(key,
                 fmt::format("{} with a dense model ({}): expert tensor parallelism splits the experts of "
                             "MoE layers; expected the key left out, or a model with model.moe",
                             plan.etp, model.name));
    return;
  }
  if (plan.tp % plan.etp != 0) {
    problems.add(key, fmt::format("{} does not divide tp = {}: each expert tensor-parallel group is etp "
                                  "consecutive GPUs of one TP group (Megatron's expert rank order "
                                  "tp-ep-dp); expected a divisor of {} ({})",
                                  plan.etp, plan.tp, plan.tp, divisors_text(plan.tp)));
    return;
  }
  if (!plan.expert_tp_folded())
    return;
  const int stage = plan.tp * plan.cp * plan.dp;
  if (stage % (plan.ep * plan.etp) != 0)
    problems.add(
        key, fmt::format("{} with expert_parallel {}: expert_parallel x expert_tensor_parallel = {} does not "
                         "divide tp x cp x dp = {} x {} x {} = {}, the GPUs of a pipeline stage the EP "
                         "groups are carved out of (Megatron-core's expert rank generator); expected "
                         "expert_parallel a divisor of {}",
                         plan.etp, plan.ep, plan.ep * plan.etp, plan.tp, plan.cp, plan.dp, stage,
                         stage / plan.etp));
  if (!plan.sequence_parallel)
    problems.add(key,
                 fmt::format("{} with tp = {} needs sequence_parallel: true (each GPU dispatches its own "
                             "sequence-parallel share of the tokens to the experts); expected "
                             "sequence_parallel: true",
                             plan.etp, plan.tp));
  if (plan.ep <= 1 && (plan.zero_stage >= 2 || plan.overlap_grad_reduce))  // ep > 1: said above
    problems.add(key,
                 fmt::format("{} with {}: trainsim reduces MoE gradients (dense and expert groups) after "
                             "the backward, with ZeRO stage 0 or 1; expected zero_stage 0 or 1 without "
                             "overlap_grad_reduce, or expert_tensor_parallel: {}",
                             plan.etp,
                             plan.zero_stage >= 2 ? fmt::format("zero_stage {}", plan.zero_stage)
                                                  : std::string("overlap_grad_reduce"),
                             plan.tp));
}

// plan.delay_wgrad_compute: Megatron-core asserts the EP A2A overlap
// (transformer_config.py: "overlap_moe_expert_parallel_comm must be enabled
// when enabling delay_wgrad_compute"); the deferral lives in its combined
// 1F1B layer schedule, not in DualPipe's pairs (which split B and W
// themselves), and trainsim does not split the GEMMs that userbuffers pair
// with the TP collectives into input and weight gradients.
void check_delay_wgrad_compute(const ParallelPlan& plan, Problems& problems) {
  if (!plan.delay_wgrad_compute)
    return;
  if (!plan.moe_a2a_overlap)
    problems.add("delay_wgrad_compute",
                 "true without moe_a2a_overlap: the weight gradients are deferred under the expert "
                 "all-to-alls of Megatron's EP A2A overlap, which must be on (Megatron-core asserts it); "
                 "expected moe_a2a_overlap: true, or delay_wgrad_compute: false");
  if (plan.schedule != ScheduleKind::one_f_one_b && plan.schedule != ScheduleKind::interleaved_one_f_one_b)
    problems.add("delay_wgrad_compute",
                 fmt::format("true with schedule {}: the deferral is Megatron's combined 1F1B layer "
                             "schedule's; expected schedule 1f1b or interleaved_1f1b, or "
                             "delay_wgrad_compute: false",
                             to_string(plan.schedule)));
  if (plan.tp_comm_overlap != TpCommOverlap::none)
    problems.add("delay_wgrad_compute",
                 fmt::format("true with tp_comm_overlap: {}: trainsim does not split the GEMMs that "
                             "overlap the TP collectives into input and weight gradients; expected "
                             "tp_comm_overlap: false, or delay_wgrad_compute: false",
                             to_string(plan.tp_comm_overlap)));
}

// plan.moe_dispatcher: DeepEP's dispatch needs a MoE model and is dropless
// (it has no expert capacity to pad to). Where the EP group lies over the
// nodes is the cluster's business (sim/scenario/checks.cpp).
void check_moe_dispatcher(const ModelSpec& model, const ParallelPlan& plan, Problems& problems) {
  if (plan.moe_a2a_overlap && !model.is_moe())
    problems.add(
        "moe_a2a_overlap",
        fmt::format("true with a dense model ({}): it overlaps the expert all-to-alls of MoE layers; "
                    "expected moe_a2a_overlap: false, or a model with model.moe",
                    model.name));
  if (plan.moe_a2a_overlap && plan.schedule != ScheduleKind::one_f_one_b &&
      plan.schedule != ScheduleKind::interleaved_one_f_one_b && plan.schedule != ScheduleKind::dualpipe_v &&
      plan.schedule != ScheduleKind::dualpipe)
    problems.add(
        "moe_a2a_overlap",
        fmt::format("true with schedule {}: the all-to-alls overlap inside Megatron's merged F&B steps "
                    "of 1F1B (interleaved or not) and DualPipe's and DualPipe-V's F&B pairs; expected "
                    "schedule 1f1b, interleaved_1f1b, dualpipe_v or dualpipe, or moe_a2a_overlap: false",
                    to_string(plan.schedule)));
  check_delay_wgrad_compute(plan, problems);
  if (plan.moe_fp8_dispatch.value_or(false) && !plan.fp8_dispatch())
    problems.add("moe_fp8_dispatch",
                 fmt::format("true with moe_dispatcher {} and precision {}: only DeepEP's dispatch sends FP8 "
                             "activations, and only under FP8 training; expected moe_dispatcher: deepep and "
                             "precision: fp8, or moe_fp8_dispatch: false",
                             to_string(plan.moe_dispatcher), to_string(plan.precision)));
  if (plan.moe_dispatcher != MoeDispatcher::deepep)
    return;
  if (!model.is_moe()) {
    problems.add("moe_dispatcher",
                 fmt::format("deepep with a dense model ({}): it dispatches the tokens of MoE layers; "
                             "expected moe_dispatcher: all_to_all, or a model with model.moe",
                             model.name));
    return;
  }
  if (!model.moe.dropless)
    problems.add("moe_dispatcher",
                 fmt::format("deepep with model.moe.capacity_factor {}: DeepEP dispatches every routed "
                             "token (dropless) and pads no expert to a capacity; expected "
                             "capacity_factor: none, or moe_dispatcher: all_to_all",
                             model.moe.capacity_factor));
}

// Sequence and context parallelism, expert parallelism, the framework,
// ZeRO-3 (and its hybrid sharding) and gradient buckets.
// torch's async TP (workloads/torch_async_tp.hpp): torch._inductor's
// micro-pipeline TP pass fuses the sequence-parallel all-gather before a
// GEMM and the reduce-scatter after one, so it needs sequence parallelism
// and torch.compile (torchtitan: "Async TP requires --training.compile"),
// which trainsim writes framework: megatron (its fused kernels); modelled
// for dense layers of standard attention (the fused ops' GEMMs are named
// there).
void check_torch_async_tp(const ModelSpec& model, const ParallelPlan& plan, Problems& problems) {
  if (!plan.torch_async_tp())
    return;
  if (!plan.sequence_parallel)
    problems.add("tp_comm_overlap",
                 "torch_async without sequence parallelism: torch's async TP fuses the sequence-parallel "
                 "all-gather before a GEMM and the reduce-scatter after one (fused_all_gather_matmul, "
                 "fused_matmul_reduce_scatter); expected sequence_parallel: true (with tp >= 2), or "
                 "tp_comm_overlap: false");
  else if (plan.pytorch())
    problems.add("tp_comm_overlap",
                 fmt::format("torch_async with framework {}: async TP is a torch.compile pass (torchtitan: "
                             "\"Async TP requires --training.compile\"), and trainsim writes compiled "
                             "PyTorch as framework: megatron; expected framework: megatron, or "
                             "tp_comm_overlap: false",
                             to_string(plan.framework)));
  if (model.is_moe() || model.is_mla())
    problems.add("tp_comm_overlap",
                 fmt::format("torch_async with a {} model: torch's async TP is modelled for dense layers of "
                             "standard attention (the fused ops' GEMMs: QKV, output projection, MLP up and "
                             "down); expected a dense model without MLA, or tp_comm_overlap: false",
                             model.is_moe() ? "MoE" : "multi-head latent attention"));
}

void check_parallelism_options(const ModelSpec& model, const ParallelPlan& plan, Problems& problems) {
  if (plan.sequence_parallel && plan.tp < 2)
    problems.add("sequence_parallel",
                 fmt::format("true with tp = {}: sequence parallelism splits the activations and the "
                             "layer-norm and dropout work over the tensor-parallel group; expected tp >= 2, "
                             "or sequence_parallel: false",
                             plan.tp));
  if (plan.cp > 1 && model.seq_len % (2 * plan.cp) != 0)
    problems.add("context_parallel",
                 fmt::format("{} does not suit model.seq_len = {}: ring attention splits each sequence into "
                             "2 x context_parallel = {} chunks (Megatron's load-balanced split); expected "
                             "seq_len divisible by {}",
                             plan.cp, model.seq_len, 2 * plan.cp, 2 * plan.cp));
  if (plan.cp > 1 && model.mtp_depth > 0)
    problems.add("context_parallel",
                 fmt::format("{} with model.mtp_depth = {}: Megatron-core's multi-token prediction does not "
                             "support context parallelism (docs multi_token_prediction.md, \"Unsupported "
                             "combinations\"); expected context_parallel: 1, or mtp_depth: 0",
                             plan.cp, model.mtp_depth));
  check_expert_parallel(model, plan, problems);
  check_expert_tensor_parallel(model, plan, problems);
  check_moe_dispatcher(model, plan, problems);
  if (plan.pytorch() && plan.zero_stage != 3)
    problems.add("framework", fmt::format("{} shards with FSDP, but zero_stage is {}; expected zero_stage: 3 "
                                          "(or framework: megatron)",
                                          to_string(plan.framework), plan.zero_stage));
  if (plan.userbuffers() && !plan.sequence_parallel)
    problems.add("tp_comm_overlap",
                 "true without sequence parallelism: Transformer Engine's userbuffers overlap the "
                 "sequence-parallel all-gathers and reduce-scatters with the GEMMs (Megatron's "
                 "--tp-comm-overlap requires --sequence-parallel); expected sequence_parallel: true "
                 "(with tp >= 2), or tp_comm_overlap: false");
  else if (plan.userbuffers() && plan.pytorch())
    problems.add(
        "tp_comm_overlap",
        fmt::format("true with framework {}: the overlap is Transformer Engine's, as Megatron-LM and "
                    "NeMo run it; expected framework: megatron, or tp_comm_overlap: false",
                    to_string(plan.framework)));
  check_torch_async_tp(model, plan, problems);
  if (plan.dp_shard > 0) {
    const int positions = plan.data_parallel_size();
    if (plan.zero_stage != 3)
      problems.add("dp_shard", fmt::format("{} with zero_stage {}: hybrid sharding is FSDP's (PyTorch "
                                           "HYBRID_SHARD); expected zero_stage: 3, or the key left out",
                                           plan.dp_shard, plan.zero_stage));
    else if (plan.dp_shard == 1)
      problems.add("dp_shard",
                   "1 shards nothing: every GPU would hold all the weights, gradients and optimizer "
                   "state, which is plain data parallelism; expected 2 or more (e.g. the GPUs of a "
                   "node), or zero_stage 0 with overlap_grad_reduce for per-bucket all-reduces");
    else if (positions % plan.dp_shard != 0)
      problems.add(
          "dp_shard",
          fmt::format("{} does not divide dp x cp = {} x {} = {}: the shard groups split the "
                      "data-parallel GPUs evenly; expected a divisor of {} (e.g. the GPUs of a node)",
                      plan.dp_shard, plan.dp, plan.cp, positions, positions));
  }
  if (!plan.reshard_after_forward && plan.zero_stage != 3)
    problems.add("reshard_after_forward",
                 fmt::format("false with zero_stage {}: only FSDP (zero_stage 3) shards the parameters and "
                             "gathers them for the forward; expected zero_stage: 3, or the key left out",
                             plan.zero_stage));
  if (plan.grad_reduce_per_step && plan.zero_stage < 2)
    problems.add("grad_reduce",
                 fmt::format("per_step with zero_stage {}: its gradients are reduced once per iteration "
                             "already; the choice is ZeRO-2's and FSDP's (zero_stage 2 or 3), which shard "
                             "the gradients; expected the key left out",
                             plan.zero_stage));
  if (plan.overlap_param_gather && (plan.zero_stage < 1 || plan.zero_stage > 2))
    problems.add(
        "overlap_param_gather",
        fmt::format("true with zero_stage {}: the overlapped parameter all-gather is the distributed "
                    "optimizer's (ZeRO-1 / ZeRO-2: Megatron --overlap-param-gather); {}",
                    plan.zero_stage,
                    plan.zero_stage == 3 ? "FSDP gathers every layer before its forward already "
                                           "(reshard_after_forward chooses how often); expected "
                                           "the key left out"
                                         : "without ZeRO no parameter is gathered; expected "
                                           "zero_stage: 1 or 2, or the key left out"));
  else if (plan.overlap_param_gather && !plan.overlap_grad_reduce)
    problems.add("overlap_param_gather",
                 "true without overlap_grad_reduce: the gathers run in the gradient buckets (Megatron "
                 "asserts --overlap-grad-reduce with --overlap-param-gather); expected overlap_grad_reduce: "
                 "true, or overlap_param_gather: false");
  const bool bucket_given = plan.grad_bucket_bytes > 0;
  if (plan.zero_stage == 3) {
    const std::string why =
        "does not apply with zero_stage 3: FSDP reduce-scatters each layer's gradients as soon as its "
        "backward ends (the layers are its buckets); expected the key left out";
    if (plan.overlap_grad_reduce)
      problems.add("overlap_grad_reduce", why);
    if (bucket_given)
      problems.add("grad_bucket_size", why);
  } else if (bucket_given && !plan.overlap_grad_reduce) {
    problems.add("grad_bucket_size",
                 "given with overlap_grad_reduce off: without overlap the gradients are reduced in one "
                 "collective after the backward; expected overlap_grad_reduce: true, or the key left out");
  }
}

}  // namespace

bool overlap_grad_reduce_allowed(const ParallelPlan& plan) {
  return plan.zero_stage < 3 && !plan.expert_tp_folded();
}

bool overlap_param_gather_allowed(const ParallelPlan& plan) {
  return (plan.zero_stage == 1 || plan.zero_stage == 2) && plan.ep <= 1 && overlap_grad_reduce_allowed(plan);
}

std::vector<platforms::Problem> plan_problems(const ModelSpec& model, const ParallelPlan& plan) {
  Problems problems;
  bool batch_ok = true;
  if (!plan.dp_micro_batches.empty()) {
    batch_ok = check_dp_micro_batches(plan, problems);
  } else if (plan.micro_batch_size * plan.dp <= 0 ||
             plan.global_batch_size % (plan.micro_batch_size * plan.dp) != 0) {
    batch_ok = false;
    problems.add("global_batch_size",
                 fmt::format("{} is not divisible by micro_batch_size x dp = {} x {} = {}; expected a "
                             "multiple of {} (or uneven shares in plan.dp_micro_batches)",
                             plan.global_batch_size, plan.micro_batch_size, plan.dp,
                             plan.micro_batch_size * plan.dp, plan.micro_batch_size * plan.dp));
  }
  bool layers_ok = true;
  if (plan.stage_layers.empty() && (plan.pp <= 0 || model.layers % plan.pp != 0)) {
    layers_ok = false;
    problems.add(
        "pp",
        fmt::format("model.layers = {} is not divisible by pp = {}; expected a divisor of {} "
                    "(or an uneven partition: plan.stage_layers, first_stage_layers / last_stage_layers, "
                    "embedding_in_split / loss_in_split, pipeline_layout)",
                    model.layers, plan.pp, model.layers));
  }
  // Schedule rules (model chunks per GPU, micro-batch counts), checked once
  // the shapes they depend on are known to be right.
  if (plan.virtual_stages == 0) {
    problems.add("virtual_stages",
                 fmt::format("missing: schedule {} needs the number of model chunks per GPU "
                             "(expected an integer >= 2, e.g. virtual_stages: 2)",
                             to_string(plan.schedule)));
  } else {
    if (!plan.stage_layers.empty())
      layers_ok = check_stage_layers(model, plan, problems);
    if (layers_ok && batch_ok)
      for (auto& problem : schedule_problems(plan, model.layers))
        problems.add(problem.key, std::move(problem.message));
  }
  if (plan.tp <= 0 || model.heads % plan.tp != 0)
    problems.add("tp", fmt::format("model.heads = {} is not divisible by tp = {}{}; expected a divisor of {}",
                                   model.heads, plan.tp,
                                   model.is_mla() ? " (multi-head latent attention splits its query and "
                                                    "key/value up projections, attention core and output "
                                                    "projection by heads over the TP group)"
                                                  : "",
                                   model.heads));
  check_parallelism_options(model, plan, problems);
  std::vector<platforms::Problem> out = problems.take();
  for (auto& problem : op_selective_recompute_problems(model, plan))
    out.push_back(std::move(problem));
  for (auto& problem : recompute_modules_problems(model, plan))
    out.push_back(std::move(problem));
  return out;
}

}  // namespace trainsim::workloads
