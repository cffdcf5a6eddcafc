// make_collective(): from (op, group, size, algorithm) to flows. The
// algorithms (one file each in sim/collectives/algorithms/) are listed in
// algorithm_table() with their traits; this file picks one, NCCL-style, and
// turns its Expansion (sim/collectives/expansion.hpp) into the flows of the
// fidelity asked for.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "sim/collectives/expansion.hpp"
#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {

const std::vector<AlgorithmTraits>& algorithm_table() {
  static const std::vector<AlgorithmTraits> table{
      ring_traits(),         tree_traits(),   nvls_tree_traits(), nvls_traits(),
      hierarchical_traits(), direct_traits(), p2p_ring_traits(),  deepep_traits()};
  return table;
}

const AlgorithmTraits& traits_of(platforms::CollectiveAlgorithm algorithm) {
  // `auto` is resolved before anything expands; a ring stands for it.
  if (algorithm == platforms::CollectiveAlgorithm::automatic)
    algorithm = platforms::CollectiveAlgorithm::ring;
  for (const auto& traits : algorithm_table())
    if (traits.algorithm == algorithm)
      return traits;
  throw std::logic_error(fmt::format("algorithm_table: no entry for {}", to_string(algorithm)));
}

namespace {

using platforms::CollectiveAlgorithm;
using platforms::Fidelity;
using workloads::CollectiveOp;

bool runs(const AlgorithmTraits& traits, CollectiveOp op) {
  return std::find(traits.ops.begin(), traits.ops.end(), op) != traits.ops.end();
}

// The algorithms that apply to this op and group, NCCL's first.
std::vector<CollectiveAlgorithm> applicable(CollectiveOp op, const GroupLayout& layout,
                                            const ClusterZone& zone) {
  std::vector<CollectiveAlgorithm> out;
  for (const auto& traits : algorithm_table())
    if (!traits.only_when_asked && runs(traits, op) && traits.unavailable(op, layout, zone).empty())
      out.push_back(traits.algorithm);
  return out;
}

Expansion expand(CollectiveAlgorithm algorithm, CollectiveOp op, const GroupLayout& layout, double bytes,
                 const ClusterZone& zone) {
  return traits_of(algorithm).expand(op, layout, bytes, zone);
}

struct Resolved {
  CollectiveAlgorithm algorithm;
  std::vector<AlgorithmEstimate> estimates;
};

Resolved resolve(const CollectiveRequest& request, const GroupLayout& layout, const ClusterZone& zone,
                 bool want_estimates) {
  // What only runs when asked (a workload's plain send/recv ring) is what it
  // is: no tuning.
  if (request.algorithm != CollectiveAlgorithm::automatic) {
    const auto& traits = traits_of(request.algorithm);
    if (traits.only_when_asked && runs(traits, request.op))
      return {request.algorithm, {}};
  }
  const auto candidates = applicable(request.op, layout, zone);
  const auto asked = request.algorithm != CollectiveAlgorithm::automatic ? request.algorithm
                                                                         : zone.spec().collectives.algorithm;
  Resolved r{candidates.front(), {}};
  if (candidates.size() == 1 && !want_estimates)
    return r;
  const bool honoured = asked != CollectiveAlgorithm::automatic &&
                        std::find(candidates.begin(), candidates.end(), asked) != candidates.end();
  if (honoured && !want_estimates) {
    r.algorithm = asked;
    return r;
  }
  double best = 0;
  for (auto algorithm : candidates) {
    const double t = estimate(expand(algorithm, request.op, layout, request.bytes, zone), zone);
    r.estimates.push_back({algorithm, t});
    if (!traits_of(algorithm).tuner_considers(layout))
      continue;
    if (r.estimates.size() == 1 || t < best) {
      best = t;
      r.algorithm = algorithm;
    }
  }
  if (honoured)
    r.algorithm = asked;
  return r;
}

// What a request's plan is made of at any fidelity: the group laid out, the
// algorithm chosen and expanded (one pass, and the folded passes).
struct Expanded {
  platforms::CollectiveAlgorithm algorithm;
  Expansion single;
  Expansion pass;
};

// What the collectives remember of a zone (ClusterZone::collectives_memo,
// forgotten when its links change). by_group: the tuner's choice by (op,
// algorithm asked, bytes, group). by_shape: by a group's shape
// (GroupShape::key), each choice with the routes it walked, in the shape's
// terms, and what they read (ClusterZone::route_figures). expansions: by
// (op, algorithm asked, bytes, fold, group), what the replay's estimate and
// the replay itself both plan.
struct Memo {
  struct Shaped {
    std::vector<std::pair<int, int>> walks;
    std::string figures;
    CollectiveAlgorithm algorithm;
  };
  std::unordered_map<std::string, CollectiveAlgorithm> by_group;
  std::unordered_map<std::string, std::vector<Shaped>> by_shape;
  std::unordered_map<std::string, Expanded> expansions;
};

Memo& memo_of(const ClusterZone& zone) {
  auto& slot = zone.collectives_memo();
  if (!slot)
    slot = std::make_shared<Memo>();
  return *static_cast<Memo*>(slot.get());
}

void append_bytes(std::string& key, const auto& value) {
  key.append(reinterpret_cast<const char*>(&value), sizeof(value));
}

// (op, algorithm asked, bytes, group): what resolve() reads of a request.
std::string request_key(const CollectiveRequest& request) {
  std::string key;
  key.reserve(2 + sizeof(double) + sizeof(int) + request.gpus.size() * sizeof(int));
  key.push_back(static_cast<char>(request.op));
  key.push_back(static_cast<char>(request.algorithm));
  append_bytes(key, request.bytes);
  key.append(reinterpret_cast<const char*>(request.gpus.data()), request.gpus.size() * sizeof(int));
  return key;
}

// The index of a node's group in the cluster's spec.
int group_index(int node, const ClusterZone& zone) {
  return static_cast<int>(&zone.group_of_node(node) - zone.spec().groups.data());
}

// A group named by ranks within itself: its distinct GPUs and NVLink domains
// in increasing order, so that an endpoint of the tuner's walks (a member,
// or the NVSwitch of a member's domain) is named alike in every group of the
// shape; and the shape's key: what the tuner reads of the group besides its
// routes, with GPUs, nodes and domains named by rank (so that comparing or
// ordering them compares as in any other group of the shape).
struct GroupShape {
  std::vector<int> gpus;     // distinct, increasing
  std::vector<int> domains;  // distinct, increasing
  std::string key;

