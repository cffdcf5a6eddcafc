#include "sim/replay/replica_fold.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <tuple>
#include <unordered_set>

#include "sim/collectives/collectives.hpp"
#include "sim/replay/class_fold.hpp"
#include "sim/replay/fold_task_match.hpp"

namespace trainsim::sim {
namespace {

using workloads::Task;
using workloads::TaskGraph;
using workloads::TaskId;
using workloads::TaskKind;
using namespace fold_match;

// The rotation by `period` replicas on GPU ranks (Megatron's order: tp
// fastest, then cp, then dp, then pp).
std::vector<int> rotation(const workloads::ParallelPlan& plan, int period) {
  const int gpus = plan.tp * plan.cp * plan.dp * plan.pp;
  std::vector<int> image(static_cast<std::size_t>(gpus));
  for (int g = 0; g < gpus; ++g)
    image[static_cast<std::size_t>(g)] = plan.gpu_of(
        plan.pp_rank_of(g), (plan.dp_rank_of(g) + period) % plan.dp, plan.tp_rank_of(g), plan.cp_rank_of(g));
  return image;
}

// Each spanning collective's machine by its signature, as planned for the
// check and not yet started: the summary's quotient rings are made from
// these rather than planned again (the same zone, the tuner's same choice).
using SpanningMachines = std::map<SpanningSignature, std::unique_ptr<Collective>>;

// rotation_problem(), keeping the spanning collectives' machines.
std::string check_rotation(const TaskGraph& graph, const scenario::Scenario& scenario,
                           const ClusterZone& zone, int period, ReplicaFold& out,
                           SpanningMachines& machines) {
  const auto& plan = scenario.plan;
  const int dp = plan.dp;
  const int m = dp / period;
  const auto gpu_image = rotation(plan, period);
  // 1. The cluster.
  if (auto problem = zone.automorphism_problem(gpu_image); !problem.empty())
    return problem;
  // 2. The task graph.
  const std::size_t n = graph.size();
  if (!graph.labels.empty())
    return "an imported trace's tasks are named one by one";
  for (std::size_t g = 0; g < gpu_image.size(); ++g) {
    const auto& a = graph.resident_memory[g];
    const auto& b = graph.resident_memory[static_cast<std::size_t>(gpu_image[g])];
    for (int k = 0; k < workloads::kMemoryKindCount; ++k)
      if (bits(a.bytes[k]) != bits(b.bytes[k]))
        return fmt::format("GPU {} holds other resident memory than GPU {}", g, gpu_image[g]);
  }
  // Groups: one canonical index per distinct member list, and each one's
  // image under the rotation (fold_task_match.hpp).
  const auto& groups = graph.groups;
  const GroupImages images = group_images(groups, gpu_image);
  const auto& canonical = images.canonical;
  const auto& group_image = images.image;
  // Tasks by anchor, in id order: compute tasks and sends by GPU, collectives
  // by group. The k-th task of an anchor maps onto the k-th of the anchor's
  // image, and must be alike in every attribute, its GPUs mapped: any
  // bijection that keeps attributes and dependencies is an automorphism, and
  // the dependencies are checked below.
  const std::size_t gpus = gpu_image.size();
  // Windows: a task's replicas must all lie in one window [a q, a q + q) (so
  // that exactly one of its images lies in the representatives); spanning
  // collectives are their own images. Each task's window (or kSplit) is
  // found as its anchor is, while the task is read (a collective's once per
  // group), and checked below once the spanning collectives are known: one
  // pass over the tasks, not two (1.16M tasks of 96 bytes on scale-16k).
  std::vector<int> window(n, -1);
  // Each GPU's window, looked up rather than divided out per task and member.
  std::vector<int> gpu_window(gpu_image.size());
  for (std::size_t g = 0; g < gpu_window.size(); ++g)
    gpu_window[g] = plan.dp_rank_of(static_cast<int>(g)) / period;
  constexpr int kSplit = -2, kUnknown = -3;
  const auto window_of = [&](const Task& t) {
    int w = -1;
    bool split = false;
    for_each_gpu(graph, t, [&](int g) {
      const int here = static_cast<std::size_t>(g) < gpu_window.size()
                           ? gpu_window[static_cast<std::size_t>(g)]
                           : plan.dp_rank_of(g) / period;
      if (w >= 0 && here != w)
        split = true;
      w = here;
    });
    return split ? kSplit : w;
  };
  std::vector<int> group_window(groups.size(), kUnknown);
  AnchorRows rows;  // GPU g's row g, canonical group i's row gpus + i
  if (const auto stray = rows.fill(gpus + groups.size(), n, [&](TaskId id) {
        const Task& t = graph[id];
        if (t.kind == TaskKind::collective) {
          int& known = group_window[static_cast<std::size_t>(t.group)];
          if (known == kUnknown)
            known = window_of(t);
          window[id] = known;
          return static_cast<int>(gpus) + canonical[static_cast<std::size_t>(t.group)];
        }
        window[id] = window_of(t);
        return t.gpu >= 0 && static_cast<std::size_t>(t.gpu) < gpus ? t.gpu : -1;
      }))
    return fmt::format("{} runs on no GPU of the plan", task_name(graph, *stray));
  const auto by_gpu = [&](std::size_t g) { return rows.row(g); };
  const auto by_group = [&](std::size_t i) { return rows.row(gpus + i); };
  out.task_image.assign(n, 0);
  out.spanning.assign(n, 0);
  TaskRunMatcher matcher(graph, gpu_image, images);
  const auto match = [&](std::span<const std::uint32_t> from, std::span<const std::uint32_t> to) {
    return matcher.match(from, to, out.task_image);
  };
  for (std::size_t g = 0; g < gpus; ++g)
    if (!by_gpu(g).empty())
      if (auto problem = match(by_gpu(g), by_gpu(static_cast<std::size_t>(gpu_image[g]))); !problem.empty())
        return problem;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (by_group(i).empty())
      continue;
    if (group_image[i] < 0)
      return fmt::format("{}'s group has no image among the groups", task_name(graph, by_group(i).front()));
    if (auto problem = match(by_group(i), by_group(static_cast<std::size_t>(group_image[i])));
        !problem.empty())
      return problem;
    if (group_image[i] == static_cast<int>(i))
      for (const std::uint32_t id : by_group(i))
        out.spanning[id] = 1;
  }
  // A bijection on tasks.
  {
    std::vector<char> hit(n, 0);
    for (const std::uint32_t image : out.task_image) {
      if (hit[image])
        return fmt::format("two tasks map onto {}", task_name(graph, image));
      hit[image] = 1;
    }
  }
  out.simulated.assign(n, 0);
  out.simulated_count = 0;
  for (TaskId id = 0; id < n; ++id) {
    if (out.spanning[id]) {
      out.simulated[id] = 1;
      ++out.simulated_count;
      continue;
    }
    if (window[id] == kSplit)
      return fmt::format("{} spans replicas of different classes", task_name(graph, id));
    if (window[id] == 0) {
      out.simulated[id] = 1;
      ++out.simulated_count;
    }
  }
  // Dependencies onto dependencies, and none between two classes but
  // through a spanning collective (a replayed task must wait only for
  // replayed tasks or for images of them).
  if (auto problem = dependencies_map_onto_images(
          graph, out.task_image,
          [&](TaskId id, TaskId next) -> std::string {
            if (!out.spanning[id] && !out.spanning[next] && window[id] != window[next])
              return fmt::format("{} waits for {}, of another class of replicas", task_name(graph, next),
                                 task_name(graph, id));
            return {};
          });
      !problem.empty())
    return problem;
  // 3. Spanning collectives: an expansion the rotation maps onto itself.
  machines.clear();
  for (TaskId id = 0; id < n; ++id) {
    if (!out.spanning[id])
      continue;
    const Task& t = graph[id];
    const auto signature = spanning_signature(graph, t);
    if (!signature)
      continue;
    const auto& gpus = graph.groups[static_cast<std::size_t>(t.group)];
    if (machines.count(*signature) > 0)
      continue;
    auto plan_flows = make_collective({t.op, gpus, t.bytes, t.fold, t.algorithm}, zone);
    const auto algorithm = plan_flows.choice.algorithm;
    if (algorithm == platforms::CollectiveAlgorithm::tree ||
        algorithm == platforms::CollectiveAlgorithm::nvls_tree)
      return fmt::format("{} runs {}, whose trees a rotation of the replicas does not map onto themselves",
                         task_name(graph, id), platforms::to_string(algorithm));
    machines.emplace(*signature, plan_flows.flows->clone());  // a copy not yet started
    std::vector<FlowRequest> first;
    plan_flows.flows->start(first);
    std::map<std::tuple<int, int, std::uint64_t, std::uint64_t>, int> batch;
    for (const auto& f : first)
      ++batch[{f.src, f.dst, bits(f.bytes), bits(f.delay_s)}];
    const int gpu_count = zone.gpu_count();
    for (const auto& f : first) {
      if (f.src >= gpu_count || f.dst >= gpu_count)
        return fmt::format("{} reduces in the NVSwitch across replicas", task_name(graph, id));
      const auto it =
          batch.find({gpu_image[static_cast<std::size_t>(f.src)], gpu_image[static_cast<std::size_t>(f.dst)],
                      bits(f.bytes), bits(f.delay_s)});
      if (it == batch.end() || it->second == 0)
        return fmt::format("{}'s {} flows are not mapped onto themselves by the rotation",
                           task_name(graph, id), platforms::to_string(algorithm));
    }
  }
  // 4. Freeness on the links that carry traffic.
  const auto short_links = zone.short_orbits(gpu_image, m);
  if (!short_links.empty()) {
    const std::unordered_set<const simgrid::s4u::Link*> shared(short_links.begin(), short_links.end());
    std::string hit;
    const auto check = [&](int a, int b) {
      if (hit.empty())
        zone.for_each_true_link(a, b, [&](simgrid::s4u::Link* link) {
          if (hit.empty() && shared.count(link) > 0)
            hit = link->get_name();
        });
    };
    std::vector<char> group_done(graph.groups.size(), 0);
    for (TaskId id = 0; id < n && hit.empty(); ++id) {
      const Task& t = graph[id];
      if (t.kind == TaskKind::send && t.gpu >= 0 && t.peer >= 0) {
        check(t.gpu, t.peer);
      } else if (t.kind == TaskKind::collective && !group_done[static_cast<std::size_t>(t.group)]) {
        group_done[static_cast<std::size_t>(t.group)] = 1;
        const auto& gpus = graph.groups[static_cast<std::size_t>(t.group)];
        for (std::size_t k = 1; k < gpus.size(); ++k) {
          check(gpus[0], gpus[k]);
          check(gpus[k], gpus[0]);
        }
      }
    }
    if (!hit.empty())
      return fmt::format(
          "link {} carries traffic of several replicas of one class (it is its own image), "
          "which needs a sharing weight the fold does not apply",
          hit);
  }
  out.replicas = dp;
  out.period = period;
  out.order = m;
  const int gpu_count = zone.gpu_count();
  const int endpoints = gpu_count + zone.spec().domain_count();
  out.endpoint_image.assign(static_cast<std::size_t>(endpoints), 0);
  out.representative.assign(static_cast<std::size_t>(endpoints), 0);
  for (int g = 0; g < gpu_count; ++g) {
    out.endpoint_image[static_cast<std::size_t>(g)] = gpu_image[static_cast<std::size_t>(g)];
    out.representative[static_cast<std::size_t>(g)] = plan.dp_rank_of(g) < period;
  }
  for (int g = 0; g < gpu_count; ++g) {
    const int domain = zone.domain_of(g);
    const auto e = static_cast<std::size_t>(zone.switch_endpoint(domain));
    out.endpoint_image[e] = zone.switch_endpoint(zone.domain_of(gpu_image[static_cast<std::size_t>(g)]));
    if (out.representative[static_cast<std::size_t>(g)])
      out.representative[e] = 1;
  }
  return {};
}

}  // namespace

