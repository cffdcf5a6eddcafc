#include "sim/replay/class_fold.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "sim/collectives/collectives.hpp"
#include "sim/replay/fold_task_match.hpp"

namespace trainsim::sim {
namespace {

using namespace fold_match;
using Link = simgrid::s4u::Link;

constexpr double kCapacitySlack = 1e-9;  // as the claims' (link_claims.hpp): rounding of the sums

// A route's link directions and latency, as the replay's flows cross them
// (the zone is not folded under this fold).
struct Walk {
  std::vector<Link*> links;
  double latency_s = 0;
};
Walk walk(const ClusterZone& zone, int a, int b) {
  Walk w;
  w.latency_s = zone.for_each_true_link(a, b, [&](Link* link) { w.links.push_back(link); });
  return w;
}

// The endpoint pairs a non-across task's flows can join: a send's two GPUs;
// every ordered pair of a collective's members, and each member with its
// domain's NVSwitch both ways (in-switch reductions).
void flow_pairs(const TaskGraph& graph, const ClusterZone& zone, const Task& t,
                std::vector<std::pair<int, int>>& out) {
  if (t.kind == TaskKind::send) {
    if (t.gpu >= 0 && t.peer >= 0 && t.gpu != t.peer)
      out.emplace_back(t.gpu, t.peer);
    return;
  }
  if (t.kind != TaskKind::collective)
    return;
  const auto& gpus = graph.groups[static_cast<std::size_t>(t.group)];
  if (gpus.size() < 2)
    return;
  for (int a : gpus) {
    for (int b : gpus)
      if (a != b)
        out.emplace_back(a, b);
    const int domain = zone.domain_of(a);
    if (zone.has_nvls(domain)) {
      out.emplace_back(a, zone.switch_endpoint(domain));
      out.emplace_back(zone.switch_endpoint(domain), a);
    }
  }
}

}  // namespace

std::string class_fold_problem(const TaskGraph& graph, const scenario::Scenario& scenario,
                               const ClusterZone& zone, ReplicaFold& out, std::string& why) {
  const auto& plan = scenario.plan;
  const auto& perturbations = scenario.perturbations;
  const int dp = plan.dp;
  const int gpu_count = zone.gpu_count();
  // What the fold cannot know before the replay, or what makes the
  // replicas meet other than at one instant.
  if (perturbations.stragglers.enabled)
    return "random stragglers are drawn per GPU during the replay, so which replicas they tell apart is not "
           "known before it";
  if (!perturbations.links.empty())
    return "a link fault changes links, and the automatic fidelity then runs every collective as flows: the "
           "collectives across replicas would not end at one instant for all their members";
  const auto fidelity = zone.spec().collectives.fidelity;
  if (fidelity != platforms::Fidelity::automatic)
    return fmt::format(
        "collectives.fidelity is `{}`: the collectives across replicas run as flows, which reach the "
        "members of a perturbed replica at other times than the others'",
        platforms::to_string(fidelity));
  if (!graph.labels.empty())
    return "an imported trace's tasks are named one by one";
  // The classes: each replica holding a perturbed GPU alone, the others one
  // class, replica rest[0] its representative.
  std::vector<char> perturbed(static_cast<std::size_t>(dp), 0);
  std::vector<int> perturbed_gpus;
  const auto mark = [&](int g) {
    if (g >= 0 && g < gpu_count) {
      perturbed[static_cast<std::size_t>(plan.dp_rank_of(g))] = 1;
      perturbed_gpus.push_back(g);
    }
  };
  for (const auto& s : perturbations.slow_gpus)
    for (int g : s.gpus)
      mark(g);
  for (const auto& t : perturbations.throttling)
    for (int g : t.gpus)
      mark(g);
  std::sort(perturbed_gpus.begin(), perturbed_gpus.end());
  perturbed_gpus.erase(std::unique(perturbed_gpus.begin(), perturbed_gpus.end()), perturbed_gpus.end());
  std::vector<int> rest, alone;
  std::vector<int> next(static_cast<std::size_t>(dp));
  for (int r = 0; r < dp; ++r)
    (perturbed[static_cast<std::size_t>(r)] ? alone : rest).push_back(r);
  const int m = static_cast<int>(rest.size());
  if (alone.empty())
    return "no replica holds a perturbed GPU";
  if (m < 2)
    return "fewer than two replicas hold no perturbed GPU";
  for (int r : alone)
    next[static_cast<std::size_t>(r)] = r;
  for (int i = 0; i < m; ++i)
    next[static_cast<std::size_t>(rest[static_cast<std::size_t>(i)])] =
        rest[static_cast<std::size_t>((i + 1) % m)];
  std::vector<int> gpu_image(static_cast<std::size_t>(gpu_count));
  for (int g = 0; g < gpu_count; ++g)
    gpu_image[static_cast<std::size_t>(g)] =
        plan.gpu_of(plan.pp_rank_of(g), next[static_cast<std::size_t>(plan.dp_rank_of(g))],
                    plan.tp_rank_of(g), plan.cp_rank_of(g));
  const auto replica = [&](int g) { return plan.dp_rank_of(g); };
  // P3, the GPUs: same node group, speed and resident memory; NVLink
  // domains onto domains.
  const int domains = zone.spec().domain_count();
  std::vector<int> domain_image(static_cast<std::size_t>(domains), -1);
  std::vector<char> split(static_cast<std::size_t>(domains), 0);
  for (int g = 0; g < gpu_count; ++g) {
    const int h = gpu_image[static_cast<std::size_t>(g)];
    if (&zone.group_of_node(zone.node_of(g)) != &zone.group_of_node(zone.node_of(h)))
      return fmt::format("GPU {} and its image GPU {} sit on nodes of different node groups", g, h);
    if (bits(zone.host(g)->get_speed()) != bits(zone.host(h)->get_speed()))
      return fmt::format("GPU {} and its image GPU {} compute at different speeds", g, h);
    const auto& a = graph.resident_memory[static_cast<std::size_t>(g)];
    const auto& b = graph.resident_memory[static_cast<std::size_t>(h)];
    for (int k = 0; k < workloads::kMemoryKindCount; ++k)
      if (bits(a.bytes[k]) != bits(b.bytes[k]))
        return fmt::format("GPU {} holds other resident memory than its image GPU {}", g, h);
    const auto d = static_cast<std::size_t>(zone.domain_of(g));
    if (domain_image[d] >= 0 && domain_image[d] != zone.domain_of(h))
      split[d] = 1;
    domain_image[d] = zone.domain_of(h);
  }
  // A domain whose GPUs the relabelling sends to several domains (a node
  // holding a perturbed replica's and other replicas' TP groups): its
  // NVSwitch endpoint has no image, which only an in-switch reduction
  // (NVLS) would need: refused where the domain has one, else left in place.
  bool any_split = false;
  for (int d = 0; d < domains; ++d) {
    if (!split[static_cast<std::size_t>(d)])
      continue;
    if (zone.has_nvls(d))
      return fmt::format(
          "NVLink domain {} holds GPUs of a perturbed replica and of others, and its NVSwitch reduces "
          "in-switch (NVLS): the relabelling has no image of it",
          d);
    domain_image[static_cast<std::size_t>(d)] = d;
    any_split = true;
  }
  if (!any_split) {
    std::vector<char> hit(static_cast<std::size_t>(domains), 0);
    for (int d = 0; d < domains; ++d) {
      auto& image = domain_image[static_cast<std::size_t>(d)];
      if (image < 0)
        image = d;
      if (hit[static_cast<std::size_t>(image)]++)
        return "two NVLink domains map onto one";
    }
  }
  // P3, the task graph. Groups: one canonical index per distinct member
  // list, and its image (the group listing the image GPUs in order, or the
  // group itself when the relabelling maps its set onto itself: a
  // collective across replicas, or one of a perturbed replica).
  const std::size_t n = graph.size();
  const auto& groups = graph.groups;
  const GroupImages images = group_images(groups, gpu_image);
  const auto& canonical = images.canonical;
  const auto& group_image = images.image;
  std::vector<char> group_across(groups.size(), 0);
  for (std::size_t i = 0; i < groups.size(); ++i)
    if (canonical[i] == static_cast<int>(i))
      for (int g : groups[i])
        if (replica(g) != replica(groups[i].front()))
          group_across[i] = 1;
  std::vector<std::vector<std::uint32_t>> by_gpu(static_cast<std::size_t>(gpu_count));
  std::vector<std::vector<std::uint32_t>> by_group(groups.size());
  out.across.assign(n, 0);
  for (TaskId id = 0; id < n; ++id) {
    const Task& t = graph[id];
    const auto id32 = static_cast<std::uint32_t>(id);
    if (t.kind == TaskKind::collective) {
      const auto c = static_cast<std::size_t>(canonical[static_cast<std::size_t>(t.group)]);
      by_group[c].push_back(id32);
      out.across[id] = group_across[c];
    } else if (t.gpu >= 0 && t.gpu < gpu_count) {
      by_gpu[static_cast<std::size_t>(t.gpu)].push_back(id32);
      if (t.kind == TaskKind::send && t.peer >= 0 && replica(t.peer) != replica(t.gpu))
        return fmt::format("{} sends across replicas (P1: only collectives may join replicas)",
                           task_name(graph, id));
    } else {
      return fmt::format("{} runs on no GPU of the plan", task_name(graph, id));
    }
  }
  out.task_image.assign(n, 0);
  for (TaskId id = 0; id < n; ++id)
    out.task_image[id] = static_cast<std::uint32_t>(id);
  TaskRunMatcher matcher(graph, gpu_image, images);
  const auto match = [&](const std::vector<std::uint32_t>& from, const std::vector<std::uint32_t>& to) {
    return matcher.match(from, to, out.task_image);
  };
  for (int g = 0; g < gpu_count; ++g)
    if (!perturbed[static_cast<std::size_t>(replica(g))] && !by_gpu[static_cast<std::size_t>(g)].empty())
      if (auto problem = match(by_gpu[static_cast<std::size_t>(g)],
                               by_gpu[static_cast<std::size_t>(gpu_image[static_cast<std::size_t>(g)])]);
          !problem.empty())
        return problem;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (by_group[i].empty() || group_across[i] || perturbed[static_cast<std::size_t>(replica(groups[i][0]))])
      continue;
    if (group_image[i] < 0)
      return fmt::format("{}'s group has no image among the groups", task_name(graph, by_group[i].front()));
    if (auto problem = match(by_group[i], by_group[static_cast<std::size_t>(group_image[i])]);
        !problem.empty())
      return problem;
  }
  for (std::size_t i = 0; i < groups.size(); ++i)
    if (!by_group[i].empty() && group_across[i] && group_image[i] != static_cast<int>(i))
      return fmt::format(
          "{} joins replicas but not every unperturbed replica's counterpart, so it is no image of itself",
          task_name(graph, by_group[i].front()));
  {
    std::vector<char> hit(n, 0);
    for (const std::uint32_t image : out.task_image) {
      if (hit[image])
        return fmt::format("two tasks map onto {}", task_name(graph, image));
      hit[image] = 1;
    }
  }
  // Dependencies onto dependencies; none between two replicas but through a
  // collective across replicas.
  const auto home = [&](TaskId id) {
    const Task& t = graph[id];
    return t.kind == TaskKind::collective ? replica(groups[static_cast<std::size_t>(t.group)].front())
                                          : replica(t.gpu);
  };
  if (auto problem =
          dependencies_map_onto_images(graph, out.task_image,
                                       [&](TaskId id, TaskId after) -> std::string {
                                         if (!out.across[id] && !out.across[after] && home(id) != home(after))
                                           return fmt::format("{} waits for {}, of another replica",
                                                              task_name(graph, after), task_name(graph, id));
                                         return {};
                                       });
      !problem.empty())
    return problem;
  // P1: the collectives across replicas run under the automatic fidelity
  // (the tuner's choice included); that they run `isolated` throughout is
  // the replay's check.
  std::size_t across_count = 0;
  {
    std::set<SpanningSignature> checked;
    for (TaskId id = 0; id < n; ++id) {
      if (!out.across[id])
        continue;
      ++across_count;
      const Task& t = graph[id];
      const auto signature = spanning_signature(graph, t);
      if (!signature || !checked.insert(*signature).second)
        continue;
      const auto& gpus = groups[static_cast<std::size_t>(t.group)];
      auto planned = make_collective(
          {t.op, gpus, t.bytes, t.fold, t.algorithm,
           t.exchange >= 0 ? &graph.exchanges[static_cast<std::size_t>(t.exchange)] : nullptr},
          zone);
      if (planned.choice.fidelity != platforms::Fidelity::automatic)
        return fmt::format("{} runs at fidelity `{}`, not the automatic closed form (P1)",
                           task_name(graph, id), platforms::to_string(planned.choice.fidelity));
    }
  }
  // P2 and P3, the routes. Per link direction: the replicas whose own flows
  // can cross it, and the first and last links of those routes.
  struct LinkUse {
    int replica = -1;
    bool shared = false;
    bool collective = false;  // a collective of one replica can cross it
    std::unordered_set<Link*> first, last;
  };
  std::unordered_map<Link*, LinkUse> use;
  std::set<std::pair<int, int>> pairs;                 // every replica's, distinct
  std::set<std::pair<int, int>> representative_pairs;  // rest[0]'s
  {
    std::vector<std::pair<int, int>> scratch;
    std::vector<char> group_done(groups.size(), 0);
    for (TaskId id = 0; id < n; ++id) {
      const Task& t = graph[id];
      if (out.across[id])
        continue;
      if (t.kind == TaskKind::collective) {
        const auto c = static_cast<std::size_t>(canonical[static_cast<std::size_t>(t.group)]);
        if (group_done[c]++)
          continue;
      }
      scratch.clear();
      flow_pairs(graph, zone, t, scratch);
      for (const auto& p : scratch) {
        if (!pairs.insert(p).second)
          continue;
        const int r = home(id);
        if (r == rest.front())
          representative_pairs.insert(p);
        const auto w = walk(zone, p.first, p.second);
        for (Link* link : w.links) {
          auto& u = use[link];
          if (u.replica >= 0 && u.replica != r)
            u.shared = true;
          u.replica = r;
          u.collective = u.collective || t.kind == TaskKind::collective;
          u.first.insert(w.links.front());
          u.last.insert(w.links.back());
        }
      }
    }
  }
  // In link name order, so that the summary names the same link each run.
  std::vector<std::pair<std::string, Link*>> shared_links;
  for (const auto& [link, u] : use)
    if (u.shared)
      shared_links.emplace_back(link->get_name(), link);
  std::sort(shared_links.begin(), shared_links.end());
  for (const auto& [name, link] : shared_links) {
    const auto& u = use.at(link);
    // The automatic fidelity decides whether a collective runs alone from
    // the claims on its links, which on a shared link are not its images'.
    if (u.collective)
      return fmt::format(
          "link {} carries flows of several replicas and a collective of one replica can cross it, whose "
          "images would see other claims on their links (P2)",
          link->get_name());
    const auto sum = [](const std::unordered_set<Link*>& links) {
      std::vector<double> bandwidths;
      for (const Link* l : links)
        bandwidths.push_back(l->get_bandwidth());
      std::sort(bandwidths.begin(), bandwidths.end());  // one order of the sum, whatever the set's
      double s = 0;
      for (const double b : bandwidths)
        s += b;
      return s;
    };
    const double feed = std::min(sum(u.first), sum(u.last));
    if (feed > link->get_bandwidth() * (1 + kCapacitySlack))
      return fmt::format(
          "link {} carries flows of several replicas and could bind them (its {:.4g} GB/s against {:.4g} "
          "GB/s "
          "that can reach it, P2)",
          link->get_name(), link->get_bandwidth() / 1e9, feed / 1e9);
  }
  // P3 on the routes: the representative's routes onto each image's, link
  // by link (same bandwidth; a link no other replica crosses onto one such,
  // one to one), at the same latency.
  {
    const auto shared = [&](Link* l) {
      const auto it = use.find(l);
      return it != use.end() && it->second.shared;
    };
    std::vector<int> endpoint_step(static_cast<std::size_t>(gpu_count + domains));
    for (int g = 0; g < gpu_count; ++g)
      endpoint_step[static_cast<std::size_t>(g)] = gpu_image[static_cast<std::size_t>(g)];
    for (int d = 0; d < domains; ++d)
      endpoint_step[static_cast<std::size_t>(zone.switch_endpoint(d))] =
          zone.switch_endpoint(domain_image[static_cast<std::size_t>(d)]);
    std::vector<std::pair<int, int>> images(representative_pairs.begin(), representative_pairs.end());
    std::vector<Walk> from;
    from.reserve(images.size());
    for (const auto& p : images)
      from.push_back(walk(zone, p.first, p.second));
    for (int k = 1; k < m; ++k) {
      std::unordered_map<Link*, Link*> onto, back;
      for (std::size_t i = 0; i < images.size(); ++i) {
        auto& p = images[i];
        p = {endpoint_step[static_cast<std::size_t>(p.first)],
             endpoint_step[static_cast<std::size_t>(p.second)]};
        const auto w = walk(zone, p.first, p.second);
        const auto& a = from[i];
        if (w.links.size() != a.links.size() || bits(w.latency_s) != bits(a.latency_s))
          return fmt::format(
              "the route {} -> {} is no image of the representative's (its length or latency differ)",
              p.first, p.second);
        for (std::size_t j = 0; j < w.links.size(); ++j) {
          Link* x = a.links[j];
          Link* y = w.links[j];
          if (bits(x->get_bandwidth()) != bits(y->get_bandwidth()) || shared(x) != shared(y))
            return fmt::format("link {} of a route of replica {} has no like image ({})", x->get_name(),
                               rest.front(), y->get_name());
          if (shared(x))
            continue;
          const auto f = onto.emplace(x, y).first;
          const auto b = back.emplace(y, x).first;
          if (f->second != y || b->second != x)
            return fmt::format("the links of replica {} do not map one to one onto replica {}'s ({} and {})",
                               rest.front(), rest[static_cast<std::size_t>(k)], x->get_name(), y->get_name());
        }
      }
    }
  }
  // The fold.
  out.replicas = dp;
  out.period = 0;
  out.order = m;
  out.classes = true;
  out.spanning.assign(n, 0);
  out.simulated.assign(n, 0);
  out.simulated_count = 0;
  const auto replayed_replica = [&](int r) {
    return r == rest.front() || perturbed[static_cast<std::size_t>(r)];
  };
  for (TaskId id = 0; id < n; ++id)
    if (out.across[id] || replayed_replica(home(id))) {
      out.simulated[id] = 1;
      ++out.simulated_count;
    }
  const int endpoints = gpu_count + domains;
  out.endpoint_image.assign(static_cast<std::size_t>(endpoints), 0);
  out.representative.assign(static_cast<std::size_t>(endpoints), 0);
  for (int g = 0; g < gpu_count; ++g) {
    out.endpoint_image[static_cast<std::size_t>(g)] = gpu_image[static_cast<std::size_t>(g)];
    out.representative[static_cast<std::size_t>(g)] = replayed_replica(replica(g));
  }
  for (int d = 0; d < domains; ++d)
    out.endpoint_image[static_cast<std::size_t>(zone.switch_endpoint(d))] =
        zone.switch_endpoint(domain_image[static_cast<std::size_t>(d)]);
  for (int g = 0; g < gpu_count; ++g)
    if (out.representative[static_cast<std::size_t>(g)])
      out.representative[static_cast<std::size_t>(zone.switch_endpoint(zone.domain_of(g)))] = 1;
  // The summary's words: the issue's "replica 17 holds the slow GPU 1093:
  // simulated on its own".
  std::string held;
  for (int r : alone) {
    std::vector<int> gpus;
    for (int g : perturbed_gpus)
      if (replica(g) == r)
        gpus.push_back(g);
    held += fmt::format("{}replica {} holds the perturbed GPU{} {}: simulated on its own",
                        held.empty() ? "" : "; ", r, gpus.size() == 1 ? "" : "s", fmt::join(gpus, ", "));
  }
  why = fmt::format(
      "{} data-parallel replicas in {} classes: {}; the other {} replicas are images of replica {} (their "
      "tasks, GPUs and routes relabelled onto its own), replica {} replayed for them; {} collective{} across "
      "replicas run whole, each checked to run `isolated` (ending at one instant for all members); the links "
      "several replicas share cannot bind; {} of {} tasks replayed",
      dp, alone.size() + 1, held, m, rest.front(), rest.front(), across_count, across_count == 1 ? "" : "s",
      out.simulated_count, n);
  return {};
}

}  // namespace trainsim::sim