  GroupShape(const CollectiveRequest& request, const ClusterZone& zone) {
    gpus = request.gpus;
    std::sort(gpus.begin(), gpus.end());
    gpus.erase(std::unique(gpus.begin(), gpus.end()), gpus.end());
    std::vector<int> nodes;
    for (int gpu : gpus) {
      nodes.push_back(zone.node_of(gpu));
      domains.push_back(zone.domain_of(gpu));
    }
    for (auto* ids : {&nodes, &domains}) {
      std::sort(ids->begin(), ids->end());
      ids->erase(std::unique(ids->begin(), ids->end()), ids->end());
    }
    const auto rank = [](const std::vector<int>& ids, int id) {
      return static_cast<int>(std::lower_bound(ids.begin(), ids.end(), id) - ids.begin());
    };
    key.reserve(2 + sizeof(double) + request.gpus.size() * 7 * sizeof(int));
    key.push_back(static_cast<char>(request.op));
    key.push_back(static_cast<char>(request.algorithm));
    append_bytes(key, request.bytes);
    for (int gpu : request.gpus) {
      const int domain = zone.domain_of(gpu);
      const int fields[] = {rank(gpus, gpu),
                            rank(nodes, zone.node_of(gpu)),
                            rank(domains, domain),
                            zone.local_rank(gpu),
                            zone.nic_index(gpu),
                            group_index(zone.node_of(gpu), zone),
                            zone.has_nvls(domain) ? 1 : 0};
      key.append(reinterpret_cast<const char*>(fields), sizeof(fields));
    }
  }

