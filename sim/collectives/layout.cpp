// How a collective group lies on the cluster: rings per rail and per NVLink
// cycle, double binary trees over nodes. Pure topology: no SimGrid activity.
#include <algorithm>
#include <functional>
#include <limits>
#include <map>
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

std::vector<std::vector<int>> single_node_rings(const std::vector<int>& members, const ClusterZone& zone) {
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

// Per node: positions (in members) of one GPU per distinct NIC, in order.
std::vector<int> rail_representatives(const std::vector<int>& members, const ClusterZone& zone) {
  std::vector<int> reps;
  std::vector<int> seen;
  for (std::size_t i = 0; i < members.size(); ++i) {
    const int nic = zone.nic_index(members[i]);
    if (std::find(seen.begin(), seen.end(), nic) == seen.end()) {
      seen.push_back(nic);
      reps.push_back(static_cast<int>(i));
    }
  }
  return reps;
}

int rail_count(const GroupLayout& layout, const ClusterZone& zone) {
  std::size_t rails = std::numeric_limits<std::size_t>::max();
  for (const auto& members : layout.members)
    rails = std::min(rails, rail_representatives(members, zone).size());
  return static_cast<int>(std::max<std::size_t>(rails, 1));
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
    const int node = zone.node_of(gpu);
    auto [it, inserted] = index.emplace(node, layout.nodes.size());
    if (inserted) {
      layout.nodes.push_back(node);
      layout.members.emplace_back();
    }
    layout.members[it->second].push_back(gpu);
  }
  return layout;
}

std::vector<std::vector<int>> ring_channels(const GroupLayout& layout, const ClusterZone& zone) {
  if (layout.single_node())
    return single_node_rings(layout.members.front(), zone);
  const int rails = rail_count(layout, zone);
  const int nodes = static_cast<int>(layout.nodes.size());
  std::vector<std::vector<int>> reps;
  for (const auto& members : layout.members)
    reps.push_back(rail_representatives(members, zone));
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

std::vector<Tree> double_binary_trees(const GroupLayout& layout, const ClusterZone& zone) {
  const int nodes = static_cast<int>(layout.nodes.size());
  const int rails = layout.single_node() ? 1 : rail_count(layout, zone);
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
        const auto reps = rail_representatives(members, zone);
        const int entry = reps[static_cast<std::size_t>(c) % reps.size()];
        const auto chain = node_path(members, entry, entry, zone);
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
