#include "workloads/planning/plan_estimate.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "workloads/expert_parallel.hpp"
#include "workloads/memory_model.hpp"
#include "workloads/op_selective_recompute.hpp"
#include "workloads/planning/expert_estimate.hpp"
#include "workloads/planning/merged_step_estimate.hpp"
#include "workloads/planning/routing_skew_estimate.hpp"
#include "workloads/precision.hpp"
#include "workloads/stage_slices.hpp"
#include "workloads/torch_async_tp.hpp"

namespace trainsim::workloads {
namespace {

// The links a group's rings run over: inside one NVLink domain (a node, or
// the nodes cluster.nvlink_domain joins), the GPUs' NVLink (or PCIe) port
// with one ring; across domains, one ring per NIC the group has in a domain
// (its rails, at most kMaxRingRails), each at a NIC's achievable bandwidth.
struct GroupPath {
  int channels = 1;
  double bandwidth_Bps = 0;
  double hop_latency_s = 0;
};

// The rings of `members` GPUs of one node: a full mesh gives them their
// m - 1 links of the GPU's g - 1 (rings on disjoint links, as RCCL runs them).
double intra_node_Bps(const platforms::NodeGroup& g, std::size_t members) {
  if (g.shape == platforms::NodeShape::pcie)
    return g.pcie.effective_Bps();
  if (g.shape == platforms::NodeShape::full_mesh && g.gpus_per_node > 1)
    return g.nvlink.effective_Bps() * static_cast<double>(members - 1) / (g.gpus_per_node - 1);
  return g.nvlink.effective_Bps();
}

GroupPath group_path(const platforms::ClusterSpec& cluster, const std::vector<int>& gpus) {
  // domain -> the (node, NIC) pairs the group's members use there
  std::map<int, std::set<std::pair<int, int>>> nics_by_domain;
  double slowest_Bps = 0;
  const platforms::NodeGroup* slowest = nullptr;
  for (int gpu : gpus) {
    const auto where = cluster.locate(gpu);
    const auto& group = cluster.groups.at(static_cast<std::size_t>(where.group));
    nics_by_domain[where.domain].insert({where.node, group.nic_of(where.local_rank)});
    const double bw = group.nic.bandwidth_Bps * cluster.fabric.efficiency;
    if (slowest == nullptr || bw < slowest_Bps) {
      slowest_Bps = bw;
      slowest = &group;
    }
  }
  GroupPath path;
  if (nics_by_domain.size() <= 1) {
    const auto& group = cluster.group_of(gpus.front());
    path.bandwidth_Bps = intra_node_Bps(group, gpus.size());
    path.hop_latency_s = group.nvlink.latency_s;
    return path;
  }
  std::size_t rails = std::min<std::size_t>(gpus.size(), platforms::kMaxRingRails);
  for (const auto& [domain, nics] : nics_by_domain)
    rails = std::min(rails, nics.size());
  path.channels = static_cast<int>(std::max<std::size_t>(1, rails));
  path.bandwidth_Bps = slowest_Bps;
  path.hop_latency_s = slowest->nic.latency_s + cluster.fabric.spine_latency_s;
  return path;
}

double collective_s(const platforms::ClusterSpec& cluster, CollectiveOp op, double bytes,
                    const std::vector<int>& gpus) {
  if (gpus.size() < 2 || bytes <= 0)
    return 0;
  const GroupPath path = group_path(cluster, gpus);
  return ring_time_s(op, bytes, static_cast<int>(gpus.size()), path.channels, path.bandwidth_Bps,
                     path.hop_latency_s, cluster.collectives.launch_latency_s);
}

// One pipeline rank's costs for one micro-batch (its chunks summed).
struct RankCosts {
  double forward_s = 0, backward_s = 0, backward_input_s = 0, backward_weight_s = 0;
  double compute_s = 0;    // kernels only (no TP communication, no FSDP stretch)
  double tp_s = 0;         // TP collectives of one micro-batch
  double fsdp_comm_s = 0;  // FSDP gathers and reduce-scatters of one micro-batch
  double ep_s = 0;         // expert all-to-alls of one micro-batch that show
};

}  // namespace

double ring_time_s(CollectiveOp op, double bytes, int ranks, int channels, double bandwidth_Bps,
                   double hop_latency_s, double launch_latency_s) {
  if (ranks < 2)
    return 0;
  const double n = ranks;
  const double step = hop_latency_s + bytes / (n * std::max(1, channels) * bandwidth_Bps);
  const double steps = op == CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
  return steps * step + launch_latency_s;
}

PlanEstimate estimate_plan(const ModelSpec& model, const ParallelPlan& plan,
                           const platforms::ClusterSpec& cluster, const CostModel& cost) {
  const GpuMemoryModel memory(model, plan);
  const PipelineSchedule& layout = memory.layout();
  const int p = plan.pp;
  const int v = layout.chunks;
  // DualPipe: each of a rank's two chunks (two whole stages) runs half of
  // the micro-batches, so the per-rank sums over chunks count m / 2 times.
  const bool bidirectional = layout.bidirectional();
  const int m = bidirectional ? plan.micro_batches() / 2 : plan.micro_batches();
  const int d = plan.data_parallel_size();
  const double g = plan.grad_bytes;
  const bool fsdp = plan.zero_stage == 3;

  // TP: one collective per folded op; sequence parallelism splits each into a
  // reduce-scatter and an all-gather of the same size (the same time but
  // one more launch).
  std::vector<int> tp_group;
  for (int t = 0; t < plan.tp; ++t)
    tp_group.push_back(plan.gpu_of(0, 0, t, 0));
  const double tp_bytes = tp_allreduce_bytes(model, plan);
  // FP8 moves some of them in 1-byte elements (workloads/precision.hpp).
  auto tp_time = [&](int collectives) {
    if (plan.tp < 2 || collectives == 0)
      return 0.0;
    double one = collective_s(cluster, CollectiveOp::all_reduce, tp_bytes, tp_group);
    if (plan.sequence_parallel)
      one = collective_s(cluster, CollectiveOp::reduce_scatter,
                         tp_bytes * tp_collective_byte_factor(plan, false), tp_group) +
            collective_s(cluster, CollectiveOp::all_gather, tp_bytes * tp_collective_byte_factor(plan, true),
                         tp_group);
    return collectives * one;
  };

  // With Transformer Engine's userbuffers (plan.tp_comm_overlap: true) an
  // op's collectives (C) and linear GEMMs (G) run in k = tp chunks, each
  // chunk's communication after its GEMMs and under the next chunk's
  // (iteration_builder.cpp): the op ends C / k + (k - 1) / k max(0, C - G)
  // after its compute would. torch's async TP has its own (async_tp_s).
  auto exposed_tp = [&](double comm_s, double linear_s) {
    if (!plan.userbuffers() || plan.tp < 2)
      return comm_s;
    const double k = plan.tp;
    return comm_s / k + (k - 1) / k * std::max(0.0, comm_s - linear_s);
  };

  // torch's async TP (tp_comm_overlap: torch_async;
  // workloads/torch_async_tp.hpp), the TP time of an op of `kind` on `slice`
  // beyond its compute `op_s`: per layer each fused op of the pass (the cost
  // model's async_tp_units) takes exposed + c + (k - 1) max(c, m) in place of
  // its GEMM, c one shard GEMM, m one shard's copy (S / k bytes over the TP
  // group's link, its latency and a launch, as the replay charges each ring
  // shift), as the replay's events (graph_builder/async_tp_units.cpp); what
  // the pass leaves to NCCL (the input-gradient pass's reduce-scatters after
  // the QKV and MLP-up dgrads, selective_op's gathers) runs serially. A cost
  // model without GEMM shapes names no fused op: every collective stays
  // NCCL's, serial (nullopt: the caller's serial sum).
  const GroupPath tp_path = plan.tp > 1 ? group_path(cluster, tp_group) : GroupPath{};
  auto async_tp_s = [&](PipeOpKind kind, const StageSlice& slice, const platforms::GpuSpec& gpu,
                        double op_s) -> std::optional<double> {
    const int layers = transformer_layers_of(model, slice);
    if (!plan.torch_async_tp() || plan.tp < 2 || layers == 0)
      return std::nullopt;
    const std::vector<AsyncTpUnit> units = cost.async_tp_units(kind, gpu);
    if (units.empty())
      return std::nullopt;
    const double k = plan.tp;
    double fused = 0, undivided = 0;
    for (const auto& u : units) {
      const double bytes =
          tp_bytes * tp_collective_byte_factor(plan, u.collective == CollectiveOp::all_gather);
      const double copy =
          cluster.collectives.launch_latency_s + tp_path.hop_latency_s + bytes / k / tp_path.bandwidth_Bps;
      fused += u.exposed_s + u.shard_gemm_s + (k - 1) * std::max(u.shard_gemm_s, copy);
      undivided += u.gemm_s;
    }
    const double plain_scatters = async_tp_plain_reduce_scatters(kind) * layers;
    const double plain_gathers =
        kind == PipeOpKind::forward ? 0.0 : double(op_selective_recompute_tp_all_gathers(plan)) * layers;
    const double plain =
        plain_scatters * collective_s(cluster, CollectiveOp::reduce_scatter,
                                      tp_bytes * tp_collective_byte_factor(plan, false), tp_group) +
        plain_gathers * collective_s(cluster, CollectiveOp::all_gather,
                                     tp_bytes * tp_collective_byte_factor(plan, true), tp_group);
    return (layers * fused - std::min(layers * undivided, op_s * plan.cp)) / plan.cp + plain;
  };

  // One MoE layer's expert-TP all-gather and reduce-scatter (1 < expert_tp
  // < tp) over the first expert-TP group: expert_tp consecutive GPUs of a
  // TP group.
  double expert_tp_pair_s = 0;
  if (has_expert_tp_collectives(model, plan)) {
    const std::vector<int> group(tp_group.begin(), tp_group.begin() + plan.expert_tp());
    const double bytes = expert_tp_collective_bytes(model, plan);
    expert_tp_pair_s = collective_s(cluster, CollectiveOp::all_gather, bytes, group) +
                       collective_s(cluster, CollectiveOp::reduce_scatter, bytes, group);
  }

  const BubbleModel bubble = traits_of(plan.schedule).bubble;
  const bool split_backward = bubble == BubbleModel::zero_bubble_h1 ||
                              bubble == BubbleModel::zero_bubble_h2 || bubble == BubbleModel::dualpipe;

  // Skewed routing: each MoE layer at its busiest EP rank's pace.
  const RoutingSkewEstimate skew(model, plan);

  std::vector<RankCosts> ranks(static_cast<std::size_t>(p));
  std::vector<std::vector<int>> dp_groups(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) {
    auto& rc = ranks[static_cast<std::size_t>(r)];
    const auto& gpu = cluster.gpu_of(plan.gpu_of(r, 0, 0, 0));
    // One MoE layer's dispatch and combine on this stage's EP groups
    // (balanced; each chunk scales it for skewed routing).
    const ExpertExchangeEstimate exchange = expert_exchange_estimate(model, plan, cluster, r);
    // moe_a2a_overlap merges the steady state's forward-backward pairs; the
    // warm-up forwards and cool-down backwards have no partner (1F1B: p - r
    // of each, one more than without the overlap; interleaved: Megatron's
    // (v - 1) p + 2 (p - r - 1) + 1, plus one; DualPipe-V: its 2 (p - r) - 1
    // unpaired chunks of 2m).
    double merged_share = 0;
    if (plan.moe_a2a_overlap && plan.ep > 1 && model.is_moe()) {
      double warm = p - r, ops = m;
      if (plan.schedule == ScheduleKind::interleaved_one_f_one_b) {
        warm = (v - 1) * p + 2 * (p - r - 1) + 2;
        ops = double(m) * v;
      } else if (plan.schedule == ScheduleKind::dualpipe_v) {
        warm = 2 * (p - r) - 1;
        ops = 2.0 * m;
      } else if (bidirectional) {
        // DualPipe's pairs (dualpipe.cpp, steps 4 and 5) of its 2 (m / 2)
        // forwards: 2 (m/2 - p + h + 1) + p/2 - h - 1, one fewer on the
        // middle ranks.
        const int h = std::min(r, p - 1 - r);
        const bool middle = r == p / 2 - 1 || r == p / 2;
        ops = 2.0 * m;
        warm = ops - (2.0 * (m - p + h + 1) + (p / 2 - h - 1) - (middle ? 1 : 0));
      }
      merged_share = std::max(0.0, 1 - std::min(1.0, warm / ops));
    }
    for (int dp = 0; dp < plan.dp; ++dp)
      for (int c = 0; c < plan.cp; ++c)
        dp_groups[static_cast<std::size_t>(r)].push_back(plan.gpu_of(r, dp, 0, c));
    const auto& dp_group = dp_groups[static_cast<std::size_t>(r)];
    // Hybrid sharding: gathers and reduce-scatters over the first shard
    // group, each unit's shard all-reduced across the groups (position 0's
    // GPUs) on the reduce-scatter's stream.
    const auto shard = static_cast<std::size_t>(plan.zero_shard_size());
    const std::vector<int> shard_group(dp_group.begin(),
                                       dp_group.begin() + static_cast<std::ptrdiff_t>(shard));
    std::vector<int> replica_group;
    for (std::size_t k = 0; k < dp_group.size(); k += shard)
      replica_group.push_back(dp_group[k]);
    // With moe_a2a_overlap: each chunk's ops as a merged step runs them
    // (and, deferring weight gradients, as a backward alone runs them).
    const bool deferring = defers_weight_gradients(model, plan);
    struct ChunkOps {
      MergedOp forward, backward;
      bool moe = false;
      double ep_f = 0, ep_b = 0;  // the serial all-to-all time of each op
    };
    std::vector<ChunkOps> chunk_ops;
    for (int chunk = 0; chunk < v; ++chunk) {
      const StageSlice slice = virtual_stage_slice(model, plan, layout.virtual_stage(r, chunk));
      const OpCost forward = cost.forward(slice, gpu), input = cost.backward_input(slice, gpu),
                   weight = cost.backward_weight(slice, gpu);
      const double f =
          (forward.duration_s + skew.extra_compute_s(PipeOpKind::forward, slice, cost, gpu)) / plan.cp;
      const double bi =
          (input.duration_s + skew.extra_compute_s(PipeOpKind::backward_input, slice, cost, gpu)) / plan.cp;
      const double w =
          (weight.duration_s + skew.extra_compute_s(PipeOpKind::backward_weight, slice, cost, gpu)) / plan.cp;
      const double ep_pair_s = skew.pass_pair_s(exchange, slice);
      // A zero-bubble B hides its collectives under its own GEMMs only.
      const double backward_linear_s =
          (input.tp_overlap_s + (split_backward ? 0.0 : weight.tp_overlap_s)) / plan.cp;
      // With expert TP below tp a MoE layer without shared experts runs no
      // dense TP collective around its MLP (iteration_builder.cpp,
      // tp_allreduces); between 1 and tp its expert-TP group all-gathers and
      // reduce-scatters the dispatched tokens instead, once per MoE layer
      // and pass, serial with the op.
      const int tp_per_pass =
          2 * slice.layers - (plan.expert_tp_folded() && model.is_moe() && model.moe.shared_experts == 0
                                  ? moe_layers_of(model, slice)
                                  : 0);
      const int passes_b = plan.recompute == Recompute::full ? 2 : 1;
      const int expert_tp_pairs = has_expert_tp_collectives(model, plan) ? moe_layers_of(model, slice) : 0;
      double tp_f = exposed_tp(tp_time(tp_per_pass), forward.tp_overlap_s / plan.cp) +
                    expert_tp_pairs * expert_tp_pair_s;
      // recompute selective_op repeats two all-gathers a layer: an
      // all-reduce's worth (op_selective_recompute.hpp).
      const int recompute_gathers = op_selective_recompute_tp_all_gathers(plan) * slice.layers / 2;
      double tp_b = exposed_tp(tp_time(passes_b * tp_per_pass + recompute_gathers), backward_linear_s) +
                    passes_b * expert_tp_pairs * expert_tp_pair_s;
      // torch_async: dense layers only (the loader refuses MoE and MLA).
      if (const auto async_f = async_tp_s(PipeOpKind::forward, slice, gpu, f))
        tp_f = *async_f;
      const PipeOpKind backward_kind = split_backward ? PipeOpKind::backward_input : PipeOpKind::backward;
      if (const auto async_b = async_tp_s(backward_kind, slice, gpu, split_backward ? bi : bi + w))
        tp_b = *async_b;
      double fsdp_f = 0, fsdp_b = 0;
      if (fsdp && d > 1 && slice.layers > 0) {
        // Per layer: its compute against its gathers (and the reduce-scatter
        // of its gradients), prefetched one layer ahead on the DP stream.
        const double unit = model.layer_parameters() / plan.tp;
        const double gather = collective_s(cluster, CollectiveOp::all_gather,
                                           param_gather_bytes_per_parameter(plan, 1.0) * unit, shard_group);
        double scatter = collective_s(cluster, CollectiveOp::reduce_scatter, g * unit, shard_group);
        if (replica_group.size() > 1)
          scatter += collective_s(cluster, CollectiveOp::all_reduce, g * unit / static_cast<double>(shard),
                                  replica_group);
        const double layers = slice.layers;
        // Gathered once and reduced once per iteration (reshard_after_forward
        // false, grad_reduce per_step): the first micro-batch's gathers and
        // the last one's reduce-scatters, spread over the m micro-batches.
        const double forward_gather = plan.reshard_after_forward ? gather : gather / m;
        const double backward_gather = plan.reshard_after_forward ? gather : 0.0;
        const double backward_scatter = plan.grad_reduce_per_step ? scatter / m : scatter;
        fsdp_f = layers * std::max(0.0, forward_gather - f / layers);
        fsdp_b = layers * std::max(0.0, backward_gather + backward_scatter - (bi + w) / layers);
        rc.fsdp_comm_s += layers * (forward_gather + backward_gather + backward_scatter);
      }
      // Expert all-to-alls: serial with the op's compute, as the replay
      // gates the next op on them; with moe_a2a_overlap the merged F&B
      // steps replace the serial sum below (after the chunks).
      const int moe_layers = plan.ep > 1 ? moe_layers_of(model, slice) : 0;
      double ep_f = 0, ep_b = 0;
      if (moe_layers > 0) {
        ep_f = ep_pair_s * ep_all_to_alls(plan, PipeOpKind::forward, moe_layers) / 2.0;
        ep_b = ep_pair_s * ep_all_to_alls(plan, PipeOpKind::backward, moe_layers) / 2.0;
      }
      if (merged_share > 0 || deferring)
        chunk_ops.push_back(
            {.forward = merged_op(model, plan, cost, gpu, slice, PipeOpKind::forward, exchange, skew, tp_f),
             .backward = merged_op(model, plan, cost, gpu, slice, PipeOpKind::backward, exchange, skew, tp_b),
             .moe = moe_layers > 0,
             .ep_f = ep_f,
             .ep_b = ep_b});
      rc.compute_s += f + bi + w;
      rc.tp_s += tp_f + tp_b;
      rc.ep_s += ep_f + ep_b;
      rc.forward_s += f + tp_f + fsdp_f + ep_f;
      rc.backward_input_s += bi + tp_b + fsdp_b + ep_b;
      rc.backward_weight_s += w;
    }
    // moe_a2a_overlap: each steady-state step runs a forward with the
    // backward it is paired with, piece by piece (merged_step_estimate.hpp):
    // what the step takes beyond the two ops' compute shows, TP first (its
    // collectives may hide under the other op's pieces too), the rest as
    // the all-to-alls'. 1F1B and interleaving pair a chunk's forward with a
    // backward of the same chunk (exact for equal chunks), DualPipe-V chunk
    // 0's forward with chunk 1's backward and chunk 1's with chunk 0's.
    for (std::size_t c = 0; merged_share > 0 && c < chunk_ops.size(); ++c) {
      const std::size_t pair = traits_of(plan.schedule).marks_pairs ? chunk_ops.size() - 1 - c : c;
      const ChunkOps& fo = chunk_ops[c];
      const ChunkOps& bo = chunk_ops[pair];
      if (!fo.moe || !bo.moe)
        continue;  // the replay merges only ops that both run MoE layers
      const auto sum = [](const MergedOp& op) {
        double s = 0;
        for (const auto& piece : op.pieces)
          s += piece.compute_s + piece.deferred_s;
        return s;
      };
      const double compute = sum(fo.forward) + sum(bo.backward);
      const double beyond = std::max(
          0.0, merged_step_s(fo.forward, bo.backward, cluster.collectives.compute_interference) - compute);
      const double tp_serial = fo.forward.tail_s + bo.backward.tail_s;
      const double ep_serial = fo.ep_f + bo.ep_b;
      const double tp_merged = std::min(tp_serial, beyond);
      const double delta_tp = merged_share * (tp_merged - tp_serial);
      const double delta_ep = merged_share * (beyond - tp_merged - ep_serial);
      rc.tp_s += delta_tp;
      rc.ep_s += delta_ep;
      // Split between the two ops as their serial communication was.
      const double serial = tp_serial + ep_serial;
      const double forward_part = serial > 0 ? (fo.forward.tail_s + fo.ep_f) / serial : 0.5;
      rc.forward_s += forward_part * (delta_tp + delta_ep);
      rc.backward_input_s += (1 - forward_part) * (delta_tp + delta_ep);
    }
    // plan.delay_wgrad_compute: the backwards no forward is merged with (the
    // cool-down's p - r of 1F1B, the 1 - merged_share of them) run alone,
    // piece by piece, each MoE piece's weight gradient beside its
    // all-to-all: min(W, (1 - interference) a2a) shorter per such layer
    // (the merged steps above defer theirs inside the step). The GPU's last
    // op (chunk 0's last backward) keeps its last piece's weight gradient:
    // once in the m micro-batches. Hidden communication: the all-to-alls',
    // the rest the TP tail's.
    if (deferring) {
      const double interference = cluster.collectives.compute_interference;
      const auto hidden = [&](const MergedOp& op) {
        return std::max(0.0, serial_op_s(op) - lone_backward_s(op, interference));
      };
      for (std::size_t c = 0; c < chunk_ops.size(); ++c) {
        const MergedOp& backward = chunk_ops[c].backward;
        if (!chunk_ops[c].moe || backward.pieces.empty())
          continue;
        double saved = (1 - merged_share) * hidden(backward);
        if (c == 0) {
          MergedOp last = backward;
          auto& piece = last.pieces.back();
          piece.compute_s += piece.deferred_s;
          piece.deferred_s = 0;
          saved -= (hidden(backward) - hidden(last)) / m;
        }
        saved = std::max(0.0, saved);
        const double from_ep = std::min(saved, (1 - merged_share) * chunk_ops[c].ep_b);
        rc.ep_s -= from_ep;
        rc.tp_s -= saved - from_ep;
        rc.backward_input_s -= saved;
      }
    }
    rc.backward_s = rc.backward_input_s + rc.backward_weight_s;
  }

  PlanEstimate e;
  double slowest = 0, sum_ranks = 0, zb_full = 0, zb_h1_tail = 0, zb_h2_tail = 0, dualpipe_tail = 0;
  std::size_t worst = 0;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    const auto& rc = ranks[r];
    const double t = rc.forward_s + rc.backward_s;
    sum_ranks += t;
    if (t > slowest) {
      slowest = t;
      worst = r;
    }
    zb_full = std::max(zb_full, t);
    zb_h1_tail = std::max(zb_h1_tail, rc.forward_s + rc.backward_input_s - rc.backward_weight_s);
    zb_h2_tail = std::max(zb_h2_tail, rc.forward_s + rc.backward_input_s - 2 * rc.backward_weight_s);
    // DualPipe: F&B + B - 3W of one chunk (the rank's sums over its two
    // equal chunks, halved), F&B = F + B.
    dualpipe_tail =
        std::max(dualpipe_tail, (rc.forward_s + 2 * rc.backward_s - 3 * rc.backward_weight_s) / 2);
  }
  double pipeline_s = 0;
  switch (bubble) {
    case BubbleModel::flush:
      pipeline_s = sum_ranks + (m - 1) * slowest;
      break;
    case BubbleModel::interleaved:
      pipeline_s = m * slowest + (p - 1) * slowest / v;
      break;
    case BubbleModel::zero_bubble_h1:
      pipeline_s = m * zb_full + (p - 1) * std::max(0.0, zb_h1_tail);
      break;
    case BubbleModel::zero_bubble_h2:
      pipeline_s = m * zb_full + (p - 1) * std::max(0.0, zb_h2_tail);
      break;
    case BubbleModel::dualpipe:
      pipeline_s = m * zb_full + (p / 2 - 1) * std::max(0.0, dualpipe_tail);
      break;
  }
  const auto& worst_rank = ranks[worst];
  e.compute_s = m * worst_rank.compute_s;
  e.tp_comm_s = m * worst_rank.tp_s;
  e.ep_comm_s = m * worst_rank.ep_s;
  e.bubble_s = std::max(0.0, pipeline_s - m * slowest);

