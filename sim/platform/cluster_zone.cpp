#include "sim/platform/cluster_zone.hpp"

#include <fmt/format.h>
#include <simgrid/kernel/routing/NetPoint.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

#include "sim/platform/platform_arena.hpp"

namespace trainsim::sim {
namespace sg = simgrid::s4u;
namespace kr = simgrid::kernel::routing;
using platforms::NodeShape;

namespace {

// prefix, n, suffix: a host's or link's name without fmt's format parsing
// (the zone names tens of thousands of them).
std::string numbered(std::string_view prefix, int n, std::string_view suffix) {
  std::string name(prefix);
  name += std::to_string(n);
  name += suffix;
  return name;
}

}  // namespace

ClusterZone::ClusterZone(const platforms::ClusterSpec& spec, std::vector<std::vector<double>> speed_factors)
    : NetZoneImpl("cluster"), spec_(spec), speed_factors_(std::move(speed_factors)) {
  const int nodes = spec.node_count();
  for (const auto& group : spec.groups)
    if (group.gpus_per_domain() % group.gpus_per_node != 0 ||
        (group.nodes_per_domain() > 1 && group.shape != NodeShape::nvswitch))
      throw std::invalid_argument(
          fmt::format("an NVLink domain of {} GPUs needs nvswitch nodes of a divisor of it ({} {} GPUs)",
                      group.gpus_per_domain(), group.gpus_per_node, to_string(group.shape)));
  fabric_ = platforms::make_fabric_layout(spec_);
  // The hosts and links in the platform's own chunks (platform_arena.hpp),
  // which go back to the system only if all they hold dies with the
  // engine: not SimGrid's models, set up by NetZoneImpl's constructor
  // above, which hook callbacks that outlive the engine, nor the fabric's
  // layout, whose first use fills a table kept for the process.
  const PlatformArena::Building building;
  gpu_.resize(static_cast<std::size_t>(spec.gpu_count()));
  node_.resize(static_cast<std::size_t>(nodes));
  for (int node = 0; node < nodes; ++node) {
    const int group = spec.group_of_node(node);
    node_[static_cast<std::size_t>(node)].group = group;
    node_[static_cast<std::size_t>(node)].first_gpu = spec.first_gpu_of_node(node);
    node_[static_cast<std::size_t>(node)].domain = spec.domain_of_node(node);
    build_node(node, spec.groups[static_cast<std::size_t>(group)]);
  }
  // NVLS switches, one per NVLink domain (named after the node when the
  // domain is one node), come after every GPU, so endpoint ids of GPUs are
  // ranks.
  domain_nvswitch_.assign(static_cast<std::size_t>(spec.domain_count()), nullptr);
  for (int node = 0; node < nodes; ++node) {
    const auto& n = node_[static_cast<std::size_t>(node)];
    const auto& group = spec.groups[static_cast<std::size_t>(n.group)];
    auto& nvswitch = domain_nvswitch_[static_cast<std::size_t>(n.domain)];
    if (group.shape != NodeShape::nvswitch || !group.nvls || nvswitch != nullptr)
      continue;
    nvswitch = create_host(group.nodes_per_domain() == 1 ? fmt::format("node{}-nvswitch", node)
                                                         : fmt::format("domain{}-nvswitch", n.domain),
                           {1e12});
    nvswitch->seal();
    const auto id = nvswitch->get_netpoint()->id();
    if (endpoint_of_netpoint_.size() <= id)
      endpoint_of_netpoint_.resize(id + 1, -1);
    endpoint_of_netpoint_[id] = switch_endpoint(n.domain);
  }
  build_fabric();
  seal();
}

std::uint32_t ClusterZone::duplex(const std::string& name, double bandwidth_Bps) {
  // Left with SimGrid's default latency, 0 (route latencies are computed per
  // route in walk()), and sealed with the zone (seal() seals every link
  // again: once is enough).
  auto* link = create_split_duplex_link(name, {bandwidth_Bps});
  const auto index = static_cast<std::uint32_t>(duplexes_.size());
  duplexes_.push_back(link);
  directions_.push_back(link->get_link_up());
  directions_.push_back(link->get_link_down());
  return index;
}

// One node: its GPUs (hosts), their NVSwitch ports, cube-mesh lanes or mesh
// links, their PCIe links, and its NICs.
//
//   nvswitch: gpuN-nvlink     cube_mesh: nodeN-nvlinkA-B     pcie: gpuN-pcie
//   GPU ==|                   GPU0 ==2== GPU3                GPU --|
//   GPU ==|== [NVSwitch]        |  \1  1/  |                  GPU --|-- [PCIe switch] -- nodeN-nicK
//   GPU ==|                   GPU1 ==2== GPU2 ...            GPU --|
//
//   full_mesh: nodeN-meshA-B, one link per pair (MI300X: 7 per GPU)
//   GPU0 ---- GPU1
//    |  \    /  |     every pair direct, nvlink.bandwidth / (g - 1) each
//    |   \  /   |     GPU -> NIC over PCIe (gpuN-pcie)
//   GPU3 ---- GPU2 ...
void ClusterZone::build_node(int node, const platforms::NodeGroup& group) {
  if (group.shape != NodeShape::nvswitch && group.pcie.effective_Bps() <= 0)
    throw std::invalid_argument(fmt::format("node shape {} needs a PCIe bandwidth", to_string(group.shape)));
  auto& n = node_[static_cast<std::size_t>(node)];
  const double nic_Bps = group.nic.bandwidth_Bps * spec_.fabric.efficiency;
  // A spec without PCIe bandwidth (hand-built test clusters) leaves PCIe out.
  n.pcie_on_nic_route = group.pcie.effective_Bps() > 0 &&
                        (group.shape != NodeShape::nvswitch || group.pcie.effective_Bps() < nic_Bps);
  for (int local = 0; local < group.gpus_per_node; ++local) {
    const int id = n.first_gpu + local;
    auto& gpu = gpu_[static_cast<std::size_t>(id)];
    gpu.node = node;
    gpu.local_rank = local;
    gpu.nic_index = group.nic_of(local);
    std::vector<double> speeds{group.gpu.peak_bf16_flops};
    if (static_cast<std::size_t>(id) < speed_factors_.size())
      for (double factor : speed_factors_[static_cast<std::size_t>(id)])
        speeds.push_back(group.gpu.peak_bf16_flops * factor);
    gpu.host = create_host(numbered("gpu", id, ""), speeds);
    gpu.host->seal();
    const auto netpoint = gpu.host->get_netpoint()->id();
    if (endpoint_of_netpoint_.size() <= netpoint)
      endpoint_of_netpoint_.resize(netpoint + 1, -1);
    endpoint_of_netpoint_[netpoint] = id;
    if (group.shape == NodeShape::nvswitch)
      gpu.nvlink = duplex(numbered("gpu", id, "-nvlink"), group.nvlink.effective_Bps());
    if (n.pcie_on_nic_route || (group.shape != NodeShape::nvswitch && group.pcie.effective_Bps() > 0))
      gpu.pcie = duplex(numbered("gpu", id, "-pcie"), group.pcie.effective_Bps());
  }
  for (int k = 0; k < group.nics_per_node; ++k)
    n.nics.push_back(duplex(numbered("node", node, "-nic") + std::to_string(k), nic_Bps));
  if (group.shape == NodeShape::cube_mesh) {
    const int g = group.gpus_per_node;
    n.lanes.assign(static_cast<std::size_t>(g * g), kNoLink);
    const double lane_Bps = group.nvlink.effective_Bps() / platforms::kCubeMeshLanesPerGpu;
    for (int a = 0; a < g; ++a)
      for (int b = a + 1; b < g; ++b)
        if (const int lanes = platforms::cube_mesh_lanes(a, b); lanes > 0)
          n.lanes[static_cast<std::size_t>(a * g + b)] =
              duplex(fmt::format("node{}-nvlink{}-{}", node, a, b), lanes * lane_Bps);
  }
  if (group.shape == NodeShape::full_mesh) {
    // Every pair its own link: the GPU's total split over its g - 1 peers.
    const int g = group.gpus_per_node;
    n.lanes.assign(static_cast<std::size_t>(g * g), kNoLink);
    const double link_Bps = group.nvlink.effective_Bps() / std::max(g - 1, 1);
    for (int a = 0; a < g; ++a)
      for (int b = a + 1; b < g; ++b)
        n.lanes[static_cast<std::size_t>(a * g + b)] =
            duplex(fmt::format("node{}-mesh{}-{}", node, a, b), link_Bps);
  }
}

void ClusterZone::build_fabric() {
  for (const auto& link : fabric_->links())
    fabric_links_.push_back(duplex(link.name, link.bandwidth_Bps));
}

const platforms::NodeGroup& ClusterZone::group_of_node(int node) const {
  return spec_.groups[static_cast<std::size_t>(node_[static_cast<std::size_t>(node)].group)];
}

bool ClusterZone::has_nvls(int domain) const {
  return domain_nvswitch_[static_cast<std::size_t>(domain)] != nullptr;
}

sg::Host* ClusterZone::endpoint_host(int endpoint) const {
  if (endpoint < gpu_count())
    return host(endpoint);
  auto* h = domain_nvswitch_.at(static_cast<std::size_t>(endpoint - gpu_count()));
  if (h == nullptr)
    throw std::logic_error("an in-switch reduction on a node without NVLS");
  return h;
}

int ClusterZone::nvlink_lanes(int gpu_a, int gpu_b) const {
  if (node_of(gpu_a) != node_of(gpu_b) || group_of_node(node_of(gpu_a)).shape != NodeShape::cube_mesh)
    return 0;
  return platforms::cube_mesh_lanes(local_rank(gpu_a), local_rank(gpu_b));
}

template <class F>
double ClusterZone::walk(int src, int dst, F&& visit) const {
  const auto on = [&visit](std::uint32_t link, bool up) {
    if constexpr (!std::is_same_v<std::decay_t<F>, NoVisit>)
      visit(2 * link + (up ? 0 : 1));
  };
  const int gpus = gpu_count();
  if (src >= gpus || dst >= gpus) {
    // In-switch reduction: GPU <-> its node's NVSwitch, over the GPU's port.
    const int gpu = src >= gpus ? dst : src;
    const auto& g = gpu_[static_cast<std::size_t>(gpu)];
    on(g.nvlink, src < gpus);
    return group_of_node(g.node).nvlink.latency_s;
  }
  const auto& a = gpu_[static_cast<std::size_t>(src)];
  const auto& b = gpu_[static_cast<std::size_t>(dst)];
  const auto& na = node_[static_cast<std::size_t>(a.node)];
  const auto& nb = node_[static_cast<std::size_t>(b.node)];
  const auto& group_a = spec_.groups[static_cast<std::size_t>(na.group)];
  if (a.node != b.node && na.domain == nb.domain) {
    // Two trays of one NVLink domain: through the NVLink Switch trays.
    on(a.nvlink, true);
    on(b.nvlink, false);
    return group_a.nvlink.latency_s;
  }
  if (a.node == b.node) {
    switch (group_a.shape) {
      case NodeShape::nvswitch:
        on(a.nvlink, true);
        on(b.nvlink, false);
        return group_a.nvlink.latency_s;
      case NodeShape::full_mesh:
      case NodeShape::cube_mesh: {
        const int g = group_a.gpus_per_node;
        const int lo = std::min(a.local_rank, b.local_rank), hi = std::max(a.local_rank, b.local_rank);
        if (const auto lane = na.lanes[static_cast<std::size_t>(lo * g + hi)]; lane != kNoLink) {
          on(lane, a.local_rank < b.local_rank);
          return group_a.nvlink.latency_s;
        }
        [[fallthrough]];
      }
      case NodeShape::pcie:
        on(a.pcie, true);
        on(b.pcie, false);
        return group_a.pcie.latency_s;
    }
  }
  const auto& group_b = spec_.groups[static_cast<std::size_t>(nb.group)];
  if (na.pcie_on_nic_route)
    on(a.pcie, true);
  on(na.nics[static_cast<std::size_t>(a.nic_index)], true);
  hops_.clear();
  const double fabric_s = fabric_->route(a.node, a.nic_index, b.node, b.nic_index, hops_);
  for (const auto& hop : hops_)
    on(fabric_links_[hop.link], hop.up);
  on(nb.nics[static_cast<std::size_t>(b.nic_index)], false);
  if (nb.pcie_on_nic_route)
    on(b.pcie, false);
  return (group_a.nic.latency_s + group_b.nic.latency_s) / 2 + fabric_s;
}

void ClusterZone::get_local_route(const kr::NetPoint* src, const kr::NetPoint* dst, kr::Route* into,
                                  double* latency) {
  const int a = endpoint_of_netpoint_[src->id()];
  const int b = endpoint_of_netpoint_[dst->id()];
  const std::uint64_t key =
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
  RouteMemo* memo = expected_;
  expected_ = nullptr;
  if (memo != nullptr && (expected_src_ != a || expected_dst_ != b))
    memo = nullptr;
  const KernelRoute* known =
      memo != nullptr && memo->generation_ == routes_generation_ ? &memo->route_ : nullptr;
  if (known == nullptr) {
    auto [it, first_use] = kernel_routes_.try_emplace(key);
    KernelRoute& fresh = it->second;
    if (first_use) {
      fresh.first = static_cast<std::uint32_t>(kernel_hops_.size());
      fresh.latency_s = walk(a, b, [this](std::uint32_t d) {
        kernel_hops_.push_back({directions_[representative(d)]->get_impl(), directions_[d]});
      });
      fresh.count = static_cast<std::uint32_t>(kernel_hops_.size() - fresh.first);
    }
    known = &fresh;
    if (memo != nullptr) {
      memo->route_ = fresh;
      memo->generation_ = routes_generation_;
    }
  }
  const KernelRoute& route = *known;
  // Links carry no latency of their own (see duplex()) unless a perturbation
  // adds some to one (sim/perturbations/driver.hpp).
  // (Until a perturbation changes one, every link's latency is 0: not read.)
  double added_s = 0;
  const auto* hop = kernel_hops_.data() + route.first;
  const auto* end = hop + route.count;
  if (!link_latency_changed_) {
    for (; hop != end; ++hop)
      into->link_list_.push_back(hop->shared);
  } else {
    for (; hop != end; ++hop) {
      into->link_list_.push_back(hop->shared);
      added_s += hop->own->get_latency();
    }
  }
  if (latency != nullptr)
    *latency += route.latency_s + added_s;
}

double ClusterZone::for_each_link(int src, int dst, const std::function<void(sg::Link*)>& visit) const {
  if (walk_log_ != nullptr)
    walk_log_->emplace_back(src, dst);
  return walk(src, dst, [this, &visit](std::uint32_t d) { visit(directions_[representative(d)]); });
}

double ClusterZone::route_directions(int src, int dst, std::vector<std::uint32_t>& out) const {
  if (walk_log_ != nullptr)
    walk_log_->emplace_back(src, dst);
  return walk(src, dst, [this, &out](std::uint32_t d) { out.push_back(representative(d)); });
}

double ClusterZone::for_each_true_link(int src, int dst, const std::function<void(sg::Link*)>& visit) const {
  return walk(src, dst, [this, &visit](std::uint32_t d) { visit(directions_[d]); });
}

std::vector<std::uint32_t> ClusterZone::duplex_images(const std::vector<int>& gpu_image,
                                                      std::string& problem) const {
  const auto gpus = gpu_.size();
  if (gpu_image.size() != gpus)
    throw std::logic_error("a GPU permutation of another size than the cluster");
  std::vector<int> node_image(node_.size(), -1);
  std::vector<int> domain_image(static_cast<std::size_t>(spec_.domain_count()), -1);
  for (std::size_t g = 0; g < gpus; ++g) {
    const auto h = static_cast<std::size_t>(gpu_image[g]);
    const auto& a = gpu_[g];
    const auto& b = gpu_[h];
    const auto& na = node_[static_cast<std::size_t>(a.node)];
    const auto& nb = node_[static_cast<std::size_t>(b.node)];
    if (na.group != nb.group || a.local_rank != b.local_rank || a.nic_index != b.nic_index) {
      problem = fmt::format("GPU {} would map onto GPU {}, of another node group, local rank or NIC", g, h);
      return {};
    }
    auto& node_to = node_image[static_cast<std::size_t>(a.node)];
    auto& domain_to = domain_image[static_cast<std::size_t>(na.domain)];
    if ((node_to >= 0 && node_to != b.node) || (domain_to >= 0 && domain_to != nb.domain)) {
      problem = fmt::format("the GPUs of node {} would map onto several nodes or NVLink domains", a.node);
      return {};
    }
    node_to = b.node;
    domain_to = nb.domain;
  }
  std::vector<std::size_t> fabric_image;
  problem = fabric_->link_images(node_image, fabric_image);
  if (!problem.empty()) {
    problem =
        fmt::format("the {} fabric does not map onto itself: {}", to_string(spec_.fabric.topology), problem);
    return {};
  }
  std::vector<std::uint32_t> image(duplexes_.size());
  for (std::uint32_t i = 0; i < image.size(); ++i)
    image[i] = i;
  const auto map = [&](std::uint32_t from, std::uint32_t to) {
    if (from != kNoLink && to != kNoLink)
      image[from] = to;
  };
  for (std::size_t g = 0; g < gpus; ++g) {
    map(gpu_[g].nvlink, gpu_[static_cast<std::size_t>(gpu_image[g])].nvlink);
    map(gpu_[g].pcie, gpu_[static_cast<std::size_t>(gpu_image[g])].pcie);
  }
  for (std::size_t n = 0; n < node_.size(); ++n) {
    const auto& from = node_[n];
    const auto& to = node_[static_cast<std::size_t>(node_image[n])];
    for (std::size_t k = 0; k < from.nics.size(); ++k)
      map(from.nics[k], to.nics[k]);
    for (std::size_t k = 0; k < from.lanes.size(); ++k)
      map(from.lanes[k], to.lanes[k]);
  }
  for (std::size_t f = 0; f < fabric_links_.size(); ++f)
    map(fabric_links_[f], fabric_links_[fabric_image[f]]);
  return image;
}

std::string ClusterZone::automorphism_problem(const std::vector<int>& gpu_image) const {
  std::string problem;
  duplex_images(gpu_image, problem);
  return problem;
}

std::vector<const sg::Link*> ClusterZone::short_orbits(const std::vector<int>& gpu_image, int order) const {
  std::string problem;
  const auto image = duplex_images(gpu_image, problem);
  if (!problem.empty())
    throw std::logic_error("short_orbits of a permutation that is no automorphism: " + problem);
  std::vector<const sg::Link*> links;
  for (std::uint32_t d = 0; d < image.size(); ++d) {
    int size = 1;
    for (std::uint32_t e = image[d]; e != d && size <= order; e = image[e])
      ++size;
    if (size < order) {
      links.push_back(duplexes_[d]->get_link_up());
      links.push_back(duplexes_[d]->get_link_down());
    }
  }
  return links;
}

void ClusterZone::fold_links(const std::vector<int>& gpu_image) {
  // Routes now cross orbit representatives: the tuner's loads change, and
  // so do the links SimGrid shares.
  forget_tuner_choices();
  kernel_routes_.clear();
  kernel_hops_.clear();
  ++routes_generation_;
  std::string problem;
  auto image = duplex_images(gpu_image, problem);
  if (!problem.empty())
    throw std::logic_error("fold_links with a permutation that is no automorphism: " + problem);
  duplex_rep_.assign(image.size(), 0);
  std::vector<char> seen(image.size(), 0);
  for (std::uint32_t d = 0; d < image.size(); ++d) {
    if (seen[d])
      continue;
    // Orbits are visited from their first-created member: it represents them.
    for (std::uint32_t e = d; !seen[e]; e = image[e]) {
      seen[e] = 1;
      duplex_rep_[e] = d;
    }
  }
  domain_image_.assign(static_cast<std::size_t>(spec_.domain_count()), 0);
  for (std::size_t g = 0; g < gpu_.size(); ++g)
    domain_image_[static_cast<std::size_t>(domain_of(static_cast<int>(g)))] = domain_of(gpu_image[g]);
  duplex_image_ = std::move(image);
}

sg::Link* ClusterZone::link_image(const sg::Link* link) const {
  // By address (std::less orders any pointers).
  const auto before = [](const std::pair<const sg::Link*, std::uint32_t>& a, const sg::Link* b) {
    return std::less<const sg::Link*>{}(a.first, b);
  };
  if (direction_of_.empty()) {
    direction_of_.reserve(directions_.size());
    for (std::uint32_t d = 0; d < directions_.size(); ++d)
      direction_of_.emplace_back(directions_[d], d);
    std::sort(direction_of_.begin(), direction_of_.end(),
              [&before](const auto& a, const auto& b) { return before(a, b.first); });
  }
  const auto it = std::lower_bound(direction_of_.begin(), direction_of_.end(), link, before);
  if (it == direction_of_.end() || it->first != link)
    throw std::out_of_range("link_image of a link outside the zone");
  const std::uint32_t index = it->second / 2;
  return directions_[2 * (folded() ? duplex_image_[index] : index) + it->second % 2];
}

ClusterZone::Path ClusterZone::path(int src, int dst) const {
  Path p;
  p.bandwidth_Bps = std::numeric_limits<double>::infinity();
  std::vector<sg::Link*> links;
  p.latency_s = walk(src, dst, [this, &links](std::uint32_t d) { links.push_back(directions_[d]); });
  // A link listed m times (ECMP sub-flows on one plane,
  // platforms/fabrics/ecmp.hpp) gives the transfer 1/m of it.
  for (auto* link : links)
    p.bandwidth_Bps =
        std::min(p.bandwidth_Bps,
                 link->get_bandwidth() / static_cast<double>(std::count(links.begin(), links.end(), link)));
  p.links = static_cast<int>(links.size());
  return p;
}

double ClusterZone::latency_s(int src, int dst) const {
  if (walk_log_ != nullptr)
    walk_log_->emplace_back(src, dst);
  return walk(src, dst, NoVisit{});
}

std::string ClusterZone::route_figures(const std::vector<std::pair<int, int>>& walks) const {
  std::string out;
  out.reserve(walks.size() * 32);
  // Each direction's label, by direction (kNoLink: not met yet); the
  // directions met, to clear theirs after.
  auto& label = figure_labels_;
  label.resize(directions_.size(), kNoLink);
  std::vector<std::uint32_t> met;
  const auto put = [&out](const auto& value) {
    out.append(reinterpret_cast<const char*>(&value), sizeof(value));
  };
  for (const auto& [src, dst] : walks) {
    const double latency = walk(src, dst, [&](std::uint32_t d) {
      const auto seen = representative(d);
      if (label[seen] == kNoLink) {
        label[seen] = static_cast<std::uint32_t>(met.size());
        met.push_back(seen);
        put(label[seen]);
        put(directions_[seen]->get_bandwidth());
      } else {
        put(label[seen]);
      }
    });
    // The route's end, so that routes of other lengths never read alike.
    put(kNoLink);
    put(latency);
  }
  for (const auto d : met)
    label[d] = kNoLink;
  return out;
}

std::vector<std::string> ClusterZone::route_names(int src, int dst) const {
  std::vector<std::string> names;
  walk(src, dst, [this, &names](std::uint32_t d) { names.push_back(directions_[d]->get_name()); });
  return names;
}

}  // namespace trainsim::sim
