#pragma once
// A pipeline schedule as per-rank ordered op lists: the contract between the
// schedule generators (workloads/schedules/*.cpp) and the task-graph builder.
//
// Dependencies implied by a schedule (the builder adds them, plus transfers):
//  - F(mb, vs) after F(mb, vs - 1): the activation of virtual stage vs - 1;
//  - B(mb, vs) after B(mb, vs + 1): the gradient from virtual stage vs + 1;
//    the last virtual stage's B(mb) follows its own F(mb);
//  - W(mb, vs) after B(mb, vs) (weight gradient after input gradient);
//  - on one rank, its own list order.
// A virtual stage is one contiguous slice of the model's layers; with one
// chunk per rank the virtual stage is the rank. Under the bidirectional
// placement (DualPipe) a micro-batch runs only the virtual stages of its
// direction: chunk 0's micro-batches 0 .. m/2 - 1 virtual stages 0 .. p - 1,
// chunk 1's micro-batches 0 .. m/2 - 1 virtual stages p .. 2p - 1; the last
// of each direction turns its micro-batches around.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "platforms/problem.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::workloads {

enum class PipeOpKind : std::uint8_t {
  forward,
  backward,         // full backward (input and weight gradients)
  backward_input,   // zero-bubble B: input gradient only
  backward_weight,  // zero-bubble W: weight gradient only
};

struct PipeOp {
  PipeOpKind kind = PipeOpKind::forward;
  int micro_batch = 0;
  int chunk = 0;  // model chunk on this rank (0 without virtual stages)
  // A backward that runs overlapped with the forward listed just before it
  // (DualPipe's F&B pair): the pair starts only when both inputs are in.
  bool paired = false;

  friend bool operator==(const PipeOp&, const PipeOp&) = default;
};

// Where the chunks of a rank sit in the model.
enum class ChunkPlacement {
  looped,   // rank r holds virtual stages r, r + p, r + 2p, ... (Megatron interleaving)
  v_shape,  // rank r holds virtual stages r and 2p - 1 - r (ZB-V, DualPipe-V)
  // DualPipe: two pipelines of the model's p stages in opposite directions,
  // rank r holding stage r of the down one (chunk 0, virtual stage r) and
  // stage p - 1 - r of the up one (chunk 1, virtual stage 2p - 1 - r): the
  // ranks of V-shape, but each direction is a whole model.
  bidirectional
};

// BPipe: the activations of one forward leave the evictor rank for its
// acceptor after the forward, and come back before the matching backward.
// Indices point into the evictor's op list.
struct ActivationEviction {
  int rank = 0;      // evictor
  int acceptor = 0;  // holds the activations meanwhile
  int micro_batch = 0;
  int chunk = 0;
  int evict_after = 0;    // the forward whose activations move out
  int reload_after = -1;  // the op whose completion issues the reload (-1: none, issue at once)
  int reload_before = 0;  // the backward that needs them back
};

struct PipelineSchedule {
  int ranks = 1;
  int micro_batches = 1;
  int chunks = 1;
  ChunkPlacement placement = ChunkPlacement::looped;
  std::vector<std::vector<PipeOp>> per_rank;
  std::vector<ActivationEviction> evictions;  // BPipe only

  int virtual_stages() const { return ranks * chunks; }
  int virtual_stage(int rank, int chunk) const {
    if (placement != ChunkPlacement::looped && chunk % 2 == 1)
      return (chunk + 1) * ranks - 1 - rank;
    return chunk * ranks + rank;
  }
  int rank_of(int virtual_stage) const {
    const int chunk = virtual_stage / ranks;
    const int offset = virtual_stage % ranks;
    return placement != ChunkPlacement::looped && chunk % 2 == 1 ? ranks - 1 - offset : offset;
  }
  int chunk_of(int virtual_stage) const { return virtual_stage / ranks; }
  bool bidirectional() const { return placement == ChunkPlacement::bidirectional; }
  // Micro-batches each chunk runs: m, or m / 2 per direction (DualPipe).
  int micro_batches_of_chunk() const { return bidirectional() ? micro_batches / 2 : micro_batches; }
  // Whether a micro-batch's forward enters at / leaves from `virtual_stage`:
  // the first and last virtual stages, or each direction's ends.
  bool is_first_stage(int virtual_stage) const {
    return bidirectional() ? virtual_stage % ranks == 0 : virtual_stage == 0;
  }
  bool is_last_stage(int virtual_stage) const {
    return bidirectional() ? virtual_stage % ranks == ranks - 1 : virtual_stage == virtual_stages() - 1;
  }
};

