// How a collective group lies on the cluster: rings per rail and per NVLink
// cycle, double binary trees over NVLink domains (nodes, unless
// cluster.nvlink_domain joins several). Pure topology: no SimGrid activity.
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <numeric>
#include <stdexcept>

#include "sim/collectives/flows.hpp"
#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {
namespace {

// Lanes between local positions of `members` on a cube-mesh node (NVLink
// multigraph), or all ones when every pair is directly connected.
std::vector<std::vector<int>> lane_matrix(const std::vector<int>& members, const ClusterZone& zone) {
  const std::size_t m = members.size();
  std::vector<std::vector<int>> lanes(m, std::vector<int>(m, 0));
  const bool cube = zone.group_of_node(zone.node_of(members[0])).shape == platforms::NodeShape::cube_mesh;
  for (std::size_t i = 0; i < m; ++i)
    for (std::size_t j = 0; j < m; ++j)
      if (i != j)
        lanes[i][j] = cube ? zone.nvlink_lanes(members[i], members[j]) : 1;
  return lanes;
}

bool is_cube_mesh(const std::vector<int>& members, const ClusterZone& zone) {
  return zone.group_of_node(zone.node_of(members[0])).shape == platforms::NodeShape::cube_mesh;
}

// Every Hamiltonian cycle through positions 0..m-1 over edges with lanes,
// starting at 0, each cycle once (path[1] < path[m-1]); at most `limit`.
std::vector<std::vector<int>> hamiltonian_cycles(const std::vector<std::vector<int>>& lanes,
                                                 std::size_t limit) {
  const int m = static_cast<int>(lanes.size());
  std::vector<std::vector<int>> cycles;
  std::vector<int> path{0};
  std::vector<bool> used(static_cast<std::size_t>(m), false);
  used[0] = true;
  std::function<void()> extend = [&]() {
    if (cycles.size() >= limit)
      return;
    const int last = path.back();
    if (static_cast<int>(path.size()) == m) {
      if (lanes[static_cast<std::size_t>(last)][0] > 0 && path[1] < path.back())
        cycles.push_back(path);
      return;
    }
    for (int next = 1; next < m; ++next) {
      if (used[static_cast<std::size_t>(next)] ||
          lanes[static_cast<std::size_t>(last)][static_cast<std::size_t>(next)] == 0)
        continue;
      used[static_cast<std::size_t>(next)] = true;
      path.push_back(next);
      extend();
      path.pop_back();
      used[static_cast<std::size_t>(next)] = false;
    }
  };
  extend();
  return cycles;
}

// The largest set of cycles whose edges fit the lanes (each cycle uses one
// lane of each of its edges, in both directions once reversed too).
std::vector<std::vector<int>> pack_cycles(const std::vector<std::vector<int>>& cycles,
                                          std::vector<std::vector<int>> lanes) {
  std::vector<std::size_t> best, chosen;
  auto fits = [&](const std::vector<int>& c, int delta) {
    for (std::size_t i = 0; i < c.size(); ++i) {
      const auto a = static_cast<std::size_t>(c[i]), b = static_cast<std::size_t>(c[(i + 1) % c.size()]);
      lanes[a][b] += delta;
      lanes[b][a] += delta;
    }
  };
  auto ok = [&](const std::vector<int>& c) {
    for (std::size_t i = 0; i < c.size(); ++i)
      if (lanes[static_cast<std::size_t>(c[i])][static_cast<std::size_t>(c[(i + 1) % c.size()])] <= 0)
        return false;
    return true;
  };
  std::function<void(std::size_t)> search = [&](std::size_t from) {
    if (chosen.size() > best.size())
      best = chosen;
    for (std::size_t k = from; k < cycles.size(); ++k) {
      if (!ok(cycles[k]))
        continue;
      fits(cycles[k], -1);
      chosen.push_back(k);
      search(k);  // a cycle may be used again when it has lanes to spare
      chosen.pop_back();
      fits(cycles[k], +1);
    }
  };
  search(0);
  std::vector<std::vector<int>> out;
  for (auto k : best)
    out.push_back(cycles[k]);
  return out;
}

bool is_full_mesh(const std::vector<int>& members, const ClusterZone& zone) {
  return zone.group_of_node(zone.node_of(members[0])).shape == platforms::NodeShape::full_mesh;
}

// Directed Hamiltonian cycles through positions 0..m-1 of a full mesh, each
// starting at 0, that use every link direction at most once: the largest
// such set a depth-first search finds within its budget. K_m's m(m-1) link
// directions split into m - 1 of them for every m but 4 and 6 (Tillson
// 1980), so each ring has a link of its own at every hop, as RCCL's rings on
// an MI300X node do (rome_model_79: 14 rings that use every xGMI link
// direction twice).
std::vector<std::vector<int>> disjoint_directed_cycles(int m) {
  std::vector<std::vector<bool>> used(static_cast<std::size_t>(m),
                                      std::vector<bool>(static_cast<std::size_t>(m)));
  std::vector<std::vector<int>> chosen, best;
  long budget = 200000;  // search steps; m = 8 needs about 150
  auto mark = [&](const std::vector<int>& cycle, bool value) {
    for (std::size_t i = 0; i < cycle.size(); ++i)
      used[static_cast<std::size_t>(cycle[i])][static_cast<std::size_t>(cycle[(i + 1) % cycle.size()])] =
          value;
  };
  std::function<bool()> search;
  // Extends `path` to a cycle of unused link directions, then searches on.
  std::function<bool(std::vector<int>&, std::vector<bool>&)> extend = [&](std::vector<int>& path,
                                                                          std::vector<bool>& visited) {
    if (--budget < 0)
      return false;
    const int last = path.back();
    if (static_cast<int>(path.size()) == m) {
      if (used[static_cast<std::size_t>(last)][0])
        return false;
      mark(path, true);
      chosen.push_back(path);
      if (search())
        return true;
      chosen.pop_back();
      mark(path, false);
      return false;
    }
    for (int next = 1; next < m; ++next) {
      if (visited[static_cast<std::size_t>(next)] ||
          used[static_cast<std::size_t>(last)][static_cast<std::size_t>(next)])
        continue;
      visited[static_cast<std::size_t>(next)] = true;
      path.push_back(next);
      const bool done = extend(path, visited);
      path.pop_back();
      visited[static_cast<std::size_t>(next)] = false;
      if (done)
        return true;
    }
    return false;
  };
  search = [&]() {
    if (chosen.size() > best.size())
      best = chosen;
    if (static_cast<int>(best.size()) == m - 1 || budget < 0)
      return true;
    std::vector<int> path{0};
    std::vector<bool> visited(static_cast<std::size_t>(m), false);
    visited[0] = true;
    return extend(path, visited);
  };
  search();
  return best;
}

// Rings of a full-mesh node: m - 1 rings on disjoint links when they exist;
// where they do not (4 GPUs), every directed Hamiltonian cycle, which loads
// every link direction equally (m = 4: 6 rings, each direction twice).
std::vector<std::vector<int>> full_mesh_rings(const std::vector<int>& members) {
  const int m = static_cast<int>(members.size());
  auto cycles = disjoint_directed_cycles(m);
  if (static_cast<int>(cycles.size()) < m - 1 && m <= 5) {
    std::vector<int> order(static_cast<std::size_t>(m));
    std::iota(order.begin(), order.end(), 0);
    cycles.clear();
    do
      cycles.push_back(order);
    while (std::next_permutation(order.begin() + 1, order.end()));
  }
  std::vector<std::vector<int>> rings;
  for (const auto& cycle : cycles) {
    auto& ring = rings.emplace_back();
    for (int position : cycle)
      ring.push_back(members[static_cast<std::size_t>(position)]);
  }
  return rings;
}

std::vector<std::vector<int>> single_node_rings(const std::vector<int>& members, const ClusterZone& zone) {
  if (is_full_mesh(members, zone) && members.size() > 2)
    return full_mesh_rings(members);
  if (!is_cube_mesh(members, zone) || members.size() > static_cast<std::size_t>(platforms::kCubeMeshGpus))
    return {members};
  if (members.size() == 2) {
    const int lanes = zone.nvlink_lanes(members[0], members[1]);
    return std::vector<std::vector<int>>(static_cast<std::size_t>(std::max(lanes, 1)), members);
  }
  const auto lanes = lane_matrix(members, zone);
  const auto cycles = pack_cycles(hamiltonian_cycles(lanes, 4096), lanes);
  if (cycles.empty())
    return {members};
  std::vector<std::vector<int>> rings;
  for (const auto& cycle : cycles) {
    std::vector<int> ring;
    for (int position : cycle)
      ring.push_back(members[static_cast<std::size_t>(position)]);
    rings.push_back(ring);
    std::reverse(ring.begin() + 1, ring.end());
    rings.push_back(ring);
  }
  return rings;
}

// A path through every member from `entry` to `exit` (positions), over
// NVLink on a cube-mesh; any order elsewhere.
std::vector<int> node_path(const std::vector<int>& members, int entry, int exit, const ClusterZone& zone) {
  const int m = static_cast<int>(members.size());
  std::vector<int> order{entry};
  for (int i = 0; i < m; ++i)
    if (i != entry && i != exit)
      order.push_back(i);
  if (exit != entry)
    order.push_back(exit);
  if (is_cube_mesh(members, zone) && m > 2) {
    const auto lanes = lane_matrix(members, zone);
    std::vector<int> path{entry};
    std::vector<bool> used(static_cast<std::size_t>(m), false);
    used[static_cast<std::size_t>(entry)] = true;
    std::function<bool()> extend = [&]() {
      const int last = path.back();
      if (static_cast<int>(path.size()) == m)
        return exit == entry || last == exit;
      for (int next = 0; next < m; ++next) {
        if (used[static_cast<std::size_t>(next)] ||
            lanes[static_cast<std::size_t>(last)][static_cast<std::size_t>(next)] == 0)
          continue;
        if (next == exit && exit != entry && static_cast<int>(path.size()) + 1 < m)
          continue;
        used[static_cast<std::size_t>(next)] = true;
        path.push_back(next);
        if (extend())
          return true;
        path.pop_back();
        used[static_cast<std::size_t>(next)] = false;
      }
      return false;
    };
    if (extend())
      order = path;
  }
  std::vector<int> gpus;
  for (int position : order)
    gpus.push_back(members[static_cast<std::size_t>(position)]);
  return gpus;
}

// Per domain: positions (in members) of one GPU per distinct NIC (a node's
// NIC; a domain of several nodes has each node's), in order.
std::vector<int> rail_representatives(const std::vector<int>& members, const ClusterZone& zone) {
  std::vector<int> reps;
  std::vector<std::pair<int, int>> seen;  // (node, NIC index)
  for (std::size_t i = 0; i < members.size(); ++i) {
    const std::pair<int, int> nic{zone.node_of(members[i]), zone.nic_index(members[i])};
    if (std::find(seen.begin(), seen.end(), nic) == seen.end()) {
      seen.push_back(nic);
      reps.push_back(static_cast<int>(i));
    }
  }
  return reps;
}

// Per domain of the layout, its rail_representatives (ring_channels and
// double_binary_trees read them per rail).
std::vector<std::vector<int>> rail_representatives(const GroupLayout& layout, const ClusterZone& zone) {
  std::vector<std::vector<int>> reps;
  reps.reserve(layout.members.size());
  for (const auto& members : layout.members)
    reps.push_back(rail_representatives(members, zone));
  return reps;
}

// The rails every domain offers (NICs of its own), at most kMaxRingRails.
int rail_count(const std::vector<std::vector<int>>& reps) {
  std::size_t rails = std::numeric_limits<std::size_t>::max();
  for (const auto& r : reps)
    rails = std::min(rails, r.size());
  return static_cast<int>(std::clamp<std::size_t>(rails, 1, platforms::kMaxRingRails));
}

// Rings across full-mesh nodes whose m members (m even) each have a NIC of
// their own: ring c crosses node k along the zigzag path from position
// s = c + k m/2 (s, s+1, s-1, s+2, ..., s + m/2, mod m; Walecki's
// decomposition of K_m into m/2 Hamiltonian paths, each run both ways), so
// the m rings use every link direction of every node once, as RCCL's rings
// over an 8-NIC MI300X node do (rome_model_81), and each leaves a node on the
// rail it enters the next one by. Empty when the group is not so laid out.
std::vector<std::vector<int>> full_mesh_rail_rings(const GroupLayout& layout, int rails,
                                                   const ClusterZone& zone) {
  const int m = layout.uniform_members();
  if (m < 2 || m % 2 != 0 || rails != m)
    return {};
  for (const auto& members : layout.members)
    if (!is_full_mesh(members, zone) || static_cast<int>(rail_representatives(members, zone).size()) != m)
      return {};
  std::vector<std::vector<int>> rings;
  for (int c = 0; c < m; ++c) {
    auto& ring = rings.emplace_back();
    for (std::size_t k = 0; k < layout.members.size(); ++k) {
      const int s = (c + static_cast<int>(k) * (m / 2)) % m;
      std::vector<int> path{s};
      for (int j = 1; j < m / 2; ++j) {
        path.push_back((s + j) % m);
        path.push_back((s - j + m) % m);
      }
      path.push_back((s + m / 2) % m);
      for (int position : path)
        ring.push_back(layout.members[k][static_cast<std::size_t>(position)]);
    }
  }
  return rings;
}

}  // namespace