  // Pipeline transfers of the fill and the drain: the first micro-batch
  // crosses every rank boundary on its way down, its gradient on the way up.
  if (p > 1) {
    double send = 0;
    const double bytes = pipeline_message_bytes(model, plan);
    for (int r = 0; r + 1 < p; ++r) {
      const std::vector<int> pair{plan.gpu_of(r, 0, 0, 0), plan.gpu_of(r + 1, 0, 0, 0)};
      const GroupPath path = group_path(cluster, pair);
      send = std::max(send, path.hop_latency_s + bytes / path.bandwidth_Bps);
    }
    // DualPipe's micro-batches cross p - 1 boundaries each way.
    e.pp_comm_s = 2.0 * (bidirectional ? p - 1 : p * v - 1) * send;
    if (traits_of(plan.schedule).evicts_activations) {
      // Evicted activations travel to the paired stage and back on the
      // pipeline stream; what one F + B cannot cover shows, once per
      // micro-batch the first stage evicts.
      const double act = memory.stored_activations(0);
      const std::vector<int> pair{plan.gpu_of(0, 0, 0, 0), plan.gpu_of(p - 1, 0, 0, 0)};
      const GroupPath path = group_path(cluster, pair);
      const double move = 2 * (path.hop_latency_s + act / path.bandwidth_Bps);
      const int evicted = std::max(0, p - bpipe_resident_limit(p));
      e.pp_comm_s += evicted * std::max(0.0, move - ranks.front().forward_s - ranks.front().backward_s);
    }
  }

