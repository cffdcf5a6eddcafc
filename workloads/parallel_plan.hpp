#pragma once
// How one training iteration is split over GPUs (Megatron vocabulary).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace trainsim::workloads {

// Pipeline schedules (workloads/schedules/, one generator per file). The
// scenario word of each is to_string(kind).
enum class ScheduleKind {
  gpipe,                    // "gpipe"
  one_f_one_b,              // "1f1b"
  interleaved_one_f_one_b,  // "interleaved_1f1b" (Megatron virtual pipeline)
  zb_h1,                    // "zb_h1" (zero bubble, 1F1B memory)
  zb_h2,                    // "zb_h2" (zero bubble, 2p - 1 micro-batches in flight)
  zb_v,                     // "zb_v" (zero bubble, V-shape, two chunks per rank)
  bpipe,                    // "bpipe" (1F1B plus activation eviction to the paired stage)
  dualpipe_v,               // "dualpipe_v" (DeepSeek, bidirectional V-shape)
  dualpipe,                 // "dualpipe" (DeepSeek-V3, bidirectional, parameters held twice)
};
std::string_view to_string(ScheduleKind kind);

// Activation recomputation (docs/memory.md, "Activation recomputation"):
//   none          keep every activation
//   selective     Korthikanti et al.'s: recompute the attention core
//   full          keep each layer's input, recompute its whole forward
//   selective_op  torchtitan's per-op policy (workloads/op_selective_recompute.hpp)
enum class Recompute { none, selective, full, selective_op };
std::string_view to_string(Recompute recompute);

// What recompute: selective redoes (Megatron-core's --recompute-modules,
// transformer_config.py; workloads/recompute_modules.hpp): the attention
// core (core_attn, Megatron's default and Korthikanti et al.'s), MLA's up
// projections and RoPE (mla_up_proj), the routed experts' activation
// (moe_act), a dense layer's whole MLP (mlp).
enum class RecomputeModule { core_attn, mla_up_proj, moe_act, mlp };
std::string_view to_string(RecomputeModule module);

// The training framework the plan runs on, which sets the kernels a layer
// launches and the data-parallel machinery around them (docs/parallelism.md,
// "Frameworks"):
//   megatron       Megatron-LM / Megatron-DeepSpeed: fused element-wise
//                  kernels, what the A100 curves were calibrated on.
//   pytorch_fsdp   PyTorch eager model code (Hugging Face / fms Llama:
//                  RMSNorm, rotary embedding and SwiGLU as separate
//                  element-wise kernels) under FSDP1 (flat parameters
//                  gathered in place, two all-gathers in flight).
//   pytorch_fsdp2  the same model code under FSDP2 (torchtitan): per-parameter
//                  sharding, so every all-gather is followed by a copy-out
//                  into the parameters and every reduce-scatter preceded by a
//                  copy-in of the gradients, on the compute stream.
// The PyTorch ones need zero_stage 3.
enum class Framework { megatron, pytorch_fsdp, pytorch_fsdp2 };
std::string_view to_string(Framework framework);

// How the TP collectives overlap the linear GEMMs next to them
// (plan.tp_comm_overlap):
//   none         after them, on the compute stream's order (false)
//   userbuffers  Transformer Engine's userbuffers (Megatron --tp-comm-overlap,
//                NeMo ub_tp_comm_overlap; `true`): each op's collectives in
//                tp chunks under its GEMMs
//   torch_async  PyTorch's async TP (torchtitan enable_async_tensor_parallel,
//                torch._inductor's micro-pipeline TP pass): the all-gather
//                before a GEMM and the reduce-scatter after one become
//                symm_mem fused_all_gather_matmul / fused_matmul_reduce_scatter,
//                the GEMM split into tp shard GEMMs and the shards copied
//                peer to peer by the copy engine under them
//                (workloads/torch_async_tp.hpp)
enum class TpCommOverlap : std::uint8_t { none, userbuffers, torch_async };
std::string_view to_string(TpCommOverlap overlap);