// What ZB-V's greedy balances (zbv.py's PipelineGraph inputs): per-chunk
// times of F, B and W, the pipeline transfer time, and the activation memory
// an F adds, a B and a W release (any unit, only ratios matter). The defaults
// are the reference's own test setting (equal times, h = 4096, a = 32,
// s = 4096: F adds 34h + 5as, W frees 32h, B the rest).
struct ZbvInputs {
  double forward_s = 1;
  double backward_input_s = 1;
  double backward_weight_s = 1;
  double comm_s = 0;
  double forward_memory = 34.0 * 4096 + 5.0 * 32 * 4096;
  double weight_memory = -32.0 * 4096;
  double backward_memory() const { return -forward_memory - weight_memory; }
};

struct ScheduleOptions {
  // interleaved_1f1b: model chunks per rank (v >= 2).
  int virtual_stages = 2;
  // interleaved_1f1b: Megatron's microbatch_group_size_per_vp_stage, the
  // micro-batches that run through one chunk before the next; 0 = ranks
  // (Megatron's default).
  int microbatch_group = 0;
  ZbvInputs zbv;
  // 1f1b and interleaved_1f1b: forwards added to every rank's warm-up
  // (capped at the micro-batches). plan.moe_a2a_overlap sets 1, as
  // Megatron-core does for its merged F&B steps, so that each steady-state
  // step pairs a backward with a forward of another micro-batch (on the last
  // stage too) whose all-to-alls it can hide.
  int extra_warmup = 0;
};

// Model chunks a schedule puts on each rank.
enum class ChunksPerRank {
  one,     // v = 1
  two,     // v = 2: V-shaped (ZB-V, DualPipe-V) or bidirectional (DualPipe)
  several  // v >= 2, given by the scenario (interleaved 1F1B)
};

// The closed form of the bubble the plan search's estimate uses
// (workloads/planning/plan_estimate.cpp).
enum class BubbleModel {
  flush,           // (p - 1) stage times: GPipe, 1F1B, BPipe
  interleaved,     // (p - 1) / v stage times
  zero_bubble_h1,  // the tail of F + B - W, once per stage boundary
  zero_bubble_h2,  // the tail of F + B - 2W
  // DeepSeek-V3's Table 2 for DualPipe: (p/2 - 1)(F&B + B - 3W) per
  // whole-stage chunk (B a full backward, F&B the pair's time)
  dualpipe
};

// Everything the rest of trainsim needs to know about a schedule besides its
// op lists: each schedule's file (workloads/schedules/) defines its traits
// next to its generator, and schedule_table() lists them. Adding a schedule:
// its file, its ScheduleKind, and one line in the table (schedule.cpp).
struct ScheduleTraits {
  ScheduleKind kind;
  std::string_view name;  // the scenario word: plan.schedule
  ChunksPerRank chunks;
  ChunkPlacement placement;
  // Micro-batches run in groups of pp, so m must be a multiple of pp
  // (Megatron-LM's interleaving rule).
  bool micro_batches_in_groups_of_pp;
  // m >= this x pp (DualPipe's rule); 0: no minimum.
  int min_micro_batches_per_stage;
  BubbleModel bubble;
  bool evicts_activations;       // BPipe's evictions to the paired stage
  bool searched_by_default;      // `trainsim plan` tries it unless --set plan.schedule says otherwise
  bool balances_measured_costs;  // the generator is fed the cost model's chunk times (ZB-V's greedy)
  // Pipeline transfers when plan.p2p is not given: what the framework that
  // runs the schedule does (sync for Megatron-core's 1F1B, overlap for its
  // interleaved schedule with overlap_p2p_comm, async for the schedules
  // written with isend / irecv).
  P2pMode p2p;
  // plan.p2p: sync pairs every transfer with a receive the receiver posts
  // between two of its ops without deadlock (the op lists pair up as
  // Megatron's do); false where they do not, or where two ops run
  // overlapped (DualPipe's F&B).
  bool sync_p2p;
  // plan.p2p: overlap (Megatron's overlap_p2p_comm) is the schedule's own
  // pairing: Megatron-core refuses it without virtual stages, and its waits
  // follow the interleaved loop's order of ops.
  bool overlap_p2p;
  // The generator marks which backwards run overlapped with the forward
  // before them (PipeOp::paired: DualPipe's F&B chunk pairs); false: under
  // plan.moe_a2a_overlap every forward-then-backward of the list is merged
  // (Megatron-core's 1F1B A2A overlap).
  bool marks_pairs;
  PipelineSchedule (*make)(int ranks, int micro_batches, const ScheduleOptions& options);
};

