#include "workloads/iteration_builder.hpp"

#include <stdexcept>
#include <string>

#include "workloads/activation_memory.hpp"

namespace trainsim::workloads {
namespace {

// The rank / chunk layout of the plan's schedule, without its op lists.
PipelineSchedule layout_of(const ParallelPlan& plan) {
  return PipelineSchedule{.ranks = plan.pp,
                          .micro_batches = 1,
                          .chunks = plan.virtual_stages,
                          .placement = placement_of(plan.schedule),
                          .per_rank = {},
                          .evictions = {}};
}

// Number of b x s x h all-reduces a TP group runs inside one op of `layers`
// layers: two per layer in the forward (after attention and after the MLP),
// two per layer in the backward, two more per layer when the backward
// recomputes the forward. A zero-bubble split keeps them all in B (input
// gradient: the all-reduces sit on the activation-gradient path); W (weight
// gradient) communicates nothing.
int tp_allreduces(const ParallelPlan& plan, PipeOpKind kind, int layers) {
  switch (kind) {
    case PipeOpKind::forward:
      return 2 * layers;
    case PipeOpKind::backward:
    case PipeOpKind::backward_input:
      return (plan.recompute == Recompute::full ? 4 : 2) * layers;
    case PipeOpKind::backward_weight:
      return 0;
  }
  return 0;
}

TaskKind task_kind(PipeOpKind kind) {
  switch (kind) {
    case PipeOpKind::forward:
      return TaskKind::forward;
    case PipeOpKind::backward:
      return TaskKind::backward;
    case PipeOpKind::backward_input:
      return TaskKind::backward_input;
    case PipeOpKind::backward_weight:
      return TaskKind::backward_weight;
  }
  return TaskKind::forward;
}

// One-way time of a pipeline message between two GPUs, from the cluster's
// link specs (what ZB-V's greedy calls the communication cost).
double transfer_time_s(const platforms::ClusterSpec& cluster, int from, int to, double bytes) {
  const auto a = cluster.locate(from), b = cluster.locate(to);
  const auto& link = a.node == b.node ? cluster.group_of(from).nvlink : cluster.group_of(from).nic;
  return link.bandwidth_Bps > 0 ? link.latency_s + bytes / link.bandwidth_Bps : link.latency_s;
}

class Builder {
 public:
  Builder(const ModelSpec& model, const ParallelPlan& plan, const platforms::ClusterSpec& cluster,
          const CostModel& cost)
      : model_(model), plan_(plan), cluster_(cluster), cost_(cost) {}

  TaskGraph build() {
    graph_.gpu_count = plan_.gpu_count();
    schedule_ = schedule_for(model_, plan_, cluster_, cost_);
    m_ = plan_.micro_batches();
    const auto gpus = static_cast<std::size_t>(plan_.gpu_count());
    const auto slots = static_cast<std::size_t>(schedule_.chunks * m_);
    // Per GPU, indexed chunk x m + micro-batch: the compute task of each op,
    // and the task after which its output is ready (its TP all-reduce when
    // tp > 1, else the compute task).
    forward_done_.assign(gpus, std::vector<TaskId>(slots, kNone));
    forward_task_ = backward_done_ = backward_task_ = paired_forward_ = forward_done_;
    op_task_.assign(gpus, {});
    op_done_.assign(gpus, {});
    last_.assign(gpus, kNone);

    for (int dp = 0; dp < plan_.dp; ++dp)
      for (int rank = 0; rank < plan_.pp; ++rank)
        add_rank_ops(dp, rank);
    for (int dp = 0; dp < plan_.dp; ++dp) {
      add_pipeline_sends(dp);
      add_evictions(dp);
    }
    for (int rank = 0; rank < plan_.pp; ++rank)
      for (int tp = 0; tp < plan_.tp; ++tp)
        add_gradient_sync_and_step(rank, tp);
    return std::move(graph_);
  }

 private:
  static constexpr TaskId kNone = static_cast<TaskId>(-1);

  std::size_t idx(int gpu) const { return static_cast<std::size_t>(gpu); }
  std::size_t slot(int chunk, int mb) const { return static_cast<std::size_t>(chunk * m_ + mb); }

  OpCost op_cost(PipeOpKind kind, const StageSlice& slice, const platforms::GpuSpec& gpu) const {
    switch (kind) {
      case PipeOpKind::forward:
        return cost_.forward(slice, gpu);
      case PipeOpKind::backward:
        return cost_.backward(slice, gpu);
      case PipeOpKind::backward_input:
        return cost_.backward_input(slice, gpu);
      case PipeOpKind::backward_weight:
        return cost_.backward_weight(slice, gpu);
    }
    return {};
  }