  // An endpoint in the shape's terms, or -1 for one outside the group.
  int name(int endpoint, const ClusterZone& zone) const {
    const bool gpu = endpoint < zone.gpu_count();
    const auto& ids = gpu ? gpus : domains;
    const int id = gpu ? endpoint : endpoint - zone.gpu_count();
    const auto it = std::lower_bound(ids.begin(), ids.end(), id);
    if (it == ids.end() || *it != id)
      return -1;
    return static_cast<int>(it - ids.begin()) + (gpu ? 0 : static_cast<int>(gpus.size()));
  }
  int endpoint(int name, const ClusterZone& zone) const {
    const auto g = static_cast<std::size_t>(name);
    return g < gpus.size() ? gpus[g] : zone.switch_endpoint(domains[g - gpus.size()]);
  }
};

constexpr std::size_t kVariantsPerShape = 4;

// resolve()'s algorithm, remembered by the zone per (op, algorithm asked,
// bytes, group): the same answer, once per distinct collective; and per
// shape of group: resolve() is a function of the request's op, algorithm
// and bytes, of the shape's key and of what its walks of routes read, so a
// group of a known shape whose walks (the same, in the shape's terms) read
// the same figures gets the same answer without expanding anything.
CollectiveAlgorithm chosen_algorithm(const CollectiveRequest& request, const GroupLayout& layout,
                                     const ClusterZone& zone) {
  auto key = request_key(request);
  auto& memo = memo_of(zone);
  if (const auto it = memo.by_group.find(key); it != memo.by_group.end())
    return it->second;

  const GroupShape shape(request, zone);
  auto& alike = memo.by_shape[shape.key];
  std::vector<std::pair<int, int>> walks;
  for (const auto& known : alike) {
    walks.clear();
    for (const auto& [src, dst] : known.walks)
      walks.emplace_back(shape.endpoint(src, zone), shape.endpoint(dst, zone));
    if (zone.route_figures(walks) == known.figures) {
      memo.by_group.emplace(std::move(key), known.algorithm);
      return known.algorithm;
    }
  }

  walks.clear();
  const auto algorithm = [&] {
    struct Logging {
      const ClusterZone& zone;
      ~Logging() { zone.log_walks(nullptr); }
    } logging{zone};
    zone.log_walks(&walks);
    return resolve(request, layout, zone, false).algorithm;
  }();
  // Each distinct walk once, in the order first walked.
  std::vector<std::pair<int, int>> distinct;
  std::unordered_set<std::uint64_t> seen;
  bool in_group = true;
  for (const auto& [src, dst] : walks)
    if (seen.insert(static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32 |
                    static_cast<std::uint32_t>(dst))
            .second)
      distinct.emplace_back(src, dst);
  Memo::Shaped shaped{{}, zone.route_figures(distinct), algorithm};
  for (const auto& [src, dst] : distinct) {
    shaped.walks.emplace_back(shape.name(src, zone), shape.name(dst, zone));
    in_group = in_group && shaped.walks.back().first >= 0 && shaped.walks.back().second >= 0;
  }
  // A few variants of a shape at most: a group is checked against each.
  if (in_group && alike.size() < kVariantsPerShape)
    alike.push_back(std::move(shaped));
  memo.by_group.emplace(std::move(key), algorithm);
  return algorithm;
}

// Why `asked` is not among applicable()'s algorithms, in its terms.
std::string why_not_applicable(CollectiveAlgorithm asked, CollectiveOp op, const GroupLayout& layout,
                               const ClusterZone& zone) {
  const auto& traits = traits_of(asked);
  if (runs(traits, op)) {
    auto reason = traits.unavailable(op, layout, zone);
    return reason.empty() ? fmt::format("{} does not apply here", to_string(asked)) : reason;
  }
  // The ops that have one algorithm name it; the others name what it runs.
  if (op == CollectiveOp::all_to_all || op == CollectiveOp::send_recv)
    return fmt::format("{} runs as direct point-to-point transfers", workloads::to_string(op));
  if (op == CollectiveOp::broadcast)
    return "broadcast runs as a ring";
  std::string ops;
  for (auto o : traits.ops)
    ops += fmt::format("{}{}", ops.empty() ? "" : " and ", workloads::to_string(o));
  return fmt::format("{} is NCCL's algorithm for {} only, not {}", to_string(asked), ops,
                     workloads::to_string(op));
}

}  // namespace

std::string algorithm_unavailable_reason(const CollectiveRequest& request, const ClusterZone& zone) {
  const auto asked = request.algorithm != CollectiveAlgorithm::automatic ? request.algorithm
                                                                         : zone.spec().collectives.algorithm;
  if (asked == CollectiveAlgorithm::automatic || traits_of(asked).only_when_asked)
    return "";
  const auto layout = layout_of(request.gpus, zone);
  const auto candidates = applicable(request.op, layout, zone);
  if (std::find(candidates.begin(), candidates.end(), asked) != candidates.end())
    return "";
  return why_not_applicable(asked, request.op, layout, zone);
}

std::vector<AlgorithmEstimate> estimate_algorithms(const CollectiveRequest& request,
                                                   const ClusterZone& zone) {
  return resolve(request, layout_of(request.gpus, zone), zone, true).estimates;
}

CollectiveAlgorithm resolve_algorithm(const CollectiveRequest& request, const ClusterZone& zone) {
  const auto layout = layout_of(request.gpus, zone);
  return chosen_algorithm(request, layout, zone);
}

platforms::RingProtocol ring_protocol(const CollectiveRequest& request, const ClusterZone& zone) {
  const auto layout = layout_of(request.gpus, zone);
  const auto algorithm = chosen_algorithm(request, layout, zone);
  return expand(algorithm, request.op, layout, request.bytes, zone).protocol;
}