  // Data parallelism, on the rank whose pipeline finishes last.
  double dp_exposed = 0, dp_busy = 0, optimizer = 0, copy_sync = 0;
  for (int r = 0; r < p; ++r) {
    const auto& rc = ranks[static_cast<std::size_t>(r)];
    const auto& group = dp_groups[static_cast<std::size_t>(r)];
    const double params = stage_parameters_per_gpu(model, plan, r);
    const auto& gpu = cluster.gpu_of(plan.gpu_of(r, 0, 0, 0));
    // Expert parallelism: the routed experts' parameters are replicated (and
    // ZeRO-1 sharded) over the expert data-parallel group only, the GPUs of
    // the DP group at positions equal modulo ep.
    // With expert TP below tp the expert data-parallel groups cross TP
    // ranks (expert_data_parallel_groups): tp x cp x dp / (ep x etp) GPUs.
    const bool folded = plan.expert_tp_folded() && model.is_moe();
    const double experts = plan.ep > 1 || folded ? stage_expert_parameters_per_gpu(model, plan, r) : 0.0;
    const double dense = params - experts;
    std::vector<int> expert_group;
    if (folded)
      expert_group = expert_data_parallel_groups(plan, r).front();
    else
      for (std::size_t k = 0; k < group.size(); k += static_cast<std::size_t>(plan.ep))
        expert_group.push_back(group[k]);
    const double expert_shard = folded ? plan.expert_data_parallel_size()
                                       : std::max<double>(1.0, double(plan.zero_shard_size()) / plan.ep);
    const double local = plan.zero_stage >= 1 && (d > 1 || expert_group.size() > 1)
                             ? dense / plan.zero_shard_size() + experts / expert_shard
                             : params;
    optimizer = std::max(optimizer, cost.optimizer(local, gpu).duration_s);
    // DualPipe: the all-reduce of the two copies' gradients (ranks r and
    // p - 1 - r) before the step, all of it exposed
    // (graph_builder/dualpipe_copy_sync.cpp).
    if (bidirectional && p > 1)
      copy_sync =
          std::max(copy_sync, collective_s(cluster, CollectiveOp::all_reduce, local * g,
                                           {plan.gpu_of(r, 0, 0, 0), plan.gpu_of(p - 1 - r, 0, 0, 0)}));
    if (d < 2 && expert_group.size() < 2)
      continue;
    double busy = 0, exposed = 0;
    const double reduce_op_bytes = g * params;
    const double gather_bytes =
        param_gather_bytes_per_parameter(plan, params > 0 ? memory.layer_parameters_on(r) / params : 0.0) *
        params;
    switch (plan.zero_stage) {
      case 0:
      case 1: {
        // The dense part over the DP group, then (ep > 1) the experts' over
        // their expert DP group, one after the other on the DP stream.
        const auto reduction = [&](double share, const std::vector<int>& over) {
          return plan.zero_stage == 0
                     ? collective_s(cluster, CollectiveOp::all_reduce, share * reduce_op_bytes, over)
                     : collective_s(cluster, CollectiveOp::reduce_scatter, share * reduce_op_bytes, over) +
                           collective_s(cluster, CollectiveOp::all_gather, share * gather_bytes, over);
        };
        busy = experts > 0 ? reduction(dense / params, group) + reduction(experts / params, expert_group)
                           : reduction(1.0, group);
        exposed = busy;
        if (plan.overlap_grad_reduce) {
          // Buckets fire during the last backward; the parameter all-gather
          // of ZeRO-1 still follows the step.
          const double buckets = std::max(1.0, reduce_op_bytes / plan.grad_bucket_size_bytes());
          // ZeRO-1: the reduce-scatters, with EP the dense and the experts' apart.
          const auto scatter = [&](double share, const std::vector<int>& over) {
            return collective_s(cluster, CollectiveOp::reduce_scatter, share * reduce_op_bytes, over);
          };
          const double reduce =
              plan.zero_stage == 0 ? busy
              : experts > 0        ? scatter(dense / params, group) + scatter(experts / params, expert_group)
                            : collective_s(cluster, CollectiveOp::reduce_scatter, reduce_op_bytes, group);
          const double gather = busy - reduce;
          // plan.overlap_param_gather: bucket by bucket under the first
          // forward of the stage (a bucket ahead; the first one shows).
          const double exposed_gather =
              plan.overlap_param_gather ? std::max(gather / buckets, gather - rc.forward_s) : gather;
          exposed = std::max(reduce / buckets, reduce - rc.backward_s) + exposed_gather;
        }
        break;
      }
      case 2: {
        const double scatter = collective_s(cluster, CollectiveOp::reduce_scatter, reduce_op_bytes, group);
        if (plan.grad_reduce_per_step) {
          // Once, as ZeRO-1's.
          busy = scatter + collective_s(cluster, CollectiveOp::all_gather, gather_bytes, group);
          exposed = busy;
          if (plan.overlap_grad_reduce) {
            const double buckets = std::max(1.0, reduce_op_bytes / plan.grad_bucket_size_bytes());
            const double gather = busy - scatter;
            const double exposed_gather =
                plan.overlap_param_gather ? std::max(gather / buckets, gather - rc.forward_s) : gather;
            exposed = std::max(scatter / buckets, scatter - rc.backward_s) + exposed_gather;
          }
          break;
        }
        const double gather = collective_s(cluster, CollectiveOp::all_gather, gather_bytes, group);
        busy = m * scatter + gather;
        const double exposed_gather =
            plan.overlap_param_gather
                ? std::max(gather / std::max(1.0, reduce_op_bytes / plan.grad_bucket_size_bytes()),
                           gather - rc.forward_s)
                : gather;
        exposed =
            scatter + exposed_gather + std::max(0.0, (m - 1) * (scatter - rc.forward_s - rc.backward_s));
        break;
      }
      default:
        // FSDP: inside the stretched layers; the first gather is exposed.
        busy = m * rc.fsdp_comm_s;
        exposed = 0;
        break;
    }
    dp_busy = std::max(dp_busy, busy);
    dp_exposed = std::max(dp_exposed, exposed);
  }
  // Tied embeddings (or MTP's embedding copy) with a pipeline: the embedding
  // group's all-reduce of the TP shard's gradient between the first and the
  // last stage, between the DP reduction and the step, all of it exposed
  // (graph_builder/tied_embedding_sync.cpp). DualPipe-V ends on rank 0,
  // DualPipe's ranks 0 and p - 1 each hold an embedding and an output layer.
  e.pp_comm_s += copy_sync;
  if ((model.tied_embeddings || model.mtp_depth > 0) && p > 1 && plan.schedule != ScheduleKind::dualpipe_v &&
      !bidirectional) {
    const std::vector<int> pair{plan.gpu_of(0, 0, 0, 0), plan.gpu_of(p - 1, 0, 0, 0)};
    e.pp_comm_s += collective_s(cluster, CollectiveOp::all_reduce,
                                double(model.vocab) * model.hidden / plan.tp * g, pair);
  }
  e.dp_comm_s = dp_busy;
  e.dp_exposed_s = dp_exposed;
  e.optimizer_s = optimizer;
  e.iteration_s = pipeline_s + e.pp_comm_s + e.dp_exposed_s + e.optimizer_s;
  return e;
}

}  // namespace trainsim::workloads