std::string rotation_problem(const TaskGraph& graph, const scenario::Scenario& scenario,
                             const ClusterZone& zone, int period, ReplicaFold& out) {
  SpanningMachines machines;
  return check_rotation(graph, scenario, zone, period, out, machines);
}

namespace {

// How the fold's spanning collectives run in the quotient, for the summary:
// "; N spanning collectives, as quotient rings" (one state per orbit of ring
// positions, Collective::quotient) or how many run whole instead
// (FoldedCollective). Empty without spanning collectives.
std::string spanning_machines(const TaskGraph& graph, const ReplicaFold& fold,
                              const SpanningMachines& machines) {
  const EndpointSymmetry symmetry{&fold.endpoint_image, &fold.representative, fold.order};
  std::map<SpanningSignature, bool> quotient;  // by the check's signature
  std::size_t spanning = 0, whole = 0;
  for (TaskId id = 0; id < graph.size(); ++id) {
    if (!fold.spanning[id])
      continue;
    const Task& t = graph[id];
    const auto signature = spanning_signature(graph, t);
    if (!signature)
      continue;
    auto it = quotient.find(*signature);
    if (it == quotient.end())
      it = quotient.emplace(*signature, machines.at(*signature)->quotient(symmetry) != nullptr).first;
    ++spanning;
    whole += it->second ? 0 : 1;
  }
  if (spanning == 0)
    return {};
  if (whole == 0)
    return fmt::format(
        "; {} spanning collective{}, as quotient rings (one state per orbit of ring positions)", spanning,
        spanning == 1 ? "" : "s");
  return fmt::format(
      "; {} spanning collective{}, {} as quotient rings, {} run whole (not ring steps the rotation maps onto "
      "themselves position by position)",
      spanning, spanning == 1 ? "" : "s", spanning - whole, whole);
}

}  // namespace

