#include "workloads/iteration_builder.hpp"

#include <stdexcept>

namespace trainsim::workloads {
namespace {

StageSlice slice_of(const ModelSpec& model, const ParallelPlan& plan, int stage) {
  return {.layers = model.layers / plan.pp, .embedding = stage == 0, .logits = stage == plan.pp - 1};
}

// Number of b x s x h all-reduces a TP group runs inside one op: two per
// layer in the forward (after attention and after the MLP), two per layer in
// the backward, two more per layer when the backward recomputes the forward.
int tp_allreduces(const ModelSpec& model, const ParallelPlan& plan, PipeOpKind kind) {
  const int layers = model.layers / plan.pp;
  if (kind == PipeOpKind::forward)
    return 2 * layers;
  return (plan.recompute == Recompute::full ? 4 : 2) * layers;
}

class Builder {
 public:
  Builder(const ModelSpec& model, const ParallelPlan& plan, const platforms::ClusterSpec& cluster,
          const CostModel& cost)
      : model_(model), plan_(plan), cluster_(cluster), cost_(cost) {}

  TaskGraph build() {
    graph_.gpu_count = plan_.gpu_count();
    const PipelineSchedule schedule = make_schedule(plan_.schedule, plan_.pp, plan_.micro_batches());
    const int m = plan_.micro_batches();
    // done_[gpu][op]: the task after which the op's output is ready (its TP
    // all-reduce when tp > 1, else the compute task).
    forward_done_.assign(static_cast<std::size_t>(plan_.gpu_count()), std::vector<TaskId>(m));
    backward_done_ = forward_done_;
    forward_task_ = forward_done_;
    backward_task_ = forward_done_;
    last_.assign(static_cast<std::size_t>(plan_.gpu_count()), kNone);

    for (int dp = 0; dp < plan_.dp; ++dp)
      for (int stage = 0; stage < plan_.pp; ++stage)
        add_stage_ops(schedule, dp, stage);
    for (int dp = 0; dp < plan_.dp; ++dp)
      for (int stage = 0; stage < plan_.pp; ++stage)
        add_pipeline_sends(dp, stage);
    for (int stage = 0; stage < plan_.pp; ++stage)
      for (int tp = 0; tp < plan_.tp; ++tp)
        add_gradient_sync_and_step(stage, tp);
    return std::move(graph_);
  }

 private:
  static constexpr TaskId kNone = static_cast<TaskId>(-1);

  std::size_t idx(int gpu) const { return static_cast<std::size_t>(gpu); }