int GroupLayout::uniform_members() const {
  const std::size_t m = members.front().size();
  for (const auto& node : members)
    if (node.size() != m)
      return 0;
  return static_cast<int>(m);
}

GroupLayout layout_of(const std::vector<int>& gpus, const ClusterZone& zone) {
  GroupLayout layout;
  layout.gpus = gpus;
  std::map<int, std::size_t> index;
  for (int gpu : gpus) {
    if (gpu < 0 || gpu >= zone.gpu_count())
      throw std::invalid_argument("a collective group names a GPU outside the cluster");
    const int domain = zone.domain_of(gpu);
    auto [it, inserted] = index.emplace(domain, layout.domains.size());
    if (inserted) {
      layout.domains.push_back(domain);
      layout.members.emplace_back();
    }
    layout.members[it->second].push_back(gpu);
  }
  return layout;
}

std::vector<std::vector<int>> ring_channels(const GroupLayout& layout, const ClusterZone& zone) {
  if (layout.single_domain())
    return single_node_rings(layout.members.front(), zone);
  const auto reps = rail_representatives(layout, zone);
  const int rails = rail_count(reps);
  if (auto rings = full_mesh_rail_rings(layout, rails, zone); !rings.empty())
    return rings;
  const int nodes = static_cast<int>(layout.domains.size());
  std::vector<std::vector<int>> rings;
  for (int c = 0; c < rails; ++c) {
    std::vector<int> ring;
    for (int k = 0; k < nodes; ++k) {
      const auto& members = layout.members[static_cast<std::size_t>(k)];
      const auto& r = reps[static_cast<std::size_t>(k)];
      const int entry = r[static_cast<std::size_t>((c + k) % rails)];
      // Leave on the rail the next node is entered on; the last node leaves
      // on the rail node 0 is entered on when it can.
      int exit = r[static_cast<std::size_t>((c + k + 1) % rails)];
      if (k == nodes - 1 && r[static_cast<std::size_t>(c % rails)] != entry)
        exit = r[static_cast<std::size_t>(c % rails)];
      if (exit == entry && members.size() > 1)
        exit = entry == static_cast<int>(members.size()) - 1 ? 0 : static_cast<int>(members.size()) - 1;
      const auto path = node_path(members, entry, exit, zone);
      ring.insert(ring.end(), path.begin(), path.end());
    }
    rings.push_back(std::move(ring));
  }
  return rings;
}