FoldDecision plan_replica_fold(const TaskGraph& graph, const scenario::Scenario& scenario,
                               ClusterZone& zone) {
  FoldDecision decision;
  auto& summary = decision.summary;
  summary.considered = true;
  const auto& plan = scenario.plan;
  summary.replicas = plan.dp;
  summary.simulated = plan.dp;
  const auto stop = [&](std::string why) {
    summary.stopped = std::move(why);
    return std::move(decision);
  };
  if (scenario.workload)
    return stop("an imported workload has no data-parallel replicas to fold");
  const bool perturbed = scenario.perturbations.touches_gpus() || !scenario.perturbations.links.empty();
  if (perturbed && plan.dp < 2)
    return stop("the perturbations section tells replicas apart, and there is one data-parallel replica");
  if (plan.dp < 2)
    return stop("one data-parallel replica");
  if (plan.tp * plan.cp * plan.dp * plan.pp != zone.gpu_count() || graph.gpu_count != zone.gpu_count())
    return stop("the plan does not use every GPU of the cluster");
  if (perturbed) {
    // No rotation fixes a perturbed replica: the class fold, or none
    // (class_fold.hpp).
    ReplicaFold fold;
    std::string why;
    if (auto problem = class_fold_problem(graph, scenario, zone, fold, why); !problem.empty())
      return stop(
          "the perturbations section tells replicas apart, and the replicas do not fold as classes "
          "(the perturbed ones alone, the others images of one): " +
          problem);
    summary.folded = true;
    summary.simulated = plan.dp - fold.order + 1;
    summary.class_size = fold.order;
    summary.folded_why = std::move(why);
    decision.fold = std::move(fold);
    return decision;
  }
  for (int period = 1; period < plan.dp; ++period) {
    if (plan.dp % period != 0)
      continue;
    ReplicaFold fold;
    SpanningMachines machines;
    const auto problem = check_rotation(graph, scenario, zone, period, fold, machines);
    if (!problem.empty()) {
      // Every rotation tried, with why it is no symmetry: the first says
      // what stopped the largest fold, the last what stopped any.
      summary.stopped +=
          fmt::format("{}a rotation by {} replica{} is no symmetry: {}", summary.stopped.empty() ? "" : "; ",
                      period, period == 1 ? "" : "s", problem);
      continue;
    }
    const std::string rings = spanning_machines(graph, fold, machines);
    zone.fold_links(rotation(plan, period));
    summary.folded = true;
    summary.simulated = period;
    summary.class_size = fold.order;
    summary.folded_why = fmt::format(
        "{} data-parallel replicas in {} classes of {}: the rotation by {} replica{} maps the cluster, the "
        "task "
        "graph and the collectives across replicas onto themselves; {} of {} tasks replayed{}",
        plan.dp, period, fold.order, period, period == 1 ? "" : "s", fold.simulated_count, graph.size(),
        rings);
    decision.fold = std::move(fold);
    return decision;
  }
  return decision;
}

}  // namespace trainsim::sim
