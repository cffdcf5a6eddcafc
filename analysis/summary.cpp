#include "analysis/summary.hpp"

#include "analysis/fold_classes.hpp"
#include "analysis/intervals.hpp"
#include "analysis/memory_curve.hpp"
#include "analysis/mfu_definitions.hpp"

namespace trainsim::analysis {

Summary summarize(const workloads::TaskGraph& graph, const Timeline& timeline,
                  const workloads::ModelSpec& model, const workloads::ParallelPlan& plan,
                  const platforms::ClusterSpec& cluster) {
  return summarize(graph, timeline, model, plan, cluster,
                   GpuClasses::of(graph, timeline, static_cast<std::size_t>(graph.gpu_count)));
}

Summary summarize(const workloads::TaskGraph& graph, const Timeline& timeline,
                  const workloads::ModelSpec& model, const workloads::ParallelPlan& plan,
                  const platforms::ClusterSpec& cluster, const GpuClasses& classes) {
  if (classes.size() != static_cast<std::size_t>(graph.gpu_count))
    return summarize(graph, timeline, model, plan, cluster);
  return summarize(graph, timeline, model, plan, cluster, classes, memory_curves(graph, timeline, classes));
}

Summary summarize(const workloads::TaskGraph& graph, const Timeline& timeline,
                  const workloads::ModelSpec& model, const workloads::ParallelPlan& plan,
                  const platforms::ClusterSpec& cluster, const GpuClasses& classes,
                  const MemoryCurves& memory) {
  const auto gpus = static_cast<std::size_t>(graph.gpu_count);
  if (classes.size() != gpus || memory.gpus.size() != gpus)
    return summarize(graph, timeline, model, plan, cluster);
  Summary s;
  s.iteration_time_s = timeline.end_s;
  s.task_count = graph.size();
  s.record_count = timeline.records.size();
  s.tokens_per_iteration = double(plan.global_batch_size) * model.seq_len;
  s.tokens_per_s = s.iteration_time_s > 0 ? s.tokens_per_iteration / s.iteration_time_s : 0;

  std::vector<std::vector<Interval>> compute(gpus), comm(gpus);
  s.gpus.resize(gpus);
  // Per GPU orbit (analysis/fold_classes.hpp): an image GPU's figures are
  // its representative's.
  classes.for_each_record([&](const TaskRecord& r) {
    const auto& task = graph[r.task];
    const auto g = static_cast<std::size_t>(r.gpu);
    const bool on_rep = classes.is_representative(g);
    if (r.stream == Stream::compute) {
      if (!on_rep)
        return;
      compute[g].emplace_back(r.start_s, r.end_s);
      s.gpus[g].model_flops += task.model_flops;
      s.gpus[g].hardware_flops += task.hardware_flops;
    } else {
      if (on_rep)
        comm[g].emplace_back(r.start_s, r.end_s);
      if (task.kind == workloads::TaskKind::send &&
          classes.is_representative(static_cast<std::size_t>(task.peer)))
        comm[static_cast<std::size_t>(task.peer)].emplace_back(r.start_s, r.end_s);
    }
  });

  const double t = s.iteration_time_s;
  s.stages.resize(static_cast<std::size_t>(plan.pp));
  for (std::size_t g = 0; g < gpus; ++g) {
    auto& u = s.gpus[g];
    const int gpu = static_cast<int>(g);
    if (const std::size_t rep = classes.representative(g); rep != g) {
      u = s.gpus[rep];
    } else {
      const auto c = merge_intervals(std::move(compute[g]));
      const auto m = merge_intervals(std::move(comm[g]));
      u.compute_s = total_length(c);
      u.communication_s = total_length(m);
      u.overlap_s = overlap_length(c, m);
      u.exposed_comm_s = u.communication_s - u.overlap_s;
      u.idle_s = std::max(0.0, t - u.compute_s - u.exposed_comm_s);
      u.achieved_tflops = t > 0 ? u.model_flops / t / 1e12 : 0;
      u.achieved_hardware_tflops = t > 0 ? u.hardware_flops / t / 1e12 : 0;
    }
    u.gpu = gpu;
    u.node = cluster.locate(gpu).node;
    u.stage = plan.pp_rank_of(gpu);
    u.gpu_type = cluster.gpu_of(gpu).name;

    s.model_flops += u.model_flops;
    s.hardware_flops += u.hardware_flops;
    s.peak_flops += cluster.gpu_of(gpu).peak_bf16_flops;
    s.peak_fp8_flops += cluster.gpu_of(gpu).peak_fp8_flops;
    if (t > 0) {
      auto& st = s.stages[static_cast<std::size_t>(u.stage)];
      st.compute_fraction += u.compute_s / t;
      st.exposed_comm_fraction += u.exposed_comm_s / t;
      st.bubble_fraction += u.idle_s / t;
    }
  }
  for (std::size_t g = 0; g < gpus; ++g) {
    auto& u = s.gpus[g];
    const auto& curve = memory.gpus[g];
    u.peak_memory_bytes = curve.peak_bytes;
    u.peak_memory_time_s = curve.peak_time_s;
    u.memory_at_peak = curve.at_peak;
    u.memory_capacity_bytes = cluster.gpu_of(static_cast<int>(g)).hbm_bytes;
    if (u.peak_memory_bytes > u.memory_capacity_bytes)
      s.fits_in_memory = false;
  }
  s.peak_memory_bytes = memory.peak_bytes;
  s.peak_memory_gpu = memory.peak_gpu;

  const double per_stage = double(plan.dp) * plan.tp * plan.cp;
  for (std::size_t i = 0; i < s.stages.size(); ++i) {
    auto& st = s.stages[i];
    st.stage = static_cast<int>(i);
    st.compute_fraction /= per_stage;
    st.exposed_comm_fraction /= per_stage;
    st.bubble_fraction /= per_stage;
    s.compute_fraction += st.compute_fraction / plan.pp;
    s.exposed_comm_fraction += st.exposed_comm_fraction / plan.pp;
    s.bubble_fraction += st.bubble_fraction / plan.pp;
  }
  if (t > 0 && s.peak_flops > 0) {
    s.mfu = s.model_flops / (t * s.peak_flops);
    s.hfu = s.hardware_flops / (t * s.peak_flops);
    s.tflops_per_gpu = s.model_flops / t / 1e12 / double(gpus);
  }
  if (t > 0 && plan.fp8() && s.peak_fp8_flops > 0)
    s.mfu_fp8_peak = s.model_flops / (t * s.peak_fp8_flops);
  if (t > 0 && s.peak_flops > 0) {
    const auto mfu_of = [&](MfuDefinition d) {
      return model_flops_per_token(model, d) * s.tokens_per_iteration / (t * s.peak_flops);
    };
    s.mfu_6n = mfu_of(MfuDefinition::six_n);
    s.mfu_palm = mfu_of(MfuDefinition::palm);
    s.mfu_nvidia = mfu_of(MfuDefinition::nvidia);
  }
  return s;
}

}  // namespace trainsim::analysis
