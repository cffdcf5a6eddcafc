// fat_tree and rail_optimised: leaves under spines (and, with 3 levels, pods
// under a core). ECMP over the spines is assumed perfectly balanced: a leaf's
// uplinks act as one aggregate link of the leaf's NIC bandwidth divided by the
// oversubscription.
//
//   fat_tree (2 levels)          spine                 aggregate leaf uplinks:
//                       leafA-up /    \ leafB-up       sum of NIC bandwidth / oversubscription
//                        [leaf A]      [leaf B]        nodes_per_leaf nodes per leaf
//                        NIC NIC       NIC NIC
//
//   fat_tree (3 levels)  core                          pod uplinks: sum of leaf uplinks
//                podP-up /    \ podQ-up                / pod_oversubscription
//                   [pod P]    [pod Q]    leaves_per_pod leaves per pod
//                  leaf-up ...            same pod: leaf-up, leaf-down; else via core
//
//   rail_optimised   spine                 rail group g (nodes_per_leaf nodes): NIC k of every
//            rail(g,0)-up  rail(g,7)-up     node on rail switch (g, k). Same rail and group:
//              [rail 0] ... [rail 7]        NIC, NIC; else through the spine.
//              NIC0 of every node
//
// With cluster.fabric.ecmp (platforms/fabrics/ecmp.hpp) each aggregate
// uplink is `planes` links instead, leafL-plane{s}-uplink and
// podP-plane{s}-uplink, and a transfer crosses the planes its sub-flows hash
// to (each once per sub-flow on it).
#include <fmt/format.h>

#include <algorithm>

#include "platforms/fabric_layout.hpp"
#include "platforms/fabrics/ecmp.hpp"

namespace trainsim::platforms {
namespace {

using fabric_detail::ceil_div;

class FatTree final : public FabricLayout {
 public:
  FatTree(const ClusterSpec& spec, bool rails) : f_(spec.fabric), on_rails_(rails) {
    for (const auto& group : spec.groups)
      rails_ = std::max(rails_, group.nics_per_node);
    const int nodes = spec.node_count();
    for (int node = 0; node < nodes; ++node)
      nics_.push_back(spec.groups[static_cast<std::size_t>(spec.group_of_node(node))].nics_per_node);
    const int leaves = ceil_div(nodes, f_.nodes_per_leaf) * (on_rails_ ? rails_ : 1);
    std::vector<double> down_Bps(static_cast<std::size_t>(leaves), 0.0);
    for (int node = 0; node < nodes; ++node) {
      const auto& group = spec.groups[static_cast<std::size_t>(spec.group_of_node(node))];
      for (int k = 0; k < group.nics_per_node; ++k)
        down_Bps[static_cast<std::size_t>(leaf_of(node, on_rails_ ? k : 0))] += group.nic.bandwidth_Bps;
    }
    for (int leaf = 0; leaf < leaves; ++leaf) {
      const double up_Bps = down_Bps[static_cast<std::size_t>(leaf)] / f_.oversubscription;
      if (f_.ecmp.on()) {
        leaf_up_.push_back(up_Bps > 0 ? static_cast<long>(add_planes(fmt::format("leaf{}", leaf), up_Bps))
                                      : -1);
        continue;
      }
      leaf_up_.push_back(
          up_Bps > 0 ? static_cast<long>(add_link(fmt::format("leaf{}-uplink", leaf), up_Bps * f_.efficiency))
                     : -1);
    }
    if (!on_rails_ && f_.levels == 3) {
      const int pods = ceil_div(leaves, f_.leaves_per_pod);
      for (int pod = 0; pod < pods; ++pod) {
        double up_Bps = 0;
        for (int leaf = pod * f_.leaves_per_pod; leaf < std::min(leaves, (pod + 1) * f_.leaves_per_pod);
             ++leaf)
          up_Bps += down_Bps[static_cast<std::size_t>(leaf)] / f_.oversubscription;
        pod_up_.push_back(f_.ecmp.on()
                              ? add_planes(fmt::format("pod{}", pod), up_Bps / f_.pod_oversubscription)
                              : add_link(fmt::format("pod{}-uplink", pod),
                                         up_Bps / f_.pod_oversubscription * f_.efficiency));
      }
    }
  }

