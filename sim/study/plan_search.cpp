#include "sim/study/plan_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>

#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "platforms/presets.hpp"
#include "platforms/yaml_document.hpp"
#include "platforms/yaml_reader.hpp"
#include "sim/scenario/checks.hpp"
#include "sim/scenario/cost_model_choice.hpp"
#include "sim/scenario/document.hpp"
#include "sim/scenario/infeasible_plan.hpp"
#include "sim/scenario/memory_check.hpp"
#include "sim/scenario/sections.hpp"
#include "workloads/plan_checks.hpp"
#include "workloads/schedule.hpp"

namespace trainsim::sim {
namespace {

using workloads::Recompute;
using workloads::ScheduleKind;

std::vector<ScheduleKind> all_schedules() {
  std::vector<ScheduleKind> kinds;
  for (const auto& traits : workloads::schedule_table())
    kinds.push_back(traits.kind);
  return kinds;
}
// What --set plan.recompute=... may list: the default axis, plus torchtitan's
// per-op policy (not searched unless asked for: it holds for dense Llama
// blocks only).
const std::vector<Recompute> kChoosableRecompute{Recompute::none, Recompute::selective, Recompute::full,
                                                 Recompute::selective_op};

// The plan keys the search varies (a --set on one of them fixes that axis).
constexpr const char* kAxisKeys[] = {"plan.tp",
                                     "plan.pp",
                                     "plan.micro_batch_size",
                                     "plan.schedule",
                                     "plan.virtual_stages",
                                     "plan.recompute",
                                     "plan.zero_stage",
                                     "plan.dp_shard",
                                     "plan.sequence_parallel",
                                     "plan.expert_parallel",
                                     "plan.expert_tensor_parallel",
                                     "plan.expert_tensor_parallel_size"};

YAML::Node read_yaml_file(const std::string& path, const std::string& option) {
  const std::string text =
      platforms::read_input_file(path, fmt::format("file of {}", option), platforms::kMaxYamlInputBytes);
  YAML::Node root = platforms::load_yaml_document(text, path);
  if (!root.IsMap())
    throw platforms::InputError({fmt::format("{}: expected a YAML map (a scenario file)", path)});
  return root;
}

// The scalars of a --set value on an axis key: one value, or a YAML list.
std::vector<std::string> axis_words(const std::string& assignment, const std::string& value_text) {
  const YAML::Node value = platforms::load_yaml_value(value_text, fmt::format("--set {}", assignment));
  std::vector<std::string> words;
  if (value.IsScalar())
    words.push_back(value.Scalar());
  else if (value.IsSequence())
    for (const auto& v : value)
      if (v.IsScalar())
        words.push_back(v.Scalar());
  if (words.empty() || (value.IsSequence() && words.size() != value.size()))
    throw platforms::InputError({fmt::format(
        "--set {}: expected a value or a list of values, e.g. {}=4 or {}=[2,4]", assignment,
        assignment.substr(0, assignment.find('=')), assignment.substr(0, assignment.find('=')))});
  return words;
}

std::vector<int> axis_integers(const std::string& assignment, const std::vector<std::string>& words, int min,
                               int max) {
  std::vector<int> out;
  for (const auto& w : words) {
    std::size_t used = 0;
    int n = 0;
    try {
      n = std::stoi(w, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != w.size() || w.empty() || n < min || n > max)
      throw platforms::InputError(
          {fmt::format("--set {}: '{}' is not an integer in [{}, {}]", assignment, w, min, max)});
    out.push_back(n);
  }
  return out;
}

template <class E>
std::vector<E> axis_choices(const std::string& assignment, const std::vector<std::string>& words,
                            const std::vector<E>& all) {
  std::vector<E> out;
  for (const auto& w : words) {
    std::optional<E> found;
    std::string names;
    for (E e : all) {
      names += fmt::format("{}{}", names.empty() ? "" : ", ", to_string(e));
      if (to_string(e) == w)
        found = e;
    }
    if (!found)
      throw platforms::InputError({fmt::format("--set {}: '{}' is not one of {}", assignment, w, names)});
    out.push_back(*found);
  }
  return out;
}

std::vector<bool> axis_booleans(const std::string& assignment, const std::vector<std::string>& words) {
  std::vector<bool> out;
  for (const auto& w : words) {
    if (w == "true")
      out.push_back(true);
    else if (w == "false")
      out.push_back(false);
    else
      throw platforms::InputError({fmt::format("--set {}: '{}' is not true or false", assignment, w)});
  }
  return out;
}

void set_axis(workloads::PlanSpaceOptions& space, const std::string& key, const std::string& assignment,
              const std::string& value) {
  const auto words = axis_words(assignment, value);
  if (key == "plan.tp")
    space.tp = axis_integers(assignment, words, 1, 1 << 20);
  else if (key == "plan.pp")
    space.pp = axis_integers(assignment, words, 1, 1 << 20);
  else if (key == "plan.micro_batch_size")
    space.micro_batch_sizes = axis_integers(assignment, words, 1, 1 << 20);
  else if (key == "plan.virtual_stages")
    space.virtual_stages = axis_integers(assignment, words, 2, 1 << 20);
  else if (key == "plan.zero_stage")
    space.zero_stages = axis_integers(assignment, words, 0, 3);
  else if (key == "plan.dp_shard")  // 0: full sharding
    space.dp_shards = axis_integers(assignment, words, 0, 1 << 24);
  else if (key == "plan.schedule")
    space.schedules = axis_choices(assignment, words, all_schedules());
  else if (key == "plan.recompute")
    space.recompute = axis_choices(assignment, words, kChoosableRecompute);
  else if (key == "plan.sequence_parallel")
    space.sequence_parallel = axis_booleans(assignment, words);
  else if (key == "plan.expert_parallel")
    space.ep = axis_integers(assignment, words, 1, 1 << 20);
  else if (key == "plan.expert_tensor_parallel" || key == "plan.expert_tensor_parallel_size")
    space.etp = axis_integers(assignment, words, 1, 1 << 20);
}

std::optional<int> integer_at(const YAML::Node& map, const char* key) {
  if (!map.IsMap() || !map[key] || !map[key].IsScalar())
    return std::nullopt;
  try {
    return map[key].as<int>();
  } catch (const YAML::Exception&) {
    return std::nullopt;
  }
}

struct BaseDocument {
  YAML::Node root;
  platforms::InputSource source{""};
  workloads::PlanSpaceOptions space;
  std::string model_source, cluster_source, fidelity;
};

BaseDocument base_document(const PlanSearchRequest& request) {
  BaseDocument base;
  platforms::ErrorList errors;
  const std::string file = request.scenario.empty() ? std::string("trainsim plan") : request.scenario;
  base.source = platforms::InputSource(file);
  auto& source = base.source;
  base.root = request.scenario.empty() ? YAML::Node(YAML::NodeType::Map)
                                       : read_yaml_file(request.scenario, "--scenario");
  YAML::Node& root = base.root;
  for (const char* key : scenario::kStudySectionKeys)
    if (root[key])
      throw platforms::InputError(
          {fmt::format("--scenario {}: is a study file (it has a `{}` section); expected a "
                       "scenario, whose plan the search replaces",
                       request.scenario, key)});

  if (!request.model.empty()) {
    if (workloads::find_model_preset(request.model)) {
      YAML::Node model(YAML::NodeType::Map);
      model["preset"] = request.model;
      root["model"] = model;
      source.mark_override("model", fmt::format("--model {}", request.model));
      base.model_source = request.model;
    } else if (std::filesystem::is_regular_file(request.model)) {
      const YAML::Node other = read_yaml_file(request.model, "--model");
      if (!other["model"])
        throw platforms::InputError(
            {fmt::format("--model {}: the file has no `model` section", request.model)});
      root["model"] = other["model"];
      source.mark_origin("model", request.model);
      base.model_source = fmt::format("{} (model section)", request.model);
    } else {
      throw platforms::InputError(
          {fmt::format("--model {}: neither a model preset (expected one of {}) nor a readable "
                       "YAML file with a `model` section",
                       request.model, workloads::model_preset_names_for_message())});
    }
  } else if (!root["model"]) {
    throw platforms::InputError(
        {"no model: give --model PRESET or --model FILE (a YAML file with a `model` section), "
         "or --scenario FILE with a `model` section"});
  } else {
    base.model_source = fmt::format("{} (model section)", request.scenario);
  }

  if (!request.cluster.empty()) {
    if (platforms::find_cluster_preset(request.cluster) != nullptr) {
      YAML::Node cluster(YAML::NodeType::Map);
      cluster["preset"] = request.cluster;
      root["cluster"] = cluster;
      source.mark_override("cluster.preset", fmt::format("--cluster {}", request.cluster));
      base.cluster_source = request.cluster;
    } else if (std::filesystem::is_regular_file(request.cluster)) {
      const YAML::Node other = read_yaml_file(request.cluster, "--cluster");
      if (!other["cluster"])
        throw platforms::InputError(
            {fmt::format("--cluster {}: the file has no `cluster` section", request.cluster)});
      root["cluster"] = other["cluster"];
      source.mark_origin("cluster", request.cluster);
      base.cluster_source = fmt::format("{} (cluster section)", request.cluster);
    } else {
      throw platforms::InputError(
          {fmt::format("--cluster {}: neither a cluster preset (expected one of {}) nor a "
                       "readable YAML file with a `cluster` section",
                       request.cluster, platforms::cluster_preset_names())});
    }
  } else if (!root["cluster"]) {
    throw platforms::InputError(
        {"no cluster: give --cluster PRESET or --cluster FILE (a YAML file with a `cluster` "
         "section), or --scenario FILE with a `cluster` section"});
  } else {
    base.cluster_source = fmt::format("{} (cluster section)", request.scenario);
  }
  if (!root["plan"] || !root["plan"].IsMap())
    root["plan"] = YAML::Node(YAML::NodeType::Map);

  if (request.seq_len > 0) {
    root["model"]["seq_len"] = request.seq_len;
    source.mark_override("model.seq_len", fmt::format("--seq-len {}", request.seq_len));
  }

  // --set: on a varied key it fixes the axis; anything else edits the base.
  bool fidelity_set = false;
  for (const auto& assignment : request.overrides) {
    const auto eq = assignment.find('=');
    const std::string key = assignment.substr(0, eq);
    if (key == "plan.dp")
      errors.add(
          fmt::format("--set {}: dp is derived by the search (GPUs / (tp x pp x cp)); fix tp or pp "
                      "instead",
                      assignment));
    else if (key == "cluster.nodes")
      errors.add(fmt::format("--set {}: the node count follows from --gpus {}; change --gpus instead",
                             assignment, request.gpus));
    else if (key == "plan.global_batch_size")
      errors.add(fmt::format("--set {}: use --global-batch instead", assignment));
    if (eq != std::string::npos &&
        std::find(std::begin(kAxisKeys), std::end(kAxisKeys), key) != std::end(kAxisKeys)) {
      set_axis(base.space, key, assignment, assignment.substr(eq + 1));
      continue;
    }
    // Only a fidelity the user gives (the key, or the whole collectives
    // map) overrides --fidelity; another collectives key does not.
    if (key == "cluster.collectives.fidelity" || key == "cluster.collectives")
      fidelity_set = true;
    platforms::apply_override(root, assignment, source, errors);
  }
  errors.throw_if_any();
  if (!request.fidelity.empty() && !fidelity_set) {
    root["cluster"]["collectives"]["fidelity"] = request.fidelity;
    source.mark_override("cluster.collectives.fidelity", fmt::format("--fidelity {}", request.fidelity));
  }
  base.fidelity = request.fidelity;

  // The global batch.
  int batch = request.global_batch_size;
  if (batch == 0)
    batch = integer_at(root["plan"], "global_batch_size").value_or(0);
  if (batch <= 0)
    throw platforms::InputError({"no global batch: give --global-batch B (sequences per iteration)"});
  base.space.global_batch_size = batch;
  root["plan"]["global_batch_size"] = batch;
  if (request.global_batch_size > 0)
    source.mark_override("plan.global_batch_size", fmt::format("--global-batch {}", batch));
  base.space.context_parallel = integer_at(root["plan"], "context_parallel").value_or(1);
  return base;
}

// Without --scenario the document is built here, and yaml-cpp gives the
// plan map it builds a mark at 1:1 of no file: drop that location.
std::string without_synthetic_location(const std::string& message, const PlanSearchRequest& request) {
  const std::string prefix = "trainsim plan:1:1: ";
  if (request.scenario.empty() && message.rfind(prefix, 0) == 0)
    return message.substr(prefix.size());
  return message;
}

// Reads the cluster section alone, to size the cluster for --gpus.
platforms::ClusterSpec read_base_cluster(const YAML::Node& root, const platforms::InputSource& source) {
  platforms::ErrorList errors;
  scenario::Scenario scenario;
  platforms::MapReader top(YAML::Clone(root), "", source, errors);
  if (auto cluster = top.map("cluster"))
    read_cluster_section(*cluster, scenario);
  errors.throw_if_any();
  return scenario.cluster;
}

// The base document's plan section read alone (no rule across sections):
// the options every candidate keeps (context parallelism, gradient
// buckets, precision, ...); the search replaces the axes it varies.
workloads::ParallelPlan read_base_plan(const YAML::Node& root, const platforms::InputSource& source) {
  platforms::ErrorList errors;
  scenario::Scenario scenario;
  platforms::MapReader top(YAML::Clone(root), "", source, errors);
  if (auto plan = top.map("plan"))
    scenario::read_plan_section(*plan, scenario);
  errors.throw_if_any();
  return scenario.plan;
}

bool is_axis_key(const std::string& key) {
  return key == "plan.dp" ||
         std::find(std::begin(kAxisKeys), std::end(kAxisKeys), key) != std::end(kAxisKeys);
}

}  // namespace

PlanSearch prepare_plan_search(const PlanSearchRequest& request) {
  if (request.gpus < 1)
    throw platforms::InputError({fmt::format("--gpus {}: expected a positive GPU count", request.gpus)});
  BaseDocument base = base_document(request);
  PlanSearch search;
  search.model_source = base.model_source;
  search.cluster_source = base.cluster_source;
  search.fidelity = base.fidelity;

  // Size the cluster: N GPUs of its node shape.
  const platforms::ClusterSpec cluster = read_base_cluster(base.root, base.source);
  const int gpus_per_node = cluster.groups.front().gpus_per_node;
  if (cluster.groups.size() == 1) {
    if (request.gpus % gpus_per_node != 0)
      throw platforms::InputError({fmt::format(
          "--gpus {}: the cluster {} has {} GPUs per node; expected a multiple of {} (whole nodes)",
          request.gpus, cluster.name, gpus_per_node, gpus_per_node)});
    base.root["cluster"]["nodes"] = request.gpus / gpus_per_node;
    base.source.mark_override("cluster.nodes", fmt::format("--gpus {}", request.gpus));
  } else if (request.gpus != cluster.gpu_count()) {
    throw platforms::InputError({fmt::format(
        "--gpus {}: the mixed cluster {} has {} GPUs in {} node groups; expected "
        "--gpus {} (a mixed cluster is searched as it is)",
        request.gpus, cluster.name, cluster.gpu_count(), cluster.groups.size(), cluster.gpu_count())});
  }
  const int cp = std::max(1, base.space.context_parallel);
  if (request.gpus % cp != 0)
    throw platforms::InputError(
        {fmt::format("--gpus {}: plan.context_parallel {} does not divide it", request.gpus, cp)});

  // The model and cluster, checked once with a placeholder plan that always
  // divides (one stage, one micro-batch per replica), so that malformed
  // input is reported once rather than for every plan.
  {
    YAML::Node probe = YAML::Clone(base.root);
    YAML::Node plan(YAML::NodeType::Map);
    plan["global_batch_size"] = request.gpus / cp;
    plan["context_parallel"] = cp;
    probe["plan"] = plan;
    try {
      search.base =
          scenario::load_scenario_document(probe, base.source, scenario::LoadOptions{.check_memory = false});
    } catch (const scenario::InfeasiblePlan& e) {
      throw platforms::InputError(e.problems());
    }
  }

  base.space.gpus = request.gpus;
  base.space.gpus_per_domain = cluster.groups.front().gpus_per_domain();
  // Every candidate is the base scenario with the search's axes set,
  // checked by the same typed rules as `trainsim run` (sim/scenario/checks.hpp),
  // then by the memory model.
  const workloads::ParallelPlan base_plan = read_base_plan(base.root, base.source);
  // Without a --set on it, the base scenario's hybrid sharding (FSDP's, so
  // its FSDP candidates only).
  if (base.space.dp_shards.empty())
    base.space.dp_shards = {base_plan.dp_shard};
  if (!search.base.model.is_moe() &&
      std::any_of(base.space.ep.begin(), base.space.ep.end(), [](int ep) { return ep > 1; }))
    throw platforms::InputError({fmt::format(
        "--set plan.expert_parallel: {} is a dense model (no model.moe); expected expert_parallel 1, or a "
        "MoE model (e.g. --model mixtral-8x7b)",
        search.base.model.name)});
  if (!search.base.model.is_moe() && !base.space.etp.empty())
    throw platforms::InputError({fmt::format(
        "--set plan.expert_tensor_parallel: {} is a dense model (no model.moe); expected the key left out, "
        "or a MoE model (e.g. --model mixtral-8x7b)",
        search.base.model.name)});
  const workloads::PlanSpace space = workloads::enumerate_plans(search.base.model, base.space);
  search.pruned = space.pruned;
  search.enumerated = space.enumerated;

  std::size_t checked = 0;
  // A problem at a key the search sets is the candidate's (named next to
  // it); any other key is located in the base document.
  const auto describe = [&](const platforms::Problem& problem) {
    if (is_axis_key(problem.key))
      return fmt::format("{}: {}", problem.key, problem.message);
    return without_synthetic_location(platforms::locate_problem(base.root, base.source, problem), request);
  };
  for (const auto& plan : space.candidates) {
    if (request.on_progress)
      request.on_progress(checked++, space.candidates.size());
    const std::string key = workloads::plan_key(plan);
    scenario::Scenario candidate = search.base;
    candidate.name = fmt::format("plan-{}", key);
    candidate.plan = base_plan;
    candidate.plan.dp = plan.dp;
    candidate.plan.tp = plan.tp;
    candidate.plan.pp = plan.pp;
    candidate.plan.micro_batch_size = plan.micro_batch_size;
    candidate.plan.schedule = plan.schedule;
    candidate.plan.virtual_stages = plan.virtual_stages;
    candidate.plan.stage_layers = plan.stage_layers;
    candidate.plan.recompute = plan.recompute;
    candidate.plan.zero_stage = plan.zero_stage;
    candidate.plan.dp_shard = plan.dp_shard;
    candidate.plan.sequence_parallel = plan.sequence_parallel;
    candidate.plan.ep = plan.ep;
    candidate.plan.etp = plan.etp;
    // The base plan's TP overlap, on every candidate it applies to.
    const bool overlap_applies =
        plan.sequence_parallel && candidate.plan.framework == workloads::Framework::megatron;
    candidate.plan.tp_comm_overlap =
        overlap_applies ? base_plan.tp_comm_overlap : workloads::TpCommOverlap::none;
    // Likewise the gradient reduction's overlap with the backward, on the
    // plans the loader lets have it (workloads/plan_checks.hpp): not FSDP
    // (ZeRO 3), which reduce-scatters per layer anyway, nor expert TP below
    // tp; expert parallelism overlaps its dense and expert buckets. Where
    // it is dropped, so is the base's bucket size (refused without it).
    candidate.plan.overlap_grad_reduce =
        base_plan.overlap_grad_reduce && workloads::overlap_grad_reduce_allowed(candidate.plan);
    if (!candidate.plan.overlap_grad_reduce)
      candidate.plan.grad_bucket_bytes = 0;
    // The base plan's expert all-to-all overlap, on every candidate that has
    // expert all-to-alls and a schedule that runs it (merged F&B steps).
    candidate.plan.moe_a2a_overlap =
        base_plan.moe_a2a_overlap && plan.ep > 1 &&
        (plan.schedule == ScheduleKind::one_f_one_b ||
         plan.schedule == ScheduleKind::interleaved_one_f_one_b ||
         plan.schedule == ScheduleKind::dualpipe_v || plan.schedule == ScheduleKind::dualpipe);
    // The base plan's deferred weight gradients, on every candidate that
    // keeps the overlap under a 1F1B schedule without TP overlap (the
    // loader's rules; the estimate runs the deferral: merged_step_estimate.hpp).
    candidate.plan.delay_wgrad_compute = base_plan.delay_wgrad_compute && candidate.plan.moe_a2a_overlap &&
                                         candidate.plan.tp_comm_overlap == workloads::TpCommOverlap::none &&
                                         (plan.schedule == ScheduleKind::one_f_one_b ||
                                          plan.schedule == ScheduleKind::interleaved_one_f_one_b);
    // The base plan's overlapped parameter gather, on every candidate with a
    // distributed optimizer (ZeRO-1 / ZeRO-2) that keeps the gradient
    // overlap, without expert parallelism (the loader's rules).
    candidate.plan.overlap_param_gather = base_plan.overlap_param_gather &&
                                          candidate.plan.overlap_grad_reduce &&
                                          workloads::overlap_param_gather_allowed(candidate.plan);
    auto problems = scenario::resolve_plan(candidate);
    if (problems.empty())
      problems = scenario::check(candidate);
    if (!problems.empty()) {
      ++search.pruned[static_cast<std::size_t>(workloads::PruneReason::invalid_plan)];
      if (search.invalid_examples.size() < 3)
        search.invalid_examples.push_back(describe(problems.front()));
      continue;
    }
    if (const auto memory = scenario::memory_problems(candidate); !memory.empty()) {
      ++search.pruned[static_cast<std::size_t>(workloads::PruneReason::does_not_fit_in_memory)];
      search.memory_pruned.push_back({key, workloads::plan_label(plan), "plan: " + memory.front()});
      continue;
    }
    PlanCandidate c;
    c.plan = candidate.plan;
    c.key = key;
    c.label = workloads::plan_label(candidate.plan);
    const auto cost = scenario::make_cost_model(candidate);
    c.estimate = workloads::estimate_plan(candidate.model, candidate.plan, candidate.cluster, *cost);
    search.ranked.push_back(std::move(c));
  }
  search.document = base.root;
  search.description =
      fmt::format("{} on {} x {} GPUs, global batch {}", search.base.model.name, request.gpus,
                  cluster.groups.front().gpu.name, base.space.global_batch_size);

  std::stable_sort(search.ranked.begin(), search.ranked.end(),
                   [](const PlanCandidate& a, const PlanCandidate& b) {
                     if (a.estimate.iteration_s != b.estimate.iteration_s)
                       return a.estimate.iteration_s < b.estimate.iteration_s;
                     return a.key < b.key;
                   });
  return search;
}

std::string scenario_yaml(const PlanSearch& search, const PlanCandidate& candidate) {
  YAML::Node root = YAML::Clone(search.document);
  root["name"] = fmt::format("plan-{}", candidate.key);
  YAML::Node plan = root["plan"];
  plan["dp"] = candidate.plan.dp;
  plan["tp"] = candidate.plan.tp;
  plan["pp"] = candidate.plan.pp;
  plan["micro_batch_size"] = candidate.plan.micro_batch_size;
  plan["schedule"] = std::string(to_string(candidate.plan.schedule));
  plan["virtual_stages"] = candidate.plan.virtual_stages;
  plan["recompute"] = std::string(to_string(candidate.plan.recompute));
  plan["zero_stage"] = candidate.plan.zero_stage;
  // An uneven split (Megatron's, counting the embedding and the loss as
  // layers) goes as the layers of every virtual stage: without it the point's
  // scenario would not load (pp x v does not divide the layers). The base's
  // own split keys would then contradict it; an even split keeps none.
  for (const char* key : {"stage_layers", "first_stage_layers", "last_stage_layers", "embedding_in_split",
                          "loss_in_split", "pipeline_layout"})
    if (plan[key])
      plan.remove(key);
  if (!candidate.plan.stage_layers.empty()) {
    YAML::Node layers(YAML::NodeType::Sequence);
    layers.SetStyle(YAML::EmitterStyle::Flow);
    for (const int n : candidate.plan.stage_layers)
      layers.push_back(n);
    plan["stage_layers"] = layers;
  }
  if (candidate.plan.hybrid_sharded())
    plan["dp_shard"] = candidate.plan.dp_shard;
  else if (plan["dp_shard"])
    plan.remove("dp_shard");  // full sharding, or not FSDP
  plan["sequence_parallel"] = candidate.plan.sequence_parallel;
  if (plan["expert_parallel"] || candidate.plan.ep > 1)
    plan["expert_parallel"] = candidate.plan.ep;
  // The plan's expert TP, or none (tp); the base's alias would contradict it.
  if (plan["expert_tensor_parallel_size"])
    plan.remove("expert_tensor_parallel_size");
  if (candidate.plan.expert_tp_folded())
    plan["expert_tensor_parallel"] = candidate.plan.expert_tp();
  else if (plan["expert_tensor_parallel"])
    plan.remove("expert_tensor_parallel");
  if (plan["moe_a2a_overlap"] || candidate.plan.moe_a2a_overlap)
    plan["moe_a2a_overlap"] = candidate.plan.moe_a2a_overlap;
  if (plan["delay_wgrad_compute"] || candidate.plan.delay_wgrad_compute)
    plan["delay_wgrad_compute"] = candidate.plan.delay_wgrad_compute;
  if (candidate.plan.torch_async_tp())
    plan["tp_comm_overlap"] = std::string(to_string(candidate.plan.tp_comm_overlap));
  else if (plan["tp_comm_overlap"] || candidate.plan.userbuffers())
    plan["tp_comm_overlap"] = candidate.plan.userbuffers();
  if (plan["overlap_grad_reduce"] || candidate.plan.overlap_grad_reduce)
    plan["overlap_grad_reduce"] = candidate.plan.overlap_grad_reduce;
  if (plan["grad_bucket_size"] && !candidate.plan.overlap_grad_reduce)
    plan.remove("grad_bucket_size");  // refused without the overlap
  if (plan["overlap_param_gather"] || candidate.plan.overlap_param_gather)
    plan["overlap_param_gather"] = candidate.plan.overlap_param_gather;
  YAML::Emitter emitter;
  emitter << root;
  return fmt::format(
      "# Plan {} of `trainsim plan` ({}).\n"
      "# Simulate it alone with: trainsim run <this file>\n{}\n",
      candidate.key, search.description, emitter.c_str());
}

}  // namespace trainsim::sim