  void add_rank_ops(int dp, int rank) {
    std::vector<int> tp_group;
    for (int tp = 0; tp < plan_.tp; ++tp)
      tp_group.push_back(plan_.gpu_of(rank, dp, tp));
    const int group = plan_.tp > 1 ? graph_.add_group(tp_group) : -1;

    for (const PipeOp& op : schedule_.per_rank[static_cast<std::size_t>(rank)]) {
      const StageSlice slice = virtual_stage_slice(model_, plan_, schedule_.virtual_stage(rank, op.chunk));
      std::vector<TaskId> computes;
      for (int gpu : tp_group) {
        const OpCost cost = op_cost(op.kind, slice, cluster_.gpu_of(gpu));
        Task task{.kind = task_kind(op.kind),
                  .gpu = gpu,
                  .stage = rank,
                  .chunk = op.chunk,
                  .micro_batch = op.micro_batch,
                  .duration_s = cost.duration_s,
                  .model_flops = cost.model_flops,
                  .hardware_flops = cost.hardware_flops};
        const TaskId id = graph_.add(task);
        if (last_[idx(gpu)] != kNone)
          graph_.depend(last_[idx(gpu)], id);
        computes.push_back(id);
      }
      std::vector<TaskId> done = computes;
      if (const int fold = tp_allreduces(plan_, op.kind, slice.layers); group >= 0 && fold > 0) {
        Task collective{.kind = TaskKind::collective,
                        .comm = CommKind::tp,
                        .op = CollectiveOp::all_reduce,
                        .group = group,
                        .stage = rank,
                        .chunk = op.chunk,
                        .micro_batch = op.micro_batch,
                        .bytes = tp_allreduce_bytes(model_, plan_),
                        .fold = fold};
        const TaskId id = graph_.add(collective);
        for (TaskId c : computes)
          graph_.depend(c, id);
        done.assign(computes.size(), id);
      }
      const std::size_t s = slot(op.chunk, op.micro_batch);
      for (std::size_t k = 0; k < tp_group.size(); ++k) {
        const int gpu = tp_group[k];
        switch (op.kind) {
          case PipeOpKind::forward:
            forward_task_[idx(gpu)][s] = computes[k];
            forward_done_[idx(gpu)][s] = done[k];
            break;
          case PipeOpKind::backward:
          case PipeOpKind::backward_input:
            backward_task_[idx(gpu)][s] = computes[k];
            backward_done_[idx(gpu)][s] = done[k];
            if (op.paired) {
              if (op_task_[idx(gpu)].empty() || graph_[op_task_[idx(gpu)].back()].kind != TaskKind::forward)
                throw std::logic_error("schedule pairs a backward with no forward before it");
              paired_forward_[idx(gpu)][s] = op_task_[idx(gpu)].back();
            }
            break;
          case PipeOpKind::backward_weight:
            // W(mb) needs its own B(mb): every generator lists B first.
            if (backward_task_[idx(gpu)][s] == kNone)
              throw std::logic_error("schedule lists a weight gradient before its input gradient");
            graph_.depend(backward_task_[idx(gpu)][s], computes[k]);
            break;
        }
        op_task_[idx(gpu)].push_back(computes[k]);
        op_done_[idx(gpu)].push_back(done[k]);
        last_[idx(gpu)] = done[k];
      }
    }
  }

  // Activations flow up the virtual stages, gradients back down; each TP
  // rank sends its share to the same TP rank of the GPU holding the next
  // virtual stage. Consecutive virtual stages on one rank (the turn of a V)
  // hand over in memory: a dependency, no transfer.
  void add_pipeline_sends(int dp) {
    const double bytes = pipeline_message_bytes(model_, plan_);
    const int stages = schedule_.virtual_stages();
    for (int tp = 0; tp < plan_.tp; ++tp) {
      for (int vs = 0; vs + 1 < stages; ++vs) {
        const int r0 = schedule_.rank_of(vs), r1 = schedule_.rank_of(vs + 1);
        const int c0 = schedule_.chunk_of(vs), c1 = schedule_.chunk_of(vs + 1);
        const int g0 = plan_.gpu_of(r0, dp, tp), g1 = plan_.gpu_of(r1, dp, tp);
        for (int mb = 0; mb < m_; ++mb) {
          const TaskId f_out = forward_done_[idx(g0)][slot(c0, mb)];
          const TaskId f_in = forward_task_[idx(g1)][slot(c1, mb)];
          const TaskId b_out = backward_done_[idx(g1)][slot(c1, mb)];
          const TaskId b_in = backward_task_[idx(g0)][slot(c0, mb)];
          if (r0 == r1) {
            graph_.depend(f_out, f_in);
            graph_.depend(b_out, b_in);
            continue;
          }
          add_send({.from = g0,
                    .to = g1,
                    .stage = r0,
                    .chunk = c0,
                    .mb = mb,
                    .bytes = bytes,
                    .transfer = TransferKind::activation},
                   {f_out}, f_in);
          add_send({.from = g1,
                    .to = g0,
                    .stage = r1,
                    .chunk = c1,
                    .mb = mb,
                    .bytes = bytes,
                    .transfer = TransferKind::gradient},
                   {b_out}, b_in);
        }
      }
      // The last virtual stage turns the forward around: its backward
      // starts from its own forward's loss.
      const int last = stages - 1;
      const int g = plan_.gpu_of(schedule_.rank_of(last), dp, tp);
      for (int mb = 0; mb < m_; ++mb)
        feed_backward(forward_done_[idx(g)][slot(schedule_.chunk_of(last), mb)], g,
                      slot(schedule_.chunk_of(last), mb));
    }
  }

