#include <nlohmann/json.hpp>
#include <ostream>

#include "analysis/reporters.hpp"
#include "trainsim_version.hpp"

namespace trainsim::analysis {
namespace {

nlohmann::ordered_json memory_breakdown(const workloads::MemoryBreakdown& b) {
  nlohmann::ordered_json j;
  for (int k = 0; k < workloads::kMemoryKindCount; ++k)
    j[std::string(to_string(static_cast<workloads::MemoryKind>(k))) + "_bytes"] = b.bytes[k];
  return j;
}

}  // namespace

void write_summary_json(std::ostream& out, const RunContext& run, const Summary& s) {
  using nlohmann::ordered_json;
  ordered_json j;
  j["schema"] = kSummarySchema;
  j["trainsim_version"] = version_string;
  j["scenario"] = run.scenario_name;

  ordered_json groups = ordered_json::array();
  for (const auto& g : run.cluster.groups)
    groups.push_back({{"gpu", g.gpu.name},
                      {"nodes", g.nodes},
                      {"gpus_per_node", g.gpus_per_node},
                      {"nvlink_bandwidth_Bps", g.nvlink.bandwidth_Bps},
                      {"nvlink_latency_s", g.nvlink.latency_s},
                      {"nic_bandwidth_Bps", g.nic.bandwidth_Bps},
                      {"nic_latency_s", g.nic.latency_s}});
  j["cluster"] = {{"gpus", run.cluster.gpu_count()},
                  {"nodes", run.cluster.node_count()},
                  {"groups", groups},
                  {"fabric", to_string(run.cluster.fabric.topology)}};
  j["model"] = {{"name", run.model.name},
                {"layers", run.model.layers},
                {"hidden", run.model.hidden},
                {"heads", run.model.heads},
                {"seq_len", run.model.seq_len},
                {"vocab", run.model.vocab},
                {"parameters", run.model.parameter_count()}};
  j["plan"] = {{"dp", run.plan.dp},
               {"tp", run.plan.tp},
               {"pp", run.plan.pp},
               {"micro_batch_size", run.plan.micro_batch_size},
               {"global_batch_size", run.plan.global_batch_size},
               {"micro_batches", run.plan.micro_batches()},
               {"schedule", to_string(run.plan.schedule)},
               {"recompute", to_string(run.plan.recompute)},
               {"context_parallel", run.plan.cp},
               {"sequence_parallel", run.plan.sequence_parallel},
               {"zero_stage", run.plan.zero_stage},
               {"overlap_grad_reduce", run.plan.overlap_grad_reduce},
               {"grad_bucket_size_bytes", run.plan.grad_bucket_size_bytes()}};

  j["iteration_time_s"] = s.iteration_time_s;
  j["tokens_per_iteration"] = s.tokens_per_iteration;
  j["tokens_per_s"] = s.tokens_per_s;
  j["model_flops_per_iteration"] = s.model_flops;
  j["hardware_flops_per_iteration"] = s.hardware_flops;
  j["tflops_per_gpu"] = s.tflops_per_gpu;
  j["mfu"] = s.mfu;
  j["hfu"] = s.hfu;
  j["compute_fraction"] = s.compute_fraction;
  j["exposed_comm_fraction"] = s.exposed_comm_fraction;
  j["bubble_fraction"] = s.bubble_fraction;
  j["peak_memory_bytes"] = s.peak_memory_bytes;
  j["peak_memory_gpu"] = s.peak_memory_gpu;
  j["fits_in_memory"] = s.fits_in_memory;
  j["task_count"] = s.task_count;

  ordered_json stages = ordered_json::array();
  for (const auto& st : s.stages)
    stages.push_back({{"stage", st.stage},
                      {"bubble_fraction", st.bubble_fraction},
                      {"compute_fraction", st.compute_fraction},
                      {"exposed_comm_fraction", st.exposed_comm_fraction}});
  j["stages"] = stages;

  ordered_json gpus = ordered_json::array();
  for (const auto& u : s.gpus)
    gpus.push_back({{"gpu", u.gpu},
                    {"node", u.node},
                    {"stage", u.stage},
                    {"type", u.gpu_type},
                    {"compute_s", u.compute_s},
                    {"communication_s", u.communication_s},
                    {"overlap_s", u.overlap_s},
                    {"exposed_comm_s", u.exposed_comm_s},
                    {"idle_s", u.idle_s},
                    {"achieved_tflops", u.achieved_tflops},
                    {"peak_memory_bytes", u.peak_memory_bytes},
                    {"peak_memory_time_s", u.peak_memory_time_s},
                    {"memory_capacity_bytes", u.memory_capacity_bytes},
                    {"memory_at_peak", memory_breakdown(u.memory_at_peak)}});
  j["gpus"] = gpus;
  out << j.dump(2) << '\n';
}

}  // namespace trainsim::analysis
