// torus: node (x, y, ...) linked to its + neighbour along each dimension,
// wrapping around; dimension-ordered shortest routes; each hop adds
// hop_latency.
//
//   (0,1) -- (1,1) -- (2,1) --+    each node owns the link to its +
//     |        |        |     |    neighbour along every dimension
//   (0,0) -- (1,0) -- (2,0) --+    (nodeN-torusD), wrapping around
#include <fmt/format.h>

#include "platforms/fabric_layout.hpp"

namespace trainsim::platforms {
namespace {

class Torus final : public FabricLayout {
 public:
  explicit Torus(const ClusterSpec& spec) : f_(spec.fabric) {
    const int nodes = spec.node_count();
    const auto dims = f_.torus_dims.size();
    link_of_.assign(static_cast<std::size_t>(nodes) * dims, -1);
    for (int node = 0; node < nodes; ++node) {
      int rest = node;
      for (std::size_t d = 0; d < dims; ++d) {
        const int size = f_.torus_dims[d];
        const int coord = rest % size;
        rest /= size;
        // A ring of two has one link; a ring of one none.
        if (size > 2 || (size == 2 && coord == 0))
          link_of_[static_cast<std::size_t>(node) * dims + d] = static_cast<long>(
              add_link(fmt::format("node{}-torus{}", node, d), f_.torus_bandwidth_Bps * f_.efficiency));
      }
    }
  }

  double route(int node_a, int, int node_b, int, std::vector<FabricHop>& hops) const override {
    const auto dims = f_.torus_dims.size();
    int count = 0;
    int current = node_a, stride = 1;
    for (std::size_t d = 0; d < dims; ++d) {
      const int size = f_.torus_dims[d];
      const int ca = (current / stride) % size;
      const int cb = (node_b / stride) % size;
      const int forward = ((cb - ca) % size + size) % size;
      if (forward != 0) {
        const bool plus = forward <= size - forward;
        const int steps = plus ? forward : size - forward;
        int c = ca;
        for (int s = 0; s < steps; ++s) {
          const int next = plus ? (c + 1) % size : (c - 1 + size) % size;
          // The link between c and next belongs to the node at the lower
          // end (+ side owner); in a ring of two, to coordinate 0.
          const int owner_coord = size == 2 ? 0 : (plus ? c : next);
          const bool up = size == 2 ? c == 0 : plus;
          const int owner = current + (owner_coord - c) * stride;
          hops.push_back(
              {static_cast<std::size_t>(link_of_[static_cast<std::size_t>(owner) * dims + d]), up});
          current += (next - c) * stride;
          c = next;
          ++count;
        }
      }
      stride *= size;
    }
    return count * f_.hop_latency_s;
  }

 private:
  FabricSpec f_;
  std::vector<long> link_of_;  // node x dims: link index, -1 without a link
};

}  // namespace

std::unique_ptr<FabricLayout> make_torus(const ClusterSpec& spec) {
  return std::make_unique<Torus>(spec);
}

}  // namespace trainsim::platforms
