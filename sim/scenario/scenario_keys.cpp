#include "sim/scenario/scenario_keys.hpp"

#include <limits>

#include "platforms/collective_config.hpp"
#include "platforms/gpu_spec.hpp"
#include "platforms/presets.hpp"
#include "sim/scenario/sections.hpp"
#include "workloads/attention.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::scenario {
namespace {

using platforms::KeySpec;
using platforms::KeyTable;
using T = platforms::ValueType;

constexpr double kCount = static_cast<double>(kMaxCount);

KeySpec key(std::string_view name, T type, std::string_view doc) {
  KeySpec k;
  k.name = name;
  k.type = type;
  k.doc = doc;
  return k;
}
KeySpec ranged(std::string_view name, T type, double min, double max, std::string_view doc) {
  KeySpec k = key(name, type, doc);
  k.min = min;
  k.max = max;
  return k;
}
KeySpec choice(std::string_view name, std::vector<std::string_view> words, std::string_view doc) {
  KeySpec k = key(name, T::choice, doc);
  k.words = std::move(words);
  return k;
}
KeySpec section(std::string_view name, const KeyTable& fields, std::string_view doc, T type = T::map) {
  KeySpec k = key(name, type, doc);
  k.fields = &fields;
  return k;
}
KeySpec required(KeySpec spec) {
  spec.required = true;
  return spec;
}
// A path, relative to the scenario file's folder.
KeySpec file_path(KeySpec spec) {
  spec.relative_to_file = true;
  return spec;
}
// A key whose range the reader narrows from other keys (GPU ranks below
// the GPU count).
KeySpec narrowed(KeySpec spec) {
  spec.range_depends_on_other_keys = true;
  return spec;
}

std::vector<std::string_view> cluster_preset_words() {
  std::vector<std::string_view> words;
  for (const auto& p : platforms::cluster_presets())
    words.push_back(p.name);
  return words;
}

KeySpec gpu_name(std::string_view name, std::string_view doc, const KeyTable* custom) {
  KeySpec spec = choice(name, platforms::gpu_names_and_aliases(), doc);
  spec.any_case = true;
  spec.fields = custom;
  return spec;
}

struct Tables {
  KeyTable custom_gpu, link, nic, ecmp, fabric, collectives, group, cluster;
  KeyTable moe, model, plan;
  KeyTable speed_distribution, duration_distribution, slow_gpus, throttle_point, throttling, stragglers, flap,
      link_fault, failures, perturbations;
  KeyTable workload, document;