// How a pipeline transfer pairs with the compute of the two ranks it joins
// (docs/schedules.md, "Pipeline p2p"):
//   sync   Megatron-core's blocking batched send / receive
//          (p2p_communication.py, _communicate with batch_p2p_comm and
//          wait_on_reqs): between two ops a rank posts the sends of the op
//          it finished and the receive of the op it runs next as one batch
//          and waits for all of them; a transfer starts once its sender has
//          finished the producing op and its receiver the op before the
//          consumer (the receive is posted), and the sender's next op waits
//          for it.
//   async  isend / irecv posted ahead and waited by their consumer only
//          (PyTorch pipelining, torchtitan, Llama 3): a transfer starts
//          when its data is ready, the sender goes on computing.
//   overlap Megatron-core's interleaved schedule with overlap_p2p_comm
//          (schedules.py, forward_backward_pipelining_with_interleaving,
//          core_r0.8.0): after each forward a rank posts that forward's
//          send and the receive of its next forward's input, after each
//          backward likewise for gradients, and waits on both handles
//          before its next op of the same kind. A transfer starts once its
//          sender has finished the producing op and its receiver the op of
//          the same kind before the consumer (the first backward's receive:
//          after the last warm-up forward); the sender's next op of the same
//          kind waits for it (docs/schedules.md, "Pipeline p2p").
// `automatic` is the schedule's own default (ScheduleTraits::p2p).
enum class P2pMode { automatic, sync, async, overlap };
std::string_view to_string(P2pMode mode);

// The number format of the linear GEMMs (workloads/precision.hpp says what
// each changes). BF16 is every plan's default.
enum class Precision { bf16, fp8 };
std::string_view to_string(Precision precision);

// How FP8 tensors are scaled, as Transformer Engine's recipes do:
//   delayed  one scale per tensor from the amax history of earlier steps
//            (TE's DelayedScaling; NeMo's and Megatron's default on Hopper)
//   current  one scale per tensor from its own amax, computed first
//            (TE's Float8CurrentScaling, "FP8-CS")
//   mxfp8    a power-of-two scale per block of 32 elements, in hardware on
//            Blackwell's tensor cores (TE's MXFP8BlockScaling, "FP8-MX")
enum class Fp8Recipe { delayed, current, mxfp8 };
std::string_view to_string(Fp8Recipe recipe);

// How a MoE layer's tokens reach their experts and come back
// (plan.moe_dispatcher; workloads/moe_dispatch.hpp, docs/moe.md):
//   all_to_all  Megatron's alltoall token dispatcher: one NCCL all-to-all,
//               every routed copy of a token sent to its expert's GPU, every
//               pair of GPUs directly (today's default)
//   deepep      DeepEP's dispatch / combine (Megatron's flex dispatcher with
//               --moe-enable-deepep, DeepSeek-V3): each token sent once per
//               destination node over RDMA to the GPU of the same local
//               index, then once per destination GPU over NVLink; FP8
//               dispatch under precision fp8, BF16 combine
enum class MoeDispatcher { all_to_all, deepep };
std::string_view to_string(MoeDispatcher dispatcher);

// Megatron's default gradient bucket: 40 million gradient elements
// (DistributedDataParallelConfig's bucket_size for data-parallel sizes up
// to 40); plan.grad_bucket_size overrides it in bytes.
inline constexpr double kDefaultGradBucketElements = 40e6;