namespace {

// The request's expansion: remembered by the zone unless the request is
// an uneven exchange (whose bytes the key does not hold), else built into
// `fresh`.
const Expanded& expanded(const CollectiveRequest& request, const ClusterZone& zone, Expanded& fresh) {
  if (request.gpus.size() < 2)
    throw std::invalid_argument("a collective needs at least two GPUs");
  std::string key;
  if (request.exchange == nullptr) {
    key = request_key(request);
    append_bytes(key, request.fold);
    if (const auto it = memo_of(zone).expansions.find(key); it != memo_of(zone).expansions.end())
      return it->second;
  }
  const auto layout = layout_of(request.gpus, zone);
  const auto algorithm = chosen_algorithm(request, layout, zone);
  const int fold = std::max(request.fold, 1);

  Expansion single = expand(algorithm, request.op, layout, request.bytes, zone);
  Expansion pass = fold > 1 ? expand(algorithm, request.op, layout, request.bytes * fold, zone) : single;
  if (request.exchange != nullptr) {
    // An uneven exchange: its flows carry the given bytes (all passes);
    // the even expansion of `bytes` still gives the latency terms.
    const auto uneven = traits_of(algorithm).expand_uneven;
    if (uneven == nullptr || request.exchange->send_bytes.size() != layout.gpus.size() * layout.gpus.size())
      throw std::logic_error("an uneven exchange for an algorithm without one, or of the wrong size");
    pass = uneven(layout, *request.exchange, zone);
    fresh = {algorithm, std::move(single), std::move(pass)};
    return fresh;
  }
  return memo_of(zone)
      .expansions.emplace(std::move(key), Expanded{algorithm, std::move(single), std::move(pass)})
      .first->second;
}

CollectivePlan plan_at(const Expanded& e, const CollectiveRequest& request, const ClusterZone& zone,
                       std::optional<platforms::Fidelity> fidelity) {
  auto config = zone.spec().collectives;
  if (fidelity)
    config.fidelity = *fidelity;
  const int fold = std::max(request.fold, 1);
  const Expansion& single = e.single;
  const Expansion& pass = e.pass;

  CollectivePlan plan;
  plan.choice = {e.algorithm, single.channels, config.fidelity};
  for (const auto& phase : pass.phases)
    plan.detailed_flows += phase.detailed_flows;
  plan.extra_latency_s = config.launch_latency_s;
  for (const auto& phase : single.phases)
    plan.extra_latency_s += phase.fixed_latency_s;
  if (fold > 1) {
    double pass_latency_s = config.launch_latency_s;
    for (const auto& phase : single.phases)
      pass_latency_s += phase.latency_s + phase.fixed_latency_s;
    plan.extra_latency_s += (fold - 1) * pass_latency_s;
  }
  // The automatic representation runs the detailed steps (the replay
  // decides whether SimGrid sees them as flows); an algorithm without
  // detailed steps (NVLSTree: its pipeline is in its closed form) runs fast.
  if ((config.fidelity != Fidelity::fast && pass.detailed) || pass.fast_is_detailed) {
    plan.flows = pass.detailed();
    return plan;
  }
  // Fast: one flow per edge with its whole volume, phase after phase; the
  // latency terms beyond the one each flow carries, and the pipelines' fill,
  // are added at the end.
  std::vector<std::unique_ptr<Collective>> phases;
  for (const auto& phase : pass.phases) {
    phases.push_back(make_flow_set(phase.edges));
    plan.extra_latency_s += phase.latency_s - max_latency(phase.edges, zone) +
                            phase.fill_fraction * bandwidth_term_s(phase.edges, zone);
  }
  plan.flows = phases.size() == 1 ? std::move(phases.front()) : make_sequence(std::move(phases));
  return plan;
}

}  // namespace

CollectivePlan make_collective(const CollectiveRequest& request, const ClusterZone& zone,
                               std::optional<platforms::Fidelity> fidelity) {
  Expanded fresh;
  return plan_at(expanded(request, zone, fresh), request, zone, fidelity);
}

PlanAndFastFlows make_collective_counting_fast(const CollectiveRequest& request, const ClusterZone& zone) {
  Expanded fresh;
  const Expanded& e = expanded(request, zone, fresh);
  PlanAndFastFlows out{plan_at(e, request, zone, std::nullopt), std::nullopt};
  // plan_at's fast form: one flow per edge, phase after phase (a phase
  // without edges is skipped), unless the fast form is the step-by-step one.
  if (!e.pass.fast_is_detailed) {
    std::size_t edges = 0;
    for (const auto& phase : e.pass.phases)
      edges += phase.edges.size();
    out.fast_flows = edges;
  }
  return out;
}

}  // namespace trainsim::sim
