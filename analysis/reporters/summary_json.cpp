#include <nlohmann/json.hpp>

#include <cstring>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "analysis/reporters/json_numbers.hpp"
#include "analysis/reporters/reporters.hpp"
#include "trainsim_version.hpp"
#include "workloads/expert_routing.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::analysis {
namespace {

using nlohmann::ordered_json;

ordered_json by_cause(const CauseSeconds& seconds, const std::vector<BubbleCause>& causes) {
  ordered_json j = ordered_json::object();
  for (BubbleCause c : causes)
    j[std::string(to_string(c))] = seconds[static_cast<std::size_t>(c)];
  return j;
}

ordered_json by_comm_kind(const CommSeconds& seconds) {
  ordered_json j = ordered_json::object();
  for (std::size_t k = 0; k < kCommKinds.size(); ++k)
    j[std::string(workloads::to_string(kCommKinds[k]))] = seconds[k];
  return j;
}

ordered_json blames(const std::vector<Blame>& list) {
  ordered_json a = ordered_json::array();
  for (const auto& b : list)
    a.push_back({{"name", b.name}, {"seconds", b.seconds}, {"fraction", b.fraction}});
  return a;
}

// The figures of one GPU written to a JSON object, in order.
class JsonFigures {
 public:
  explicit JsonFigures(ordered_json& object) : object_(object) {}
  // The key is `name` followed by `suffix`.
  template <class T>
  void put(std::string_view name, const T& value, std::string_view suffix = {}) {
    object_[std::string(name).append(suffix)] = value;
  }
  template <class Fill>
  void nested(std::string_view name, Fill&& fill) {
    auto& inner = object_[std::string(name)] = ordered_json::object();
    JsonFigures figures(inner);
    fill(figures);
  }

 private:
  ordered_json& object_;
};

// The same figures as bytes: every name, value (its bits) and nesting, so
// that two GPUs with the same bytes write the same JSON text. Numbers are
// arithmetic values, texts strings.
class FigureBytes {
 public:
  explicit FigureBytes(std::string& bytes) : bytes_(bytes) {}
  template <class T>
  void put(std::string_view name, const T& value, std::string_view suffix = {}) {
    add_text(name);
    add_text(suffix);
    if constexpr (std::is_arithmetic_v<T>) {
      bytes_.push_back('n');
      char raw[sizeof(T)];
      std::memcpy(raw, &value, sizeof(T));
      bytes_.append(raw, sizeof(T));
    } else {
      bytes_.push_back('t');
      add_text(value);
    }
  }
  template <class Fill>
  void nested(std::string_view name, Fill&& fill) {
    add_text(name);
    bytes_.push_back('{');
    fill(*this);
    bytes_.push_back('}');
  }