  Tables() {
    custom_gpu = {
        "a GPU defined in the scenario",
        {
            gpu_name("base", "a catalogue GPU to start from", nullptr),
            required(key("name", T::label, "the GPU's name in reports")),
            key("peak_bf16", T::flop_rate, "dense bf16/fp16 peak, e.g. 500TFLOPS"),
            key("peak_fp32", T::flop_rate, "dense fp32 peak"),
            key("peak_tf32", T::flop_rate, "dense tf32 peak"),
            key("peak_fp8", T::flop_rate, "dense fp8 peak"),
            key("mxfp8", T::boolean, "block-scaled FP8 (MXFP8) tensor cores, as Blackwell's"),
            key("hbm", T::bytes, "HBM capacity, e.g. 96GiB"),
            key("hbm_bandwidth", T::bandwidth, "HBM bandwidth, e.g. 3TBps"),
            key("max_power", T::power, "power at full load, e.g. 700W"),
            key("idle_power", T::power, "power when held but running no kernel (default 20% of max_power)"),
            key("memory_power", T::power, "power in HBM-bound kernels (default 70% of max_power)"),
            key("communication_power", T::power,
                "power running only NCCL kernels (default 60% of max_power)"),
            key("nvlink_bandwidth", T::bandwidth, "NVLink bandwidth per GPU per direction"),
            key("pcie_bandwidth", T::bandwidth, "PCIe bandwidth per direction"),
            ranged("matmul_efficiency", T::number, 1e-3, 1.0, "fraction of peak a large matmul reaches"),
            file_path(key("efficiency_profile", T::text,
                          "an efficiency profile file (the format of platforms/efficiency/*.yaml, e.g. "
                          "one trainsim calibrate wrote), relative to the scenario; default: the "
                          "built-in profile of the GPU's name")),
        }};
    link = {"a link class",
            {
                key("bandwidth", T::bandwidth, "per GPU, per direction"),
                key("latency", T::duration, "GPU-to-GPU latency"),
                ranged("efficiency", T::number, 1e-3, 1.0, "fraction of line rate reached"),
            }};
    nic = {"the NICs",
           {
               key("bandwidth", T::bandwidth, "per NIC, per direction, e.g. 200Gbps"),
               key("latency", T::duration, "GPU-to-GPU latency through one switch"),
               ranged("per_node", T::integer, 1, 1024, "NICs per node (default: one per GPU)"),
           }};
    ecmp = {
        "ECMP over explicit spine planes (fat_tree, rail_optimised)",
        {
            required(ranged("planes", T::integer, 1, 4096, "spine planes: each uplink as this many links")),
            ranged("flows_per_pair", T::integer, 1, 256,
                   "sub-flows per transfer (NCCL channels x QPs per connection; default 1)"),
            choice("hash", {"seeded", "spread"},
                   "seeded: hashed per sub-flow; spread: distinct planes, round-robin (default seeded)"),
            ranged("seed", T::integer, 0, static_cast<double>(std::numeric_limits<long long>::max()),
                   "the switches' hash seed (default 0)"),
        }};
    fabric = {"the fabric between nodes",
              {
                  choice("topology", {"single_switch", "fat_tree", "rail_optimised", "dragonfly", "torus"},
                         "how the nodes are connected"),
                  choice("technology", {"infiniband", "roce"}, "chooses latency and efficiency defaults"),
                  ranged("efficiency", T::number, 1e-3, 1.0, "fraction of line rate reached"),
                  ranged("nodes_per_leaf", T::integer, 1, kCount, "fat_tree, rail_optimised: nodes per leaf"),
                  ranged("oversubscription", T::number, 0, 1e6, "leaf downlink / uplink capacity, >= 1"),
                  ranged("pod_oversubscription", T::number, 0, 1e6, "3-level fat_tree: pod oversubscription"),
                  key("spine_latency", T::duration, "extra latency through the spine"),
                  ranged("levels", T::integer, 2, 3, "fat_tree: 2 or 3 levels"),
                  ranged("leaves_per_pod", T::integer, 1, kCount, "3-level fat_tree: leaves per pod"),
                  key("core_latency", T::duration, "3-level fat_tree: extra latency through the core"),
                  ranged("nodes_per_router", T::integer, 1, kCount, "dragonfly: nodes per router"),
                  ranged("routers_per_group", T::integer, 1, 4096, "dragonfly: routers per group"),
                  key("local_bandwidth", T::bandwidth, "dragonfly: router-to-router bandwidth in a group"),
                  key("global_bandwidth", T::bandwidth, "dragonfly: bandwidth between groups"),
                  key("hop_latency", T::duration, "dragonfly, torus: latency per hop"),
                  ranged("dims", T::integer_list, 1, 1 << 20, "torus: nodes along each dimension"),
                  key("link_bandwidth", T::bandwidth, "torus: bandwidth of a link between neighbours"),
                  section("ecmp", ecmp, "fat_tree, rail_optimised: flows hashed over spine planes"),
              }};
    collectives = {
        "how collectives run",
        {
            choice("algorithm", platforms::words_of(platforms::collective_algorithm_words()),
                   "auto: NCCL-style tuning"),
            choice("fidelity", platforms::words_of(platforms::fidelity_words()),
                   "auto: computed alone where nothing else needs its links (exact), else "
                   "step by step; detailed: step by step; fast: one flow per edge"),
            key("launch_latency", T::duration, "NCCL's cost per collective (default 30us)"),
            ranged("max_chunks", T::integer, 1, 1 << 16, "pipelining chunks per collective"),
            ranged("steps_in_flight", T::integer, 1, platforms::kMaxRingStepsInFlight,
                   "ring steps a rank may have in flight (1; NCCL Simple 2, LL128 8)"),
            choice("protocol", platforms::words_of(platforms::ring_protocol_words()),
                   "ring steps across nodes: wire latencies, or NCCL's protocol costs"),
            ranged("compute_interference", T::number, 0.0, platforms::kMaxComputeInterference,
                   "share of compute speed NCCL takes while a GPU communicates (0 = off)"),
            ranged("detailed_flow_limit", T::integer, 0, platforms::kMaxDetailedFlowLimit,
                   "auto: a shared collective of more step-by-step flows runs fast (0 = no limit)"),
        }};
    // A node group's keys, at the cluster level (the defaults of every
    // group, or the one group) and in each entry of `groups`.
    const std::vector<KeySpec> group_keys = {
        gpu_name("gpu", "a catalogue GPU name or alias, or a map defining a GPU", &custom_gpu),
        ranged("nodes", T::integer, 1, kCount, "nodes (in a group: of the group)"),
        ranged("gpus_per_node", T::integer, 1, 1024, "GPUs per node (default 8)"),
        choice("node_shape", {"nvswitch", "cube_mesh", "pcie", "full_mesh"},
               "how the GPUs of a node are connected"),
        key("nvls", T::boolean, "the NVSwitch reduces in the switch (NVLink SHARP)"),
        ranged("nvls_efficiency", T::number, 1e-3, 1.0,
               "share of the NVLink port's effective rate NVLS transfers reach (default 0.744, DGX H100)"),
        ranged("nvlink_domain", T::integer, 1, 1 << 20,
               "GPUs per NVLink domain: a multiple of gpus_per_node joins nodes through NVLink Switch "
               "trays (GB200 NVL72: 72); default gpus_per_node"),
        section("nvlink", link, "the GPUs' NVLink"),
        section("pcie", link, "PCIe between a GPU and its NIC"),
        section("nic", nic, "the NICs"),
    };
    group = {"a node group", group_keys};
    cluster = {"the cluster", group_keys};
    for (auto spec : {choice("preset", cluster_preset_words(), "a shipped cluster to start from"),
                      key("name", T::label, "the cluster's name in reports"),
                      section("fabric", fabric, "the fabric between nodes"),
                      section("collectives", collectives, "how collectives run"),
                      ranged("compute_efficiency", T::number, 1e-3, 1.0,
                             "a flat fraction of bf16 peak instead of the per-op cost model"),
                      section("groups", group, "node groups of a mixed cluster, in rank order", T::map_list)})
      cluster.keys.push_back(spec);

    KeySpec capacity = ranged("capacity_factor", T::number, 1e-3, 1e6,
                              "expert buffers padded to factor x balanced load, or none (dropless)");
    capacity.words = {"none"};
    moe = {
        "a mixture-of-experts MLP",
        {
            ranged("experts", T::integer, 1, kCount, "routed experts per MoE layer"),
            ranged("top_k", T::integer, 1, kCount, "experts per token"),
            ranged("expert_ffn_hidden", T::integer, 1, kCount, "an expert's MLP size (default ffn_hidden)"),
            ranged("shared_experts", T::integer, 0, kCount, "experts every token goes through"),
            ranged("moe_layer_freq", T::integer, 1, kCount, "layer l is MoE when l % freq == 0"),
            ranged("first_dense_layers", T::integer, 0, kCount, "leading dense layers"),
            ranged("moe_layer_offset", T::integer, 0, kCount,
                   "layer l is MoE when l % moe_layer_freq == this (Llama 4 Maverick: 1)"),
            capacity,
            choice("routing", {"balanced", "zipf", "dirichlet", "measured"},
                   "how token copies spread over the experts (default balanced)"),
            ranged("routing_skew", T::number, 1e-3, 1e3, "zipf: exponent s; dirichlet: concentration alpha"),
            ranged("routing_seed", T::integer, 0, static_cast<double>(std::numeric_limits<long long>::max()),
                   "zipf / dirichlet draws (default: the scenario's seed)"),
            file_path(
                key("routing_file", T::text, "measured: CSV layer,expert,tokens (relative to this file)")),
            ranged("max_nodes_per_token", T::integer, 1, kCount,
                   "node-limited routing: a token's experts on at most this many nodes of its EP group "
                   "(DeepSeek-V3: 4; default no limit)"),
            ranged("router_num_groups", T::integer, 1, kCount,
                   "group-limited routing: the experts in this many equal groups (Megatron's "
                   "moe_router_num_groups; DeepSeek-V3: 8; default none)"),
            ranged("router_group_topk", T::integer, 1, kCount,
                   "group-limited routing: the groups each token's experts come from (Megatron's "
                   "moe_router_group_topk; DeepSeek-V3: 4)"),
        }};
    KeySpec q_lora = ranged("q_lora_rank", T::integer, 0, kCount,
                            "mla: rank of the query compression, or none (0: queries projected directly)");
    q_lora.words = {"none"};
    KeySpec model_preset = choice("preset", workloads::model_preset_names(), "a shipped model");
    model_preset.any_case = true;
    model = {
        "the model",
        {
            model_preset,
            key("name", T::label, "the model's name in reports"),
            ranged("layers", T::integer, 1, workloads::kMaxTaskLayers, "transformer layers"),
            ranged("hidden", T::integer, 1, kCount, "hidden size"),
            ranged("heads", T::integer, 1, kCount, "attention heads"),
            ranged("seq_len", T::integer, 1, kCount, "sequence length"),
            ranged("vocab", T::integer, 1, kCount, "vocabulary size"),
            ranged("kv_heads", T::integer, 1, kCount, "key/value heads (grouped-query attention)"),
            ranged("ffn_hidden", T::integer, 1, kCount, "MLP size (default 4 x hidden)"),
            choice("mlp", {"gelu", "swiglu"}, "the MLP's form"),
            key("flash_attention", T::boolean, "a fused attention kernel"),
            key("tied_embeddings", T::boolean,
                "the output layer shares the input embedding's weights (default: the preset's, else true)"),
            choice("attention", workloads::attention_kind_names(),
                   "mha (multi-head / grouped-query) or mla (DeepSeek's multi-head latent attention)"),
            ranged("head_dim", T::integer, 1, kCount, "mha: one head's width (default hidden / heads)"),
            key("qk_norm", T::boolean, "mha: RMSNorm on each head's query and key (Qwen3)"),
            q_lora,
            ranged("kv_lora_rank", T::integer, 1, kCount, "mla: rank of the joint key/value compression"),
            ranged("qk_nope_head_dim", T::integer, 1, kCount, "mla: each head's non-rotary query/key width"),
            ranged("qk_rope_head_dim", T::integer, 1, kCount, "mla: the rotary query/key width (shared key)"),
            ranged("v_head_dim", T::integer, 1, kCount, "mla: each head's value width"),
            ranged("mtp_depth", T::integer, 0, kCount,
                   "multi-token prediction modules on the last stage (DeepSeek-V3: 1)"),
            section("moe", moe, "a mixture-of-experts MLP"),
        }};
    KeySpec dp = ranged("dp", T::integer, 1, kCount, "data parallelism, or auto: GPUs / (tp x pp x cp)");
    dp.words = {"auto"};
    plan = {"the parallel plan",
            {
                dp,
                ranged("tp", T::integer, 1, kCount, "tensor parallelism"),
                ranged("pp", T::integer, 1, kCount, "pipeline stages"),
                ranged("micro_batch_size", T::integer, 1, kCount, "sequences per micro-batch"),
                required(ranged("global_batch_size", T::integer, 1, kCount, "sequences per iteration")),
                choice("schedule",
                       {"gpipe", "1f1b", "interleaved_1f1b", "zb_h1", "zb_h2", "zb_v", "bpipe", "dualpipe_v",
                        "dualpipe"},
                       "the pipeline schedule"),
                ranged("virtual_stages", T::integer, 1, kCount, "model chunks per GPU"),
                choice("p2p", {"sync", "async", "overlap"},
                       "pipeline transfers: sync (blocking send / receive pairs, Megatron's 1F1B), async "
                       "(isend / irecv posted ahead) or overlap (Megatron's interleaved overlap_p2p_comm: "
                       "each op waits for the previous same-kind op's send); default the schedule's"),
                choice("grad_allreduce_dtype", {"bf16", "fp16", "fp32"},
                       "precision of the DP gradient all-reduce"),
                choice("recompute", {"none", "selective", "full", "selective_op"},
                       "activation recomputation (selective_op: torchtitan's per-op policy)"),
                key("recompute_modules", T::text,
                    "with recompute selective, Megatron's modules it redoes, e.g. \"mla_up_proj moe_act\": "
                    "core_attn (default), mla_up_proj, moe_act, mlp"),
                key("sequence_parallel", T::boolean, "Megatron sequence parallelism (tp >= 2)"),
                ranged("context_parallel", T::integer, 1, kCount, "ring attention over this many GPUs"),
                ranged("expert_parallel", T::integer, 1, kCount, "experts spread over this many GPUs"),
                ranged("expert_tensor_parallel", T::integer, 1, kCount,
                       "expert tensor parallelism: a divisor of tp; tp (default), 1 (Megatron's MoE parallel "
                       "folding, EP groups spanning the TP ranks) or in between (expert-TP all-gather and "
                       "reduce-scatter around the experts; with moe_dispatcher deepep, DeepEP over the "
                       "expert-TP x EP block instead)"),
                choice("moe_dispatcher", {"all_to_all", "deepep"},
                       "MoE token dispatch: all_to_all (NCCL, every copy to every GPU; default) or deepep "
                       "(once per node over RDMA, then NVLink; FP8 under precision fp8)"),
                key("moe_fp8_dispatch", T::boolean,
                    "deepep under precision fp8 dispatches FP8 activations (default true, DeepSeek-V3); "
                    "false: BF16, as Megatron-core's DeepEP and HybridEP dispatchers do"),
                key("moe_a2a_overlap", T::boolean,
                    "overlap one micro-batch's expert all-to-alls with another's compute (Megatron's 1F1B "
                    "A2A overlap, DualPipe's F&B pairs)"),
                key("delay_wgrad_compute", T::boolean,
                    "with moe_a2a_overlap under 1f1b or interleaved_1f1b: each MoE layer's backward runs its "
                    "weight gradients beside its all-to-all instead of before it (Megatron "
                    "--delay-wgrad-compute)"),
                ranged("zero_stage", T::integer, 0, 3, "ZeRO stage (3 = FSDP)"),
                ranged("dp_shard", T::integer, 1, kCount,
                       "hybrid sharding (HSDP): zero_stage 3 shards over groups of this many of the dp x cp "
                       "GPUs, replicated across the groups; default all of them"),
                choice("framework", {"megatron", "pytorch_fsdp", "pytorch_fsdp2"},
                       "what runs the plan (the PyTorch ones need zero_stage 3)"),
                choice("tp_comm_overlap", {"false", "true", "torch_async"},
                       "overlap the TP collectives with the GEMMs next to them (needs sequence_parallel): "
                       "true is Transformer Engine's userbuffers (Megatron), torch_async PyTorch's async TP "
                       "(torch.compile's fused all-gather / reduce-scatter matmuls over symmetric memory)"),
                choice("precision", {"bf16", "fp8"}, "number format of the linear GEMMs (docs/precision.md)"),
                choice("fp8_recipe", {"delayed", "current", "mxfp8"},
                       "FP8 scaling: one scale per tensor, delayed (amax history) or current; mxfp8 one per "
                       "32 elements (Blackwell)"),
                key("fp8_param_gather", T::boolean,
                    "FP8 primary weights: ZeRO / FSDP parameter all-gathers in FP8 (Megatron "
                    "--fp8-param-gather)"),
                key("reshard_after_forward", T::boolean,
                    "zero_stage 3: false gathers each layer once per iteration and keeps it until its last "
                    "backward (FSDP2 reshard_after_forward=False, Llama 3); default true"),
                choice("grad_reduce", {"per_micro_batch", "per_step"},
                       "zero_stage 2 / 3: reduce-scatter the gradients after every micro-batch (default) or "
                       "accumulate them and reduce-scatter once per iteration (Llama 3, PyTorch pipelining)"),
                key("overlap_grad_reduce", T::boolean, "reduce gradients in buckets during the backward"),
                key("grad_bucket_size", T::bytes, "with overlap_grad_reduce, e.g. 80MB"),
                key("overlap_param_gather", T::boolean,
                    "zero_stage 1 / 2 with overlap_grad_reduce: all-gather the updated parameters bucket "
                    "by bucket under the next iteration's first forward (Megatron --overlap-param-gather) "
                    "instead of after the optimizer step; default false"),
                ranged("stage_layers", T::integer_list, 0, kCount,
                       "layers per (virtual) pipeline stage; 0: the embedding or the loss alone"),
                ranged("first_stage_layers", T::integer, 0, kCount,
                       "layers of the first pipeline rank, the rest split evenly (Megatron "
                       "--decoder-first-pipeline-num-layers)"),
                ranged("last_stage_layers", T::integer, 0, kCount,
                       "layers of the last pipeline rank, the rest split evenly (Megatron "
                       "--decoder-last-pipeline-num-layers)"),
                key("embedding_in_split", T::boolean,
                    "the embedding counts as a layer in the even split: the first virtual stage holds one "
                    "layer fewer (Megatron --account-for-embedding-in-pipeline-split)"),
                key("loss_in_split", T::boolean,
                    "the output layer and loss count as a layer in the even split: the last virtual stage "
                    "holds one layer fewer (Megatron --account-for-loss-in-pipeline-split)"),
                key("pipeline_layout", T::text,
                    "every virtual stage's layers as Megatron's --pipeline-model-parallel-layout, e.g. "
                    "\"Et|(tt|)*62,tL\""),
                ranged("dp_micro_batches", T::integer_list, 0, kCount, "micro-batches per DP replica"),
            }};

    // GPUs by ranks, nodes or stages: a number or a list of numbers, below
    // the cluster's counts.
    const auto selector = [](std::string_view name, std::string_view doc) {
      KeySpec spec = narrowed(ranged(name, T::integer_list, 0, kCount, doc));
      spec.one_or_list = true;
      return spec;
    };
    const std::vector<KeySpec> gpu_selectors = {
        selector("gpus", "GPU ranks (a number or a list)"),
        selector("nodes", "node indices: all their GPUs"),
        selector("stages", "pipeline stages: all their GPUs"),
        narrowed(ranged("dp_rank", T::integer, 0, kCount, "with stages: only this data-parallel replica")),
    };
    const auto distribution = [](std::string_view what, T type, double max) {
      const auto value = [&](std::string_view name, std::string_view doc) {
        return type == T::number ? ranged(name, T::number, 0, max, doc) : key(name, type, doc);
      };
      return KeyTable{
          what,
          {
              required(choice("distribution", {"fixed", "uniform", "lognormal"}, "the distribution")),
              value("value", "fixed: the value"),
              value("min", "uniform: the least value"),
              value("max", "uniform: the largest value"),
              value("median", "lognormal: the median"),
              ranged("sigma", T::number, 0, 10, "lognormal: standard deviation of the log"),
          }};
    };
    speed_distribution = distribution("a straggler's speed", T::number, 1);
    duration_distribution = distribution("how long a straggler lasts", T::duration, 0);
    const KeySpec speed = ranged("speed", T::number, 0, 1, "fraction of nominal speed, in (0, 1]");
    const KeySpec from = key("from", T::duration, "start of the window");
    const KeySpec until = key("until", T::duration, "end of the window");
    slow_gpus = {"slow GPUs", gpu_selectors};
    slow_gpus.keys.insert(slow_gpus.keys.end(), {speed, from, until});
    throttle_point = {"a throttling point", {key("at", T::duration, "time the speed applies from"), speed}};
    throttling = {"GPUs whose speed follows a profile", gpu_selectors};
    throttling.keys.push_back(section("profile", throttle_point, "{at, speed} points", T::map_list));
    stragglers = {"random stragglers", gpu_selectors};
    stragglers.keys.insert(stragglers.keys.end(),
                           {ranged("probability", T::number, 0, 1, "chance per GPU per iteration"),
                            section("speed", speed_distribution, "the straggler's speed"),
                            section("duration", duration_distribution, "how long it lasts")});
    flap = {"a flapping fault",
            {key("period", T::duration, "the flapping period"),
             ranged("duty", T::number, 0, 1, "the fraction of each period the fault lasts")}};
    link_fault = {"a link fault",
                  {
                      key("links", T::any, "link names, e.g. [node0-nic0, leaf1-uplink]"),
                      ranged("bandwidth_factor", T::number, 0, 1, "fraction of the bandwidth left"),
                      key("added_latency", T::duration, "latency added"),
                      key("down", T::boolean, "the link is down"),
                      ranged("uplinks", T::integer, 1, 1024, "fat-tree uplink: one of this many fails"),
                      from,
                      until,
                      section("flap", flap, "the fault comes and goes"),
                  }};
    failures = {"job failures",
                {
                    key("gpu_mtbf", T::duration, "mean time between failures per GPU"),
                    key("node_mtbf", T::duration, "mean time between failures per node"),
                    key("at", T::any, "failure times, e.g. [2h, 7h]"),
                    key("run_time", T::duration, "the job's wall-clock length"),
                    key("restart_delay", T::duration, "time to restart after a failure"),
                    key("checkpoint_interval", T::duration, "time between checkpoints"),
                    key("storage_bandwidth", T::bandwidth, "aggregate bandwidth to storage"),
                }};
    perturbations = {"what goes wrong",
                     {
                         section("slow_gpus", slow_gpus, "GPUs slower than nominal", T::map_list),
                         section("throttling", throttling, "GPUs whose speed follows a profile", T::map_list),
                         section("stragglers", stragglers, "random stragglers"),
                         section("links", link_fault, "link faults", T::map_list),
                         section("failures", failures, "job failures, restarts and checkpoints"),
                     }};
    workload = {
        "a Chakra trace replayed instead of a model and plan",
        {
            required(file_path(
                key("chakra", T::text, "a folder of <name>.<rank>.et files, their prefix, or one file"))),
            file_path(key("comm_groups", T::text, "ASTRA-sim's communicator groups file")),
            ranged("global_batch_size", T::integer, 1, kCount, "sequences the traced iteration trains"),
            ranged("seq_len", T::integer, 1, kCount, "their length"),
        }};
    document = {"a scenario",
                {
                    key("name", T::label, "the scenario's name: runs/<name>/ (default: the file's)"),
                    key("description", T::text, "free text"),
                    ranged("seed", T::integer, 0, static_cast<double>(std::numeric_limits<long long>::max()),
                           "seeds everything random"),
                    required(section("cluster", cluster, "the cluster")),
                    section("model", model, "the model (not with workload)"),
                    section("plan", plan, "the parallel plan (not with workload)"),
                    section("perturbations", perturbations, "slow GPUs, stragglers, link faults, failures"),
                    section("workload", workload, "a Chakra trace instead of model and plan"),
                    key("sweep", T::any, "a study's sweep (trainsim sweep)"),
                    key("variants", T::any, "a study's variants (trainsim sweep, compare)"),
                }};
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const platforms::KeyTable& scenario_keys() {
  return tables().document;
}

}  // namespace trainsim::scenario