struct ParallelPlan {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  // Context parallelism (ring attention): each sequence split over `cp`
  // GPUs, which pass key/value blocks around a ring in every attention.
  // dp x tp x pp x cp = GPUs.
  int cp = 1;
  // Expert parallelism (MoE models): the routed experts of every MoE layer
  // spread over `ep` GPUs, which exchange tokens with an all-to-all before
  // the experts (dispatch) and after them (combine). As in Megatron-core
  // (expert_tensor_parallel_size = tp), the EP group is carved out of the
  // dp x cp GPUs that hold the same dense parameters: ep divides dp x cp,
  // and an EP group is ep consecutive ranks of that dimension (expert_group
  // below). It adds no GPUs: dp x tp x pp x cp = GPUs still.
  int ep = 1;
  // Expert tensor parallelism (Megatron's --expert-tensor-parallel-size):
  // 0 follows tp (the layout above). 1 with tp > 1 is Megatron's MoE
  // parallel folding: the experts' GEMMs are not split, and the EP groups
  // are carved out of all tp x cp x dp GPUs of a stage (expert_tp() x ep
  // consecutive ranks), not only of those of one TP rank
  // (workloads/expert_parallel.hpp, expert_parallel_groups).
  int etp = 0;
  int micro_batch_size = 1;
  int global_batch_size = 1;
  ScheduleKind schedule = ScheduleKind::one_f_one_b;
  // Model chunks per GPU (v): interleaved_1f1b's virtual stages, 2 for the
  // V-shaped schedules (zb_v, dualpipe_v) and for dualpipe, 1 otherwise. The
  // pipeline has pp x v virtual stages of layers / (pp x v) layers each,
  // unless stage_layers says otherwise. DualPipe's two chunks are two copies
  // of the model's pp stages (model_stages()), one per direction.
  int virtual_stages = 1;
  // Layers of each virtual stage in model order (pp x virtual_stages
  // entries, each >= 1, summing to the model's layers): an uneven partition
  // for pipelines over unequal GPUs. Empty: the even split. The first and
  // last virtual stages still hold the embedding and the logits.
  std::vector<int> stage_layers{};
  // Micro-batches each data-parallel replica runs per iteration (dp
  // entries, each >= 1, summing to global_batch_size / micro_batch_size),
  // so that faster replicas can take more. Empty: the even share,
  // micro_batches() each.
  std::vector<int> dp_micro_batches{};
  Recompute recompute = Recompute::none;
  // With recompute selective: the modules it redoes, each once. Empty:
  // core_attn alone (Megatron's default).
  std::vector<RecomputeModule> recompute_modules{};
  // Pipeline transfers' pairing with compute; resolved_p2p(plan)
  // (workloads/schedule.hpp) says what `automatic` means for the schedule.
  P2pMode p2p = P2pMode::automatic;
  // Bytes per gradient element in the DP all-reduce (2 for bf16/fp16).
  int grad_bytes = 2;
  // Megatron sequence parallelism: the TP all-reduces become reduce-scatter
  // + all-gather pairs and the activations outside the matmuls are split
  // over the TP group (needs tp > 1).
  bool sequence_parallel = false;
  // ZeRO stage over the data-parallel group (dp x cp GPUs): 0 plain data
  // parallelism, 1 optimizer state sharded, 2 + gradients, 3 + parameters
  // (FSDP).
  int zero_stage = 0;
  // Hybrid sharding (PyTorch FSDP's HYBRID_SHARD, FSDP2's 2-D mesh,
  // torchtitan's data_parallel_shard_degree): with zero_stage 3, parameters,
  // gradients and optimizer state are sharded over groups of `dp_shard`
  // consecutive data-parallel positions (a node, typically) and replicated
  // across the dp x cp / dp_shard groups, which all-reduce every unit's
  // gradient shard after its reduce-scatter. 0: one group of all dp x cp
  // GPUs (FULL_SHARD).
  int dp_shard = 0;
  // FSDP (zero_stage 3): free a unit's gathered parameters after its forward
  // and gather them again for its backward, every micro-batch (true: torch
  // FSDP's FULL_SHARD, FSDP2's default); false: gather each unit once per
  // iteration, before its first forward, and keep it until its last
  // backward (FSDP2's reshard_after_forward=False as PyTorch's pipelining
  // schedules run it, FSDP1's SHARD_GRAD_OP; Llama 3's choice).
  bool reshard_after_forward = true;
  // ZeRO-2 / FSDP: reduce-scatter the gradients after every micro-batch's
  // backward (false: DeepSpeed's ZeRO-2, torch FSDP without no_sync), or
  // accumulate them unsharded (in grad_bytes per element) and reduce-scatter
  // them once per iteration, after the last micro-batch's backward of each
  // unit (true: PyTorch's pipelining schedules' set_requires_gradient_sync,
  // Llama 3's "synchronizes after each training step").
  bool grad_reduce_per_step = false;
  // Gradient reduction during the backward, in buckets of grad_bucket_bytes
  // (0: kDefaultGradBucketElements x grad_bytes), instead of one collective
  // after it. Zero stages 0 to 2 (FSDP reduces per layer anyway).
  bool overlap_grad_reduce = false;
  double grad_bucket_bytes = 0;
  // ZeRO-1 / ZeRO-2 (Megatron's distributed optimizer,
  // --overlap-param-gather): the all-gather of the updated parameters runs
  // in the gradient buckets, in forward order, under the next iteration's
  // first forward of each model chunk (a bucket's gather dispatched when the
  // forward reaches the bucket before it), instead of as one collective
  // after the optimizer step. Needs overlap_grad_reduce, as Megatron does.
  bool overlap_param_gather = false;
  // How the TP collectives meet the GEMMs next to them (plan.tp_comm_overlap;
  // both need sequence_parallel): after them (none), Transformer Engine's
  // userbuffers, or torch's async TP (TpCommOverlap above).
  TpCommOverlap tp_comm_overlap = TpCommOverlap::none;
  bool userbuffers() const { return tp_comm_overlap == TpCommOverlap::userbuffers; }
  bool torch_async_tp() const { return tp_comm_overlap == TpCommOverlap::torch_async; }
  Framework framework = Framework::megatron;
  bool pytorch() const { return framework != Framework::megatron; }
  Precision precision = Precision::bf16;
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;
  MoeDispatcher moe_dispatcher = MoeDispatcher::all_to_all;
  // Whether deepep dispatches FP8 activations under precision fp8
  // (plan.moe_fp8_dispatch; unset: yes, as DeepSeek-V3 trains). Megatron-core
  // dispatches BF16 with DeepEP and HybridEP alike (moe/fused_a2a.py: "HybridEP
  // dispatcher does not support fp8 dispatch now", and fp8_dispatch = False
  // for DeepEP) and quantizes in the experts' GEMMs.
  std::optional<bool> moe_fp8_dispatch = std::nullopt;
  bool fp8_dispatch() const {
    return precision == Precision::fp8 && moe_dispatcher == MoeDispatcher::deepep &&
           moe_fp8_dispatch.value_or(true);
  }
  // Overlap the expert all-to-alls of one micro-batch with the computation
  // of another (plan.moe_a2a_overlap): Megatron-core's EP A2A overlap
  // (--overlap-moe-expert-parallel-comm), which runs a steady-state 1F1B
  // forward and backward as one merged F&B op, and DualPipe's F&B chunk
  // pairs. The builder interleaves the pair's per-layer pieces
  // (workloads/graph_builder/expert_parallel_sync.cpp; docs/moe.md).
  bool moe_a2a_overlap = false;
  // Defer the weight-gradient GEMMs of each MoE layer's backward off the
  // activation-gradient path (plan.delay_wgrad_compute): Megatron-core's
  // --delay-wgrad-compute, which needs the EP A2A overlap above. Megatron
  // runs the routed experts' weight gradients after their input gradients,
  // on the compute stream while the backward dispatch all-to-all is in
  // flight, and the attention's and shared experts' after the layer's input
  // gradient, under the next layer's combine all-to-all (and for the
  // chunk's first layer under the pipeline send). The builder splits each
  // MoE layer's backward piece into its input gradient, which the layer's
  // all-to-all follows, and its weight gradient, which runs beside it
  // (workloads/graph_builder/deferred_weight_gradients.cpp; docs/moe.md).
  bool delay_wgrad_compute = false;
  // FP8 primary weights (Megatron --fp8-param-gather, NeMo fp8_params,
  // torchtitan's float8 all-gather): ZeRO's and FSDP's parameter all-gathers
  // move 1 byte per FP8 weight, and no BF16 copy of those weights is kept.
  bool fp8_param_gather = false;
  bool fp8() const { return precision == Precision::fp8; }