// Every schedule, in ScheduleKind order.
const std::vector<ScheduleTraits>& schedule_table();
const ScheduleTraits& traits_of(ScheduleKind kind);
// "gpipe, 1f1b, ..." in table order, for messages.
std::string schedule_names();

// Compact text of one rank's list, for tests and error messages:
// "F0 F1 B0 F2 B1 ..." (chunk shown as F0.1 when chunks > 1). Letters as in
// PyTorch's pipelining schedules: F forward, B full backward, I input
// gradient (zero-bubble B), W weight gradient.
std::string to_string(const std::vector<PipeOp>& ops, int chunks = 1);

// Each generator throws std::invalid_argument, naming the rule, when it
// cannot build (p, m, v); schedule_problems() reports the same rules for the
// scenario validator.
PipelineSchedule make_gpipe(int ranks, int micro_batches);
PipelineSchedule make_one_f_one_b(int ranks, int micro_batches, int extra_warmup = 0);
PipelineSchedule make_interleaved_one_f_one_b(int ranks, int micro_batches, int virtual_stages,
                                              int microbatch_group = 0, int extra_warmup = 0);
PipelineSchedule make_zb_h1(int ranks, int micro_batches);
PipelineSchedule make_zb_h2(int ranks, int micro_batches);
PipelineSchedule make_zb_v(int ranks, int micro_batches, const ZbvInputs& inputs = {});
PipelineSchedule make_bpipe(int ranks, int micro_batches);
PipelineSchedule make_dualpipe_v(int ranks, int micro_batches);
PipelineSchedule make_dualpipe(int ranks, int micro_batches);
// Their traits, defined next to each generator.
ScheduleTraits gpipe_traits();
ScheduleTraits one_f_one_b_traits();
ScheduleTraits interleaved_one_f_one_b_traits();
ScheduleTraits zb_h1_traits();
ScheduleTraits zb_h2_traits();
ScheduleTraits zb_v_traits();
ScheduleTraits bpipe_traits();
ScheduleTraits dualpipe_v_traits();
ScheduleTraits dualpipe_traits();
PipelineSchedule make_schedule(ScheduleKind kind, int ranks, int micro_batches,
                               const ScheduleOptions& options = {});

// Model chunks per rank and their placement for a schedule.
ChunkPlacement placement_of(ScheduleKind kind);
// The v a schedule runs with when the scenario does not say: 2 for the
// V-shaped schedules, 1 for single-chunk ones, 0 (must be given) for
// interleaved_1f1b.
int default_virtual_stages(ScheduleKind kind);

// Why a plan's schedule cannot run (one entry per broken rule; empty when it
// can). `key` is the plan key a user would change, relative to the plan
// ("virtual_stages"); workloads/plan_checks.hpp reports them with the rest.
using ScheduleProblem = platforms::Problem;
std::vector<ScheduleProblem> schedule_problems(const ParallelPlan& plan, int layers);

// The pipeline transfers' pairing a plan runs with: plan.p2p, or the
// schedule's default when it says `automatic`.
P2pMode resolved_p2p(const ParallelPlan& plan);

// BPipe's balancing threshold: an evictor keeps at most this many
// micro-batches of activations resident (plus one being reloaded), so that
// each stage of a pair holds about half of the pair's p + 1.
int bpipe_resident_limit(int ranks);

}  // namespace trainsim::workloads