  // `input` (the gradient from the next virtual stage, or the loss) gates
  // the backward, and the forward it is paired with when they run overlapped.
  void feed_backward(TaskId input, int gpu, std::size_t s) {
    graph_.depend(input, backward_task_[idx(gpu)][s]);
    if (paired_forward_[idx(gpu)][s] != kNone)
      graph_.depend(input, paired_forward_[idx(gpu)][s]);
  }

  // BPipe: the evictor sends a forward's stored activations to its acceptor
  // once the forward is done, and the acceptor sends them back when the
  // evictor's reload point has passed; the backward waits for the reload.
  // Both are pipeline transfers: they share the pipeline streams and links
  // with the activations and gradients.
  void add_evictions(int dp) {
    for (const ActivationEviction& e : schedule_.evictions) {
      const StageSlice slice = virtual_stage_slice(model_, plan_, schedule_.virtual_stage(e.rank, e.chunk));
      const double bytes = stage_activation_bytes(model_, plan_, slice.layers);
      for (int tp = 0; tp < plan_.tp; ++tp) {
        const int evictor = plan_.gpu_of(e.rank, dp, tp), acceptor = plan_.gpu_of(e.acceptor, dp, tp);
        const auto& tasks = op_task_[idx(evictor)];
        const auto& done = op_done_[idx(evictor)];
        const TaskId evicted = add_send({.from = evictor,
                                         .to = acceptor,
                                         .stage = e.rank,
                                         .chunk = e.chunk,
                                         .mb = e.micro_batch,
                                         .bytes = bytes,
                                         .transfer = TransferKind::evict},
                                        {done[static_cast<std::size_t>(e.evict_after)]}, kNone);
        std::vector<TaskId> after{evicted};
        if (e.reload_after >= 0)
          after.push_back(tasks[static_cast<std::size_t>(e.reload_after)]);
        add_send({.from = acceptor,
                  .to = evictor,
                  .stage = e.acceptor,
                  .chunk = e.chunk,
                  .mb = e.micro_batch,
                  .bytes = bytes,
                  .transfer = TransferKind::reload},
                 after, tasks[static_cast<std::size_t>(e.reload_before)]);
      }
    }
  }

  struct Transfer {
    int from = 0, to = 0, stage = 0, chunk = 0, mb = 0;
    double bytes = 0;
    TransferKind transfer = TransferKind::none;
  };

  TaskId add_send(const Transfer& t, const std::vector<TaskId>& after, TaskId before) {
    Task send{.kind = TaskKind::send,
              .comm = CommKind::pp,
              .gpu = t.from,
              .peer = t.to,
              .stage = t.stage,
              .chunk = t.chunk,
              .transfer = t.transfer,
              .micro_batch = t.mb,
              .bytes = t.bytes};
    const TaskId id = graph_.add(send);
    for (TaskId a : after)
      graph_.depend(a, id);
    if (before != kNone)
      graph_.depend(id, before);
    return id;
  }

  // The DP group of (rank, tp rank) all-reduces its gradients once every
  // replica has finished its last backward or weight pass; each GPU then
  // steps its optimizer.
  void add_gradient_sync_and_step(int rank, int tp) {
    std::vector<int> members;
    for (int dp = 0; dp < plan_.dp; ++dp)
      members.push_back(plan_.gpu_of(rank, dp, tp));
    const double parameters = stage_parameters_per_gpu(model_, plan_, rank);
    TaskId sync = kNone;
    if (plan_.dp > 1) {
      Task collective{.kind = TaskKind::collective,
                      .comm = CommKind::dp,
                      .op = CollectiveOp::all_reduce,
                      .group = graph_.add_group(members),
                      .stage = rank,
                      .bytes = parameters * plan_.grad_bytes};
      sync = graph_.add(collective);
      for (int gpu : members)
        graph_.depend(last_[idx(gpu)], sync);
    }
    for (int gpu : members) {
      const OpCost cost = cost_.optimizer(parameters, cluster_.gpu_of(gpu));
      Task step{.kind = TaskKind::optimizer, .gpu = gpu, .stage = rank, .duration_s = cost.duration_s};
      const TaskId id = graph_.add(step);
      graph_.depend(sync != kNone ? sync : last_[idx(gpu)], id);
      last_[idx(gpu)] = id;
    }
  }