  double route(int node_a, int nic_a, int node_b, int nic_b, std::vector<FabricHop>& hops) const override {
    const int la = leaf_of(node_a, nic_a);
    const int lb = leaf_of(node_b, nic_b);
    if (la == lb)
      return 0;
    if (f_.ecmp.on())
      return route_planes(node_a, nic_a, node_b, nic_b, la, lb, hops);
    hops.push_back({static_cast<std::size_t>(leaf_up_[static_cast<std::size_t>(la)]), true});
    double latency = f_.spine_latency_s;
    if (!pod_up_.empty() && pod_of_leaf(la) != pod_of_leaf(lb)) {
      hops.push_back({pod_up_[static_cast<std::size_t>(pod_of_leaf(la))], true});
      hops.push_back({pod_up_[static_cast<std::size_t>(pod_of_leaf(lb))], false});
      latency += f_.core_latency_s;
    }
    hops.push_back({static_cast<std::size_t>(leaf_up_[static_cast<std::size_t>(lb)]), false});
    return latency;
  }

  // A route depends only on the leaves (and pods) of its two NICs, so a node
  // permutation is an automorphism when it maps every leaf onto one leaf
  // (whichever of its nodes and NICs is asked), every pod onto one pod, and
  // uplinks onto uplinks of the same bandwidth: the spine and the core are
  // non-blocking, with no link of their own.
  std::string link_images(const std::vector<int>& node_image,
                          std::vector<std::size_t>& link_image) const override {
    if (f_.ecmp.on())
      return "its ECMP planes are chosen per NIC pair, which no node permutation is derived to preserve";
    std::vector<long> leaf_image(leaf_up_.size(), -1);
    for (std::size_t node = 0; node < nics_.size(); ++node)
      for (int k = 0; k < nics_[node]; ++k) {
        const auto leaf = static_cast<std::size_t>(leaf_of(static_cast<int>(node), k));
        const int image = leaf_of(node_image[node], k);
        if (leaf_image[leaf] < 0)
          leaf_image[leaf] = image;
        else if (leaf_image[leaf] != image)
          return fmt::format("node {} and another node of leaf {} would map to leaves {} and {}", node, leaf,
                             image, leaf_image[leaf]);
      }
    link_image.assign(links().size(), 0);
    for (std::size_t i = 0; i < link_image.size(); ++i)
      link_image[i] = i;
    std::vector<long> pod_image(pod_up_.size(), -1);
    for (std::size_t leaf = 0; leaf < leaf_up_.size(); ++leaf) {
      if (leaf_image[leaf] < 0 || leaf_up_[leaf] < 0)
        continue;
      const auto image = static_cast<std::size_t>(leaf_image[leaf]);
      const long up = leaf_up_[image];
      if (up < 0 || links()[static_cast<std::size_t>(up)].bandwidth_Bps !=
                        links()[static_cast<std::size_t>(leaf_up_[leaf])].bandwidth_Bps)
        return fmt::format("leaf {}'s uplink would map onto leaf {}'s, of another bandwidth", leaf, image);
      link_image[static_cast<std::size_t>(leaf_up_[leaf])] = static_cast<std::size_t>(up);
      if (pod_up_.empty())
        continue;
      const auto pod = static_cast<std::size_t>(pod_of_leaf(static_cast<int>(leaf)));
      const int pod_to = pod_of_leaf(static_cast<int>(image));
      if (pod_image[pod] < 0)
        pod_image[pod] = pod_to;
      else if (pod_image[pod] != pod_to)
        return fmt::format("the leaves of pod {} would map into pods {} and {}", pod, pod_image[pod], pod_to);
    }
    for (std::size_t pod = 0; pod < pod_up_.size(); ++pod) {
      if (pod_image[pod] < 0)
        continue;
      const std::size_t to = pod_up_[static_cast<std::size_t>(pod_image[pod])];
      if (links()[to].bandwidth_Bps != links()[pod_up_[pod]].bandwidth_Bps)
        return fmt::format("pod {}'s uplink would map onto pod {}'s, of another bandwidth", pod,
                           pod_image[pod]);
      link_image[pod_up_[pod]] = to;
    }
    // A bijection: no two links onto one.
    std::vector<char> hit(link_image.size(), 0);
    for (const std::size_t to : link_image) {
      if (hit[to])
        return fmt::format("two fabric links would map onto {}", links()[to].name);
      hit[to] = 1;
    }
    return {};
  }