  void add_stage_ops(const PipelineSchedule& schedule, int dp, int stage) {
    std::vector<int> tp_group;
    for (int tp = 0; tp < plan_.tp; ++tp)
      tp_group.push_back(plan_.gpu_of(stage, dp, tp));
    const int group = plan_.tp > 1 ? graph_.add_group(tp_group) : -1;
    const StageSlice slice = slice_of(model_, plan_, stage);

    for (const PipeOp& op : schedule.per_rank[static_cast<std::size_t>(stage)]) {
      const bool forward = op.kind == PipeOpKind::forward;
      std::vector<TaskId> computes;
      for (int gpu : tp_group) {
        const OpCost cost = forward ? cost_.forward(slice, cluster_.gpu_of(gpu))
                                    : cost_.backward(slice, cluster_.gpu_of(gpu));
        Task task{.kind = forward ? TaskKind::forward : TaskKind::backward,
                  .gpu = gpu,
                  .stage = stage,
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
      if (group >= 0) {
        Task collective{.kind = TaskKind::collective,
                        .comm = CommKind::tp,
                        .op = CollectiveOp::all_reduce,
                        .group = group,
                        .stage = stage,
                        .micro_batch = op.micro_batch,
                        .bytes = tp_allreduce_bytes(model_, plan_),
                        .fold = tp_allreduces(model_, plan_, op.kind)};
        const TaskId id = graph_.add(collective);
        for (TaskId c : computes)
          graph_.depend(c, id);
        done.assign(computes.size(), id);
      }
      for (std::size_t k = 0; k < tp_group.size(); ++k) {
        const int gpu = tp_group[k];
        const auto mb = static_cast<std::size_t>(op.micro_batch);
        (forward ? forward_done_ : backward_done_)[idx(gpu)][mb] = done[k];
        (forward ? forward_task_ : backward_task_)[idx(gpu)][mb] = computes[k];
        last_[idx(gpu)] = done[k];
      }
    }
  }

  // Activations flow down the pipeline, gradients flow back up; each TP rank
  // sends its share to the same TP rank of the neighbouring stage.
  void add_pipeline_sends(int dp, int stage) {
    const double bytes = pipeline_message_bytes(model_, plan_);
    for (int tp = 0; tp < plan_.tp; ++tp) {
      const int gpu = plan_.gpu_of(stage, dp, tp);
      for (int mb = 0; mb < plan_.micro_batches(); ++mb) {
        const auto m = static_cast<std::size_t>(mb);
        if (stage + 1 < plan_.pp) {
          const int next = plan_.gpu_of(stage + 1, dp, tp);
          add_send(gpu, next, stage, mb, bytes, forward_done_[idx(gpu)][m], forward_task_[idx(next)][m]);
        }
        if (stage > 0) {
          const int prev = plan_.gpu_of(stage - 1, dp, tp);
          add_send(gpu, prev, stage, mb, bytes, backward_done_[idx(gpu)][m], backward_task_[idx(prev)][m]);
        }
      }
    }
  }

  void add_send(int from, int to, int stage, int mb, double bytes, TaskId after, TaskId before) {
    Task send{.kind = TaskKind::send,
              .comm = CommKind::pp,
              .gpu = from,
              .peer = to,
              .stage = stage,
              .micro_batch = mb,
              .bytes = bytes};
    const TaskId id = graph_.add(send);
    graph_.depend(after, id);
    graph_.depend(id, before);
  }

  // The DP group of (stage, tp rank) all-reduces its gradients once every
  // replica has finished its last backward; each GPU then steps its
  // optimizer.
  void add_gradient_sync_and_step(int stage, int tp) {
    std::vector<int> members;
    for (int dp = 0; dp < plan_.dp; ++dp)
      members.push_back(plan_.gpu_of(stage, dp, tp));
    const double parameters = stage_parameters_per_gpu(model_, plan_, stage);
    TaskId sync = kNone;
    if (plan_.dp > 1) {
      Task collective{.kind = TaskKind::collective,
                      .comm = CommKind::dp,
                      .op = CollectiveOp::all_reduce,
                      .group = graph_.add_group(members),
                      .stage = stage,
                      .bytes = parameters * plan_.grad_bytes};
      sync = graph_.add(collective);
      for (int gpu : members)
        graph_.depend(last_[idx(gpu)], sync);
    }
    for (int gpu : members) {
      const OpCost cost = cost_.optimizer(parameters, cluster_.gpu_of(gpu));
      Task step{.kind = TaskKind::optimizer, .gpu = gpu, .stage = stage, .duration_s = cost.duration_s};
      const TaskId id = graph_.add(step);
      graph_.depend(sync != kNone ? sync : last_[idx(gpu)], id);
      last_[idx(gpu)] = id;
    }
  }

  const ModelSpec& model_;
  const ParallelPlan& plan_;
  const platforms::ClusterSpec& cluster_;
  const CostModel& cost_;
  TaskGraph graph_;
  std::vector<std::vector<TaskId>> forward_done_, backward_done_, forward_task_, backward_task_;
  std::vector<TaskId> last_;
};

}  // namespace

double pipeline_message_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  return 2.0 * plan.micro_batch_size * model.seq_len * model.hidden / plan.tp;
}

double tp_allreduce_bytes(const ModelSpec& model, const ParallelPlan& plan) {
  return 2.0 * plan.micro_batch_size * model.seq_len * model.hidden;
}

double stage_parameters_per_gpu(const ModelSpec& model, const ParallelPlan& plan, int stage) {
  double parameters = (model.layers / plan.pp) * model.layer_parameters();
  if (stage == 0)
    parameters += model.embedding_parameters();
  if (stage == plan.pp - 1)
    parameters += model.logits_parameters();
  return parameters / plan.tp;
}

TaskGraph build_iteration(const ModelSpec& model, const ParallelPlan& plan,
                          const platforms::ClusterSpec& cluster, const CostModel& cost) {
  if (plan.gpu_count() != cluster.gpu_count())
    throw std::invalid_argument("plan and cluster GPU counts differ");
  if (plan.pp <= 0 || model.layers % plan.pp != 0)
    throw std::invalid_argument("layers not divisible by pp");
  if (plan.micro_batches() <= 0)
    throw std::invalid_argument("no micro-batches");
  return Builder(model, plan, cluster, cost).build();
}

}  // namespace trainsim::workloads