  const ModelSpec& model_;
  const ParallelPlan& plan_;
  const platforms::ClusterSpec& cluster_;
  const CostModel& cost_;
  PipelineSchedule schedule_;
  int m_ = 0;
  TaskGraph graph_;
  std::vector<std::vector<TaskId>> forward_done_, backward_done_, forward_task_, backward_task_;
  // The forward a backward runs overlapped with (DualPipe's F&B), if any.
  std::vector<std::vector<TaskId>> paired_forward_;
  std::vector<std::vector<TaskId>> op_task_, op_done_;  // per GPU, in list order
  std::vector<TaskId> last_;
};

}  // namespace

double pipeline_message_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  return 2.0 * plan.micro_batch_size * model.seq_len * model.hidden / plan.tp;
}

double tp_allreduce_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  return 2.0 * plan.micro_batch_size * model.seq_len * model.hidden;
}

StageSlice virtual_stage_slice(const ModelSpec& model, const ParallelPlan& plan, int virtual_stage) {
  const int stages = plan.pp * plan.virtual_stages;
  return {.layers = model.layers / stages,
          .embedding = virtual_stage == 0,
          .logits = virtual_stage == stages - 1};
}

double stage_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int stage) {
  const PipelineSchedule layout = layout_of(plan);
  double parameters = 0;
  for (int chunk = 0; chunk < layout.chunks; ++chunk) {
    const StageSlice slice = virtual_stage_slice(model, plan, layout.virtual_stage(stage, chunk));
    parameters += slice.layers * model.layer_parameters();
    if (slice.embedding)
      parameters += model.embedding_parameters();
    if (slice.logits)
      parameters += model.logits_parameters();
  }
  return parameters / plan.tp;
}

PipelineSchedule schedule_for(const ModelSpec& model, const ParallelPlan& plan,
                              const platforms::ClusterSpec& cluster, const CostModel& cost) {
  ScheduleOptions options;
  options.virtual_stages = plan.virtual_stages;
  if (plan.schedule == ScheduleKind::zb_v) {
    const PipelineSchedule layout = layout_of(plan);
    ZbvInputs& in = options.zbv;
    in.forward_s = in.backward_input_s = in.backward_weight_s = 0;
    const int stages = layout.virtual_stages();
    for (int vs = 0; vs < stages; ++vs) {
      const StageSlice slice = virtual_stage_slice(model, plan, vs);
      const auto& gpu = cluster.gpu_of(plan.gpu_of(layout.rank_of(vs), 0, 0));
      in.forward_s += cost.forward(slice, gpu).duration_s / stages;
      in.backward_input_s += cost.backward_input(slice, gpu).duration_s / stages;
      in.backward_weight_s += cost.backward_weight(slice, gpu).duration_s / stages;
    }
    in.comm_s = plan.pp > 1 ? transfer_time_s(cluster, plan.gpu_of(0, 0, 0), plan.gpu_of(1, 0, 0),
                                              pipeline_message_bytes(model, plan))
                            : 0.0;
    // zbv.py's memory approximations, per token: F stores 34h + 5as, W
    // frees 32h, B the rest.
    in.forward_memory = 34.0 * model.hidden + 5.0 * model.heads * model.seq_len;
    in.weight_memory = -32.0 * model.hidden;
  }
  return make_schedule(plan.schedule, plan.pp, plan.micro_batches(), options);
}

TaskGraph build_iteration(const ModelSpec& model, const ParallelPlan& plan,
                          const platforms::ClusterSpec& cluster, const CostModel& cost) {
  if (plan.gpu_count() != cluster.gpu_count())
    throw std::invalid_argument("plan and cluster GPU counts differ");
  if (plan.pp <= 0 || plan.virtual_stages <= 0 || model.layers % (plan.pp * plan.virtual_stages) != 0)
    throw std::invalid_argument("layers not divisible by pp x virtual_stages");
  if (plan.micro_batches() <= 0)
    throw std::invalid_argument("no micro-batches");
  if (const auto problems = schedule_problems(plan, model.layers); !problems.empty()) {
    std::string text = "schedule cannot run:";
    for (const auto& p : problems)
      text += " plan." + p.key + ": " + p.message + ";";
    throw std::invalid_argument(text);
  }
  return Builder(model, plan, cluster, cost).build();
}

}  // namespace trainsim::workloads