  int gpu_count() const { return dp * tp * pp * cp; }
  // GPUs that hold replicas of the same parameters and reduce their
  // gradients together (and shard them under ZeRO): dp x cp.
  int data_parallel_size() const { return dp * cp; }
  // GPUs one ZeRO shard is spread over: dp_shard, or all dp x cp.
  int zero_shard_size() const { return dp_shard > 0 ? dp_shard : data_parallel_size(); }
  // Hybrid sharding: shard groups replicated across more than one group.
  bool hybrid_sharded() const { return zero_stage >= 3 && zero_shard_size() < data_parallel_size(); }
  // The experts' tensor-parallel size, and whether it differs from tp.
  int expert_tp() const { return etp > 0 ? etp : tp; }
  bool expert_tp_folded() const { return expert_tp() != tp; }
  // GPUs holding replicas of the same experts (Megatron's expert data
  // parallelism): tp x cp x dp / (expert_tp x ep), i.e. dp x cp / ep when
  // expert_tp = tp.
  int expert_data_parallel_size() const { return tp * dp * cp / (expert_tp() * ep); }
  double grad_bucket_size_bytes() const {
    return grad_bucket_bytes > 0 ? grad_bucket_bytes : kDefaultGradBucketElements * grad_bytes;
  }
  // m: micro-batches each pipeline runs per iteration (with uneven
  // dp_micro_batches, the largest share).
  int micro_batches() const {
    if (!dp_micro_batches.empty()) {
      int most = 0;
      for (int m : dp_micro_batches)
        most = m > most ? m : most;
      return most;
    }
    return global_batch_size / (micro_batch_size * dp);
  }
  // Micro-batches of data-parallel replica `dp_rank`.
  int micro_batches_of(int dp_rank) const {
    return dp_micro_batches.empty() ? global_batch_size / (micro_batch_size * dp)
                                    : dp_micro_batches[static_cast<std::size_t>(dp_rank)];
  }
  // The distinct slices of layers the model is cut into: pp x
  // virtual_stages, except under dualpipe, whose 2 pp virtual stages are
  // the pp stages of the model twice over (virtual stage vs of the down
  // direction and pp + vs of the up direction hold the same layers;
  // workloads/schedules/dualpipe.cpp). stage_layers has one entry per model
  // stage.
  int model_stages() const { return schedule == ScheduleKind::dualpipe ? pp : pp * virtual_stages; }
  int model_stage_of(int virtual_stage) const {
    return schedule == ScheduleKind::dualpipe ? virtual_stage % pp : virtual_stage;
  }
  // Layers of virtual stage `virtual_stage` (of pp x virtual_stages) and the
  // index of its first layer, for a model of `layers` layers.
  int layers_of(int virtual_stage, int layers) const {
    return stage_layers.empty() ? layers / model_stages()
                                : stage_layers[static_cast<std::size_t>(model_stage_of(virtual_stage))];
  }
  int first_layer_of(int virtual_stage, int layers) const {
    int first = 0;
    for (int vs = 0; vs < model_stage_of(virtual_stage); ++vs)
      first += layers_of(vs, layers);
    return first;
  }