std::vector<int> nccl_btree_parents(int n) {
  // NCCL's ncclGetBtree: rank r's parent flips r's lowest set bit and sets
  // the next one up, or just clears it when that falls outside the ranks.
  std::vector<int> parent(static_cast<std::size_t>(n), -1);
  for (int r = 1; r < n; ++r) {
    int bit = 1;
    while ((r & bit) == 0)
      bit <<= 1;
    int up = (r ^ bit) | (bit << 1);
    if (up >= n)
      up = r ^ bit;
    parent[static_cast<std::size_t>(r)] = up;
  }
  return parent;
}

int Tree::height() const {
  int height = 0;
  for (std::size_t i = 0; i < parent.size(); ++i) {
    int depth = 0;
    for (int p = parent[i]; p >= 0; p = parent[static_cast<std::size_t>(p)])
      ++depth;
    height = std::max(height, depth);
  }
  return height;
}

std::vector<Tree> double_binary_trees(const GroupLayout& layout, const ClusterZone& zone,
                                      bool chain_members) {
  const int nodes = static_cast<int>(layout.domains.size());
  const auto reps_of = rail_representatives(layout, zone);
  const int rails = layout.single_domain() ? 1 : rail_count(reps_of);
  const auto btree = nccl_btree_parents(nodes);
  // NCCL's second tree: the first one mirrored (even node counts) or shifted
  // by one (odd), so that the first tree's leaves are the second's inner
  // nodes.
  std::vector<int> second(static_cast<std::size_t>(nodes), -1);
  for (int r = 0; r < nodes; ++r) {
    if (nodes % 2 == 0) {
      const int p = btree[static_cast<std::size_t>(nodes - 1 - r)];
      second[static_cast<std::size_t>(r)] = p < 0 ? -1 : nodes - 1 - p;
    } else {
      const int p = btree[static_cast<std::size_t>((r - 1 + nodes) % nodes)];
      second[static_cast<std::size_t>(r)] = p < 0 ? -1 : (p + 1) % nodes;
    }
  }
  std::vector<Tree> trees;
  for (int c = 0; c < rails; ++c) {
    for (const std::vector<int>* node_parent : {&btree, static_cast<const std::vector<int>*>(&second)}) {
      Tree tree;
      std::vector<int> head(static_cast<std::size_t>(nodes));  // index of each node's tree GPU
      for (int k = 0; k < nodes; ++k) {
        const auto& members = layout.members[static_cast<std::size_t>(k)];
        const auto& reps = reps_of[static_cast<std::size_t>(k)];
        const int entry = reps[static_cast<std::size_t>(c) % reps.size()];
        const auto chain = chain_members ? node_path(members, entry, entry, zone)
                                         : std::vector<int>{members[static_cast<std::size_t>(entry)]};
        head[static_cast<std::size_t>(k)] = static_cast<int>(tree.gpus.size());
        for (std::size_t i = 0; i < chain.size(); ++i) {
          tree.gpus.push_back(chain[i]);
          // Down the chain: each GPU's parent is the one before it.
          tree.parent.push_back(i == 0 ? -1 : static_cast<int>(tree.gpus.size()) - 2);
        }
      }
      for (int k = 0; k < nodes; ++k) {
        const int p = (*node_parent)[static_cast<std::size_t>(k)];
        if (p >= 0)
          tree.parent[static_cast<std::size_t>(head[static_cast<std::size_t>(k)])] =
              head[static_cast<std::size_t>(p)];
      }
      trees.push_back(std::move(tree));
    }
  }
  return trees;
}

}  // namespace trainsim::sim