 private:
  int leaf_of(int node, int nic) const {
    if (on_rails_)
      return (node / f_.nodes_per_leaf) * rails_ + nic;
    return node / f_.nodes_per_leaf;
  }
  int pod_of_leaf(int leaf) const { return leaf / f_.leaves_per_pod; }

  // ECMP: `aggregate_Bps` (before efficiency) as `planes` links, each
  // flows_per_pair times its physical capacity (ecmp.hpp says why);
  // returns the first one's index.
  std::size_t add_planes(const std::string& owner, double aggregate_Bps) {
    const auto& e = f_.ecmp;
    const double plane_Bps = aggregate_Bps / e.planes * f_.efficiency * e.flows_per_pair;
    const std::size_t first = links().size();
    for (int plane = 0; plane < e.planes; ++plane)
      add_link(fmt::format("{}-plane{}-uplink", owner, plane), plane_Bps);
    return first;
  }

  double route_planes(int node_a, int nic_a, int node_b, int nic_b, int la, int lb,
                      std::vector<FabricHop>& hops) const {
    const int port = on_rails_ ? node_a % f_.nodes_per_leaf : (node_a % f_.nodes_per_leaf) * rails_ + nic_a;
    const auto nic_id = [this](int node, int nic) { return static_cast<std::uint64_t>(node * rails_ + nic); };
    const std::uint64_t pair = (nic_id(node_a, nic_a) << 32) | nic_id(node_b, nic_b);
    const auto planes = ecmp_planes(f_.ecmp, pair, port);
    const auto on_plane = [](std::size_t first, int plane) {
      return first + static_cast<std::size_t>(plane);
    };
    for (const int plane : planes)
      hops.push_back(
          {on_plane(static_cast<std::size_t>(leaf_up_[static_cast<std::size_t>(la)]), plane), true});
    double latency = f_.spine_latency_s;
    if (!pod_up_.empty() && pod_of_leaf(la) != pod_of_leaf(lb)) {
      for (const int plane : planes)
        hops.push_back({on_plane(pod_up_[static_cast<std::size_t>(pod_of_leaf(la))], plane), true});
      for (const int plane : planes)
        hops.push_back({on_plane(pod_up_[static_cast<std::size_t>(pod_of_leaf(lb))], plane), false});
      latency += f_.core_latency_s;
    }
    for (const int plane : planes)
      hops.push_back(
          {on_plane(static_cast<std::size_t>(leaf_up_[static_cast<std::size_t>(lb)]), plane), false});
    return latency;
  }

  FabricSpec f_;
  std::vector<int> nics_;  // per node
  bool on_rails_;
  int rails_ = 1;                    // most NICs on any node
  std::vector<long> leaf_up_;        // link index (ECMP: of plane 0), -1 for a leaf without NICs
  std::vector<std::size_t> pod_up_;  // link index (ECMP: of plane 0)
};

}  // namespace

std::unique_ptr<FabricLayout> make_fat_tree(const ClusterSpec& spec) {
  return std::make_unique<FatTree>(spec, false);
}

std::unique_ptr<FabricLayout> make_rail_optimised(const ClusterSpec& spec) {
  return std::make_unique<FatTree>(spec, true);
}

}  // namespace trainsim::platforms
