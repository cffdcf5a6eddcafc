#pragma once
// The links of a cluster's fabric (between the nodes' NICs) and the route a
// transfer takes through them: one class per topology in platforms/fabrics/,
// without SimGrid. sim/platform/cluster_zone.cpp creates one SimGrid link per
// FabricLink, in this order, and follows these routes; the perturbations
// reader checks link names against them; tests check routes without an
// engine.
//
// Adding a topology: its FabricTopology, its file in platforms/fabrics/ (a
// FabricLayout and its factory), and one line in fabric_table().
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "platforms/cluster_spec.hpp"

namespace trainsim::platforms {

struct FabricLink {
  std::string name;
  double bandwidth_Bps = 0;  // per direction, the fabric's efficiency applied
};

// One link direction of a route: `link` indexes FabricLayout::links(); `up`
// is the direction leaving the link's owner (SimGrid's split-duplex UP).
struct FabricHop {
  std::size_t link = 0;
  bool up = true;
};

class FabricLayout {
 public:
  virtual ~FabricLayout() = default;
  // Every fabric link, in creation order.
  const std::vector<FabricLink>& links() const { return links_; }
  // Appends the hops from NIC `nic_a` of node `node_a` to NIC `nic_b` of
  // `node_b` to `hops`, in order, and returns the latency the fabric adds to
  // the NICs' own (0 through one switch).
  virtual double route(int node_a, int nic_a, int node_b, int nic_b, std::vector<FabricHop>& hops) const = 0;

  // The fold (docs/performance.md, "The fold"): whether the node
  // permutation `node_image` (every NIC keeping its index) is an
  // automorphism of the fabric, mapping links onto links of the same
  // bandwidth and every route onto the route between the images. If so,
  // fills `link_image` (one entry per link: its image) and returns an empty
  // string; else returns why not, as a sentence. A topology whose
  // automorphisms are not derived answers so.
  virtual std::string link_images(const std::vector<int>& node_image,
                                  std::vector<std::size_t>& link_image) const;

 protected:
  std::size_t add_link(std::string name, double bandwidth_Bps) {
    links_.push_back({std::move(name), bandwidth_Bps});
    return links_.size() - 1;
  }

 private:
  std::vector<FabricLink> links_;
};

struct FabricKind {
  FabricTopology topology;
  std::string_view name;  // the scenario word: cluster.fabric.topology
  std::unique_ptr<FabricLayout> (*make)(const ClusterSpec& spec);
};
// Every topology, in FabricTopology order.
const std::vector<FabricKind>& fabric_table();
std::unique_ptr<FabricLayout> make_fabric_layout(const ClusterSpec& spec);

// The topologies (platforms/fabrics/*.cpp).
std::unique_ptr<FabricLayout> make_single_switch(const ClusterSpec& spec);
std::unique_ptr<FabricLayout> make_fat_tree(const ClusterSpec& spec);
std::unique_ptr<FabricLayout> make_rail_optimised(const ClusterSpec& spec);
std::unique_ptr<FabricLayout> make_dragonfly(const ClusterSpec& spec);
std::unique_ptr<FabricLayout> make_torus(const ClusterSpec& spec);

// Shared by the topologies.
namespace fabric_detail {
inline int ceil_div(int a, int b) {
  return (a + b - 1) / b;
}
// Index of the pair (i, j), i < j, among the n(n-1)/2 pairs of n items.
inline std::size_t pair_index(int i, int j, int n) {
  if (i > j)
    std::swap(i, j);
  return static_cast<std::size_t>(i * n - i * (i + 1) / 2 + (j - i - 1));
}
}  // namespace fabric_detail

}  // namespace trainsim::platforms