 private:
  void add_text(std::string_view text) {
    const std::size_t n = text.size();
    char raw[sizeof(n)];
    std::memcpy(raw, &n, sizeof(n));
    bytes_.append(raw, sizeof(n));
    bytes_.append(text);
  }
  std::string& bytes_;
};

template <class Figures>
void memory_breakdown(Figures& f, const workloads::MemoryBreakdown& b) {
  for (int k = 0; k < workloads::kMemoryKindCount; ++k)
    f.put(to_string(static_cast<workloads::MemoryKind>(k)), b.bytes[k], "_bytes");
}

template <class Figures>
void by_cause(Figures& f, const CauseSeconds& seconds, const std::vector<BubbleCause>& causes) {
  for (BubbleCause c : causes)
    f.put(to_string(c), seconds[static_cast<std::size_t>(c)]);
}

template <class Figures>
void by_comm_kind(Figures& f, const CommSeconds& seconds) {
  for (std::size_t k = 0; k < kCommKinds.size(); ++k)
    f.put(workloads::to_string(kCommKinds[k]), seconds[k]);
}

// One GPU's figures, everything but its rank and node: GPUs with the same
// text here are grouped in `gpu_groups`. Written to JsonFigures (the
// summary's object) or FigureBytes (the key that finds a GPU's group
// without writing its text).
template <class Figures>
void gpu_figures(Figures& f, const GpuUsage& u, const Report& report, double t) {
  const auto g = static_cast<std::size_t>(u.gpu);
  f.put("stage", u.stage);
  f.put("type", u.gpu_type);
  f.put("compute_s", u.compute_s);
  f.put("communication_s", u.communication_s);
  f.put("overlap_s", u.overlap_s);
  f.put("exposed_comm_s", u.exposed_comm_s);
  f.put("idle_s", u.idle_s);
  f.put("achieved_tflops", u.achieved_tflops);
  f.put("achieved_hardware_tflops", u.achieved_hardware_tflops);
  f.put("peak_memory_bytes", u.peak_memory_bytes);
  f.put("peak_memory_time_s", u.peak_memory_time_s);
  f.put("memory_capacity_bytes", u.memory_capacity_bytes);
  f.nested("memory_at_peak", [&](Figures& in) { memory_breakdown(in, u.memory_at_peak); });
  if (g < report.bubbles.gpus.size()) {
    const auto& b = report.bubbles.gpus[g];
    f.put("forward_backward_s", b.forward_backward_s);
    f.put("optimizer_s", b.optimizer_s);
    f.put("lost_s", b.lost_s);
    f.nested("lost_by_cause_s",
             [&](Figures& in) { by_cause(in, b.cause_s, reported_causes(report.bubbles)); });
    f.nested("idle_by_cause_s",
             [&](Figures& in) { by_cause(in, b.idle_part_s, reported_causes(report.bubbles)); });
  }
  if (g < report.utilization.gpus.size()) {
    const auto& v = report.utilization.gpus[g];
    f.put("compute_busy_fraction", t > 0 ? v.compute_busy_s / t : 0);
    f.put("comm_busy_fraction", t > 0 ? v.comm_busy_s / t : 0);
    f.nested("comm_busy_by_kind_s", [&](Figures& in) { by_comm_kind(in, v.comm_busy_by_kind_s); });
    f.nested("exposed_comm_by_kind_s", [&](Figures& in) { by_comm_kind(in, v.exposed_by_kind_s); });
  }
  if (g < report.memory.gpus.size()) {
    const auto& m = report.memory.gpus[g];
    f.nested("memory", [&](Figures& in) {
      in.put("resident_bytes", m.resident_bytes);
      in.put("peak_bytes", m.peak_bytes);
      in.put("peak_time_s", m.peak_time_s);
      in.put("capacity_bytes", m.capacity_bytes);
    });
  }
  if (g < report.energy.gpus.size()) {
    const auto& en = report.energy.gpus[g];
    f.put("energy_J", en.energy_J);
    f.put("average_power_W", en.average_power_W);
    f.put("idle_energy_J", en.idle_energy_J);
  }
}

// Ascending ranks as [first, last] runs: 0,1,2,3,8,9 -> [[0,3],[8,9]].
void add_rank(ordered_json& ranges, int rank) {
  if (!ranges.empty() && ranges.back()[1].get<int>() + 1 == rank)
    ranges.back()[1] = rank;
  else
    ranges.push_back({rank, rank});
}

}  // namespace