  // Megatron's rank order (tp fastest, then cp, then dp, then pp): TP groups
  // sit inside an NVLink domain (a node, or a GB200 NVL72 rack) whenever its
  // size is a multiple of tp, CP and EP groups come next on consecutive
  // ranks, pipeline stages are farthest apart.
  int gpu_of(int pp_rank, int dp_rank, int tp_rank, int cp_rank = 0) const {
    return tp_rank + tp * (cp_rank + cp * (dp_rank + dp * pp_rank));
  }
  int pp_rank_of(int gpu) const { return gpu / (tp * cp * dp); }
  int dp_rank_of(int gpu) const { return (gpu / (tp * cp)) % dp; }
  int cp_rank_of(int gpu) const { return (gpu / tp) % cp; }
  int tp_rank_of(int gpu) const { return gpu % tp; }
  // Position of a GPU in the dp x cp dimension (cp fastest): EP groups are
  // blocks of ep consecutive positions, expert data-parallel groups the
  // positions equal modulo ep.
  int data_parallel_index(int dp_rank, int cp_rank) const { return cp_rank + cp * dp_rank; }
  int expert_group_of(int dp_rank, int cp_rank) const { return data_parallel_index(dp_rank, cp_rank) / ep; }
  int expert_rank_of(int dp_rank, int cp_rank) const { return data_parallel_index(dp_rank, cp_rank) % ep; }
};

}  // namespace trainsim::workloads