void write_summary_json(std::ostream& out, const RunContext& run, const Report& report,
                        std::size_t gpu_list_max) {
  const Summary& s = report.summary;
  const double t = s.iteration_time_s;
  const double gpu_time = t * static_cast<double>(s.gpus.size());
  ordered_json j;
  j["schema"] = kSummarySchema;
  j["trainsim_version"] = version_string;
  j["scenario"] = run.scenario_name;

  ordered_json groups = ordered_json::array();
  for (const auto& g : run.cluster.groups) {
    groups.push_back({{"gpu", g.gpu.name},
                      {"nodes", g.nodes},
                      {"gpus_per_node", g.gpus_per_node},
                      {"nvlink_bandwidth_Bps", g.nvlink.bandwidth_Bps},
                      {"nvlink_latency_s", g.nvlink.latency_s},
                      {"nic_bandwidth_Bps", g.nic.bandwidth_Bps},
                      {"nic_latency_s", g.nic.latency_s},
                      {"node_shape", to_string(g.shape)},
                      {"nics_per_node", g.nics_per_node}});
    // Only where NVLink reaches beyond the node, so that other summaries keep their bytes.
    if (g.nodes_per_domain() > 1)
      groups.back()["gpus_per_nvlink_domain"] = g.gpus_per_domain();
  }
  j["cluster"] = {{"gpus", run.cluster.gpu_count()},
                  {"nodes", run.cluster.node_count()},
                  {"groups", groups},
                  {"fabric", to_string(run.cluster.fabric.topology)},
                  {"name", run.cluster.name},
                  {"technology", to_string(run.cluster.fabric.technology)}};
  j["model"] = {{"name", run.model.name},
                {"layers", run.model.layers},
                {"hidden", run.model.hidden},
                {"heads", run.model.heads},
                {"seq_len", run.model.seq_len},
                {"vocab", run.model.vocab},
                {"parameters", run.model.parameter_count()}};
  if (run.model.is_moe()) {
    const auto& moe = run.model.moe;
    j["model"]["active_parameters"] = run.model.active_parameter_count();
    j["model"]["moe"] = {{"experts", moe.experts},
                         {"top_k", moe.top_k},
                         {"expert_ffn_hidden", moe.expert_ffn_hidden},
                         {"shared_experts", moe.shared_experts},
                         {"moe_layer_freq", moe.layer_freq},
                         {"first_dense_layers", moe.first_dense_layers},
                         {"moe_layers", run.model.moe_layers_in(0, run.model.layers)},
                         {"capacity_factor", moe.capacity_factor}};
    // Only under node-limited routing (other summaries keep their keys).
    if (moe.max_nodes_per_token > 0)
      j["model"]["moe"]["max_nodes_per_token"] = moe.max_nodes_per_token;
    // Only under group-limited routing (other summaries keep their keys).
    if (moe.router_num_groups > 0) {
      j["model"]["moe"]["router_num_groups"] = moe.router_num_groups;
      j["model"]["moe"]["router_group_topk"] = moe.router_group_topk;
    }
    // Only when routing is not balanced (other summaries keep their keys).
    if (!moe.routing.balanced()) {
      const auto& r = moe.routing;
      const auto fig = workloads::routing_figures(run.model, run.plan.ep);
      ordered_json routing = {{"kind", workloads::to_string(r.kind)}};
      if (r.kind == workloads::RoutingKind::zipf || r.kind == workloads::RoutingKind::dirichlet) {
        routing["skew"] = r.skew;
        routing["seed"] = r.seed;
      }
      if (r.kind == workloads::RoutingKind::measured)
        routing["file"] = r.file;
      routing["dropless"] = moe.dropless;
      routing["busiest_expert_factor"] = fig.busiest_expert_factor;
      routing["busiest_rank_factor"] = fig.busiest_rank_factor;
      routing["mean_busiest_rank_factor"] = fig.mean_busiest_rank_factor;
      routing["dropped_fraction"] = fig.dropped_fraction;
      j["model"]["moe"]["routing"] = routing;
    }
  }
  // Attention other than plain multi-head, and multi-token prediction: only
  // for the models that have them, so that other summaries keep their keys.
  if (run.model.is_mla()) {
    const auto& a = run.model.mla;
    j["model"]["attention"] = "mla";
    j["model"]["mla"] = {{"q_lora_rank", a.q_lora_rank},
                         {"kv_lora_rank", a.kv_lora_rank},
                         {"qk_nope_head_dim", a.qk_nope_head_dim},
                         {"qk_rope_head_dim", a.qk_rope_head_dim},
                         {"v_head_dim", a.v_head_dim}};
  }
  if (run.model.head_dim > 0)
    j["model"]["head_dim"] = run.model.head_dim;
  if (run.model.qk_norm)
    j["model"]["qk_norm"] = true;
  if (run.model.mtp_depth > 0) {
    j["model"]["mtp_depth"] = run.model.mtp_depth;
    j["model"]["mtp_parameters"] = run.model.mtp_parameters();
  }
  j["plan"] = {{"dp", run.plan.dp},
               {"tp", run.plan.tp},
               {"pp", run.plan.pp},
               {"micro_batch_size", run.plan.micro_batch_size},
               {"global_batch_size", run.plan.global_batch_size},
               {"micro_batches", run.plan.micro_batches()},
               {"schedule", to_string(run.plan.schedule)},
               {"recompute", to_string(run.plan.recompute)},
               {"context_parallel", run.plan.cp},
               {"expert_parallel", run.plan.ep},
               {"sequence_parallel", run.plan.sequence_parallel},
               {"tp_comm_overlap", run.plan.torch_async_tp() ? ordered_json("torch_async")
                                                             : ordered_json(run.plan.userbuffers())},
               {"zero_stage", run.plan.zero_stage},
               {"framework", to_string(run.plan.framework)},
               {"overlap_grad_reduce", run.plan.overlap_grad_reduce},
               {"grad_bucket_size_bytes", run.plan.grad_bucket_size_bytes()}};
  // Only for DeepEP dispatch (all_to_all summaries keep their keys).
  if (run.plan.moe_dispatcher != workloads::MoeDispatcher::all_to_all)
    j["plan"]["moe_dispatcher"] = to_string(run.plan.moe_dispatcher);
  if (run.plan.moe_a2a_overlap)
    j["plan"]["moe_a2a_overlap"] = true;
  // Only when the experts fold over TP (others keep their keys).
  if (run.plan.expert_tp_folded())
    j["plan"]["expert_tensor_parallel"] = run.plan.expert_tp();
  // Only with a pipeline (the others send nothing between stages).
  if (run.plan.pp > 1)
    j["plan"]["p2p"] = to_string(workloads::resolved_p2p(run.plan));
  // Only when they differ from the defaults (other summaries keep their keys).
  if (!run.plan.reshard_after_forward)
    j["plan"]["reshard_after_forward"] = false;
  if (run.plan.grad_reduce_per_step)
    j["plan"]["grad_reduce"] = "per_step";
  if (run.plan.overlap_param_gather)
    j["plan"]["overlap_param_gather"] = true;
  // Only when the plan names them (others keep their keys; an empty list
  // with recompute selective is core_attn).
  if (!run.plan.recompute_modules.empty()) {
    std::vector<std::string> modules;
    for (auto module : run.plan.recompute_modules)
      modules.emplace_back(to_string(module));
    j["plan"]["recompute_modules"] = modules;
  }
  // Only under hybrid sharding, so that other summaries keep their keys.
  if (run.plan.hybrid_sharded())
    j["plan"]["dp_shard"] = run.plan.zero_shard_size();
  // Only for FP8 plans (BF16 summaries keep their keys).
  if (run.plan.fp8()) {
    j["plan"]["precision"] = to_string(run.plan.precision);
    j["plan"]["fp8_recipe"] = to_string(run.plan.fp8_recipe);
    j["plan"]["fp8_param_gather"] = run.plan.fp8_param_gather;
  }
  // The partition actually run: every virtual stage's layers and every
  // replica's micro-batches, given (uneven) or derived (even).
  {
    std::vector<int> stage_layers, dp_micro_batches;
    for (int vs = 0; vs < run.plan.model_stages(); ++vs)
      stage_layers.push_back(run.plan.layers_of(vs, run.model.layers));
    for (int d = 0; d < run.plan.dp; ++d)
      dp_micro_batches.push_back(run.plan.micro_batches_of(d));
    j["plan"]["stage_layers"] = stage_layers;
    j["plan"]["uneven_stage_layers"] = !run.plan.stage_layers.empty();
    j["plan"]["dp_micro_batches"] = dp_micro_batches;
    j["plan"]["uneven_dp_micro_batches"] = !run.plan.dp_micro_batches.empty();
  }

  if (run.balance)
    j["balance"] = to_json(*run.balance);
  j["iteration_time_s"] = s.iteration_time_s;
  j["tokens_per_iteration"] = s.tokens_per_iteration;
  j["tokens_per_s"] = s.tokens_per_s;
  j["model_flops_per_iteration"] = s.model_flops;
  j["hardware_flops_per_iteration"] = s.hardware_flops;
  j["tflops_per_gpu"] = s.tflops_per_gpu;
  j["mfu"] = s.mfu;
  j["hfu"] = s.hfu;
  if (run.plan.fp8())
    j["mfu_fp8_peak"] = s.mfu_fp8_peak;
  // The same run under the definitions publications use (a Chakra trace has
  // no model shape to count them from).
  if (run.model.layers > 0) {
    j["mfu_6n"] = s.mfu_6n;
    j["mfu_palm"] = s.mfu_palm;
    j["mfu_nvidia"] = s.mfu_nvidia;
  }
  j["compute_fraction"] = s.compute_fraction;
  j["exposed_comm_fraction"] = s.exposed_comm_fraction;
  j["bubble_fraction"] = s.bubble_fraction;
  j["peak_memory_bytes"] = s.peak_memory_bytes;
  j["peak_memory_gpu"] = s.peak_memory_gpu;
  j["fits_in_memory"] = s.fits_in_memory;
  j["task_count"] = s.task_count;
  // The fold (docs/performance.md, "The fold"), when it was considered.
  if (s.fold.considered)
    j["fold"] = ordered_json{{"folded", s.fold.folded},
                             {"replicas", s.fold.replicas},
                             {"replicas_simulated", s.fold.simulated},
                             {"class_size", s.fold.class_size},
                             {"why", s.fold.folded_why},
                             {"stopped", s.fold.stopped}};
  j["hardware_tflops_per_gpu"] =
      t > 0 && !s.gpus.empty() ? s.hardware_flops / t / 1e12 / static_cast<double>(s.gpus.size()) : 0;

  ordered_json stages = ordered_json::array();
  for (const auto& st : s.stages) {
    ordered_json e = {{"stage", st.stage},
                      {"bubble_fraction", st.bubble_fraction},
                      {"compute_fraction", st.compute_fraction},
                      {"exposed_comm_fraction", st.exposed_comm_fraction}};
    if (static_cast<std::size_t>(st.stage) < report.bubbles.stages.size()) {
      const auto& b = report.bubbles.stages[static_cast<std::size_t>(st.stage)];
      e["gpus"] = b.gpus;
      e["lost_s"] = b.lost_s;
      e["lost_fraction"] = t > 0 ? b.lost_s / t : 0;
      e["idle_s"] = b.idle_s;
      e["lost_by_cause_s"] = by_cause(b.cause_s, reported_causes(report.bubbles));
      e["idle_by_cause_s"] = by_cause(b.idle_part_s, reported_causes(report.bubbles));
    }
    stages.push_back(e);
  }
  j["stages"] = stages;

  // Per GPU: every GPU up to gpu_list_max, and always the GPUs grouped by
  // identical figures (the data-parallel replicas of a symmetric plan share
  // theirs: 512 GPUs of scale-512 make 16 groups). Every GPU is also in
  // per_gpu.csv.
  ordered_json gpus = ordered_json::array();
  ordered_json gpu_groups = ordered_json::array();
  std::map<std::string, std::size_t> group_of;  // figures' text -> index in gpu_groups
  // The figures' bytes (FigureBytes) -> their object and group: a GPU whose
  // figures have the bytes of an earlier GPU's has its text, so its object
  // is built and its text written once per distinct bytes, not per GPU.
  struct Seen {
    ordered_json figures;
    std::size_t group = 0;
  };
  std::unordered_map<std::string, Seen> seen;
  std::string bytes;
  const bool list_gpus = s.gpus.size() <= gpu_list_max;
  for (const auto& u : s.gpus) {
    bytes.clear();
    FigureBytes key(bytes);
    gpu_figures(key, u, report, t);
    auto [known, first] = seen.try_emplace(bytes);
    if (first) {
      JsonFigures json(known->second.figures);
      gpu_figures(json, u, report, t);
      auto [it, added] = group_of.try_emplace(known->second.figures.dump(), gpu_groups.size());
      if (added) {
        ordered_json group = {{"gpu_count", 0}, {"gpu_ranges", ordered_json::array()}};
        group.update(known->second.figures);
        gpu_groups.push_back(std::move(group));
      }
      known->second.group = it->second;
    }
    const ordered_json& figures = known->second.figures;
    auto& group = gpu_groups[known->second.group];
    group["gpu_count"] = group["gpu_count"].get<int>() + 1;
    add_rank(group["gpu_ranges"], u.gpu);
    if (list_gpus) {
      ordered_json e = {{"gpu", u.gpu}, {"node", u.node}};
      e.update(figures);
      gpus.push_back(std::move(e));
    }
  }
  if (list_gpus)
    j["gpus"] = std::move(gpus);
  j["gpu_groups"] = std::move(gpu_groups);

  // Lost time: every GPU-second not spent in forward/backward compute.
  const auto& bub = report.bubbles;
  ordered_json causes = ordered_json::object();
  for (BubbleCause c : reported_causes(bub)) {
    const double v = bub.total_cause_s[static_cast<std::size_t>(c)];
    causes[std::string(to_string(c))] = {{"gpu_seconds", v},
                                         {"fraction_of_gpu_time", gpu_time > 0 ? v / gpu_time : 0},
                                         {"description", describe(c)}};
  }
  ordered_json top = ordered_json::array();
  for (const auto& c : top_lost_time_causes(report))
    top.push_back({{"cause", to_string(c.cause)},
                   {"fraction_of_gpu_time", c.fraction},
                   {"worst_stage", c.worst_stage},
                   {"worst_stage_fraction", c.worst_stage_fraction}});
  j["lost_time"] = {{"gpu_seconds", bub.total_lost_s},
                    {"fraction_of_gpu_time", gpu_time > 0 ? bub.total_lost_s / gpu_time : 0},
                    {"reference_iteration_time_s", bub.reference_iteration_time_s},
                    {"by_cause", causes},
                    {"top_causes", top}};
  if (bub.expert_imbalance_modelled)
    j["lost_time"]["balanced_routing_iteration_time_s"] = bub.balanced_routing_iteration_time_s;

  const auto& cp = report.critical_path;
  j["critical_path"] = {{"length_s", cp.length_s},
                        {"segments", cp.segments.size()},
                        {"by_kind", blames(cp.by_kind)},
                        {"by_gpu", blames(cp.by_gpu)},
                        {"by_link", blames(cp.by_link)}};

  const auto& ut = report.utilization;
  ordered_json exposed_fraction = ordered_json::object();
  for (std::size_t k = 0; k < kCommKinds.size(); ++k)
    exposed_fraction[std::string(workloads::to_string(kCommKinds[k]))] =
        gpu_time > 0 ? ut.exposed_by_kind_s[k] / gpu_time : 0;
  ordered_json hottest = ordered_json::array();
  for (int l : ut.hottest) {
    const auto& link = ut.links[static_cast<std::size_t>(l)];
    hottest.push_back({{"name", link.name},
                       {"bandwidth_Bps", link.bandwidth_Bps},
                       {"bytes", link.bytes},
                       {"flows", link.flows},
                       {"busy_s", link.busy_s},
                       {"busy_fraction", link.busy_fraction},
                       {"utilization", link.utilization},
                       {"peak_concurrent_flows", link.peak_concurrent_flows}});
  }
  ordered_json exposed_by_op_s = ordered_json::object();
  ordered_json exposed_by_op_fraction = ordered_json::object();
  for (const auto& [label, seconds] : ut.exposed_by_op_s) {
    exposed_by_op_s[label] = seconds;
    exposed_by_op_fraction[label] = gpu_time > 0 ? seconds / gpu_time : 0;
  }
  double link_bytes = 0;
  for (const auto& link : ut.links)
    link_bytes += link.bytes;
  j["utilization"] = {{"exposed_comm_by_kind_gpu_seconds", by_comm_kind(ut.exposed_by_kind_s)},
                      {"exposed_comm_by_kind_fraction", exposed_fraction},
                      {"exposed_comm_by_op_gpu_seconds", exposed_by_op_s},
                      {"exposed_comm_by_op_fraction", exposed_by_op_fraction},
                      {"flows", ut.flow_count},
                      {"links_used", ut.links.size()},
                      {"link_bytes", link_bytes},
                      {"hottest_links", hottest}};

  const auto& mem = report.memory;
  j["memory"] = {{"model", mem.model},
                 {"resident_components", mem.components},
                 {"peak_bytes", mem.peak_bytes},
                 {"peak_gpu", mem.peak_gpu}};

  const auto& en = report.energy;
  j["energy"] = {
      {"measured", en.measured},
      {"source",
       "power by activity: compute (board limit, less for HBM-bound kernels), NCCL only, idle "
       "(gpu catalogue)"},
      {"energy_J", en.energy_J},
      {"energy_per_token_J", en.energy_per_token_J},
      // Its inverse, the efficiency figure of scaling studies (higher is better).
      {"tokens_per_J", en.energy_J > 0 ? s.tokens_per_iteration / en.energy_J : 0},
      {"average_power_per_gpu_W", en.average_power_per_gpu_W},
      {"cluster_power_W", en.cluster_power_W},
      {"idle_energy_J", en.idle_energy_J},
      {"idle_energy_fraction", en.idle_energy_fraction},
      {"communication_energy_J", en.communication_energy_J},
      {"idle_energy_by_cause_J", by_cause(en.idle_energy_by_cause_J, reported_causes(report.bubbles))}};

  ordered_json collectives = ordered_json::array();
  for (const auto& c : report.collectives) {
    ordered_json row = {{"comm", workloads::to_string(c.comm)},
                        {"op", workloads::to_string(c.op)},
                        {"algorithm", to_string(c.algorithm)},
                        {"channels", c.channels},
                        {"fidelity", to_string(c.fidelity)},
                        {"count", c.count},
                        {"bytes", c.bytes},
                        {"busy_s", c.busy_s}};
    // What the automatic fidelity chose, and so why (docs/collectives.md).
    if (c.fidelity == platforms::Fidelity::automatic) {
      ordered_json represented = ordered_json::object();
      for (int k = 1; k < kRepresentationCount; ++k)
        represented[std::string(to_string(static_cast<Representation>(k)))] =
            c.by_representation[static_cast<std::size_t>(k)];
      row["representation"] = represented;
    }
    collectives.push_back(row);
  }
  j["collectives"] = collectives;
  if (report.repeats) {
    const ordered_json blocks = summary_blocks(*report.repeats);
    for (auto it = blocks.begin(); it != blocks.end(); ++it)
      j[it.key()] = *it;
  }
  whole_numbers_as_integers(j);
  out << j.dump(2) << '\n';
}

}  // namespace trainsim::analysis
