// dragonfly: nodes on routers, routers all-to-all inside a group (local
// links), one global link between every pair of groups. Minimal routing:
// local hop to the router holding the global link, global hop, local hop to
// the destination router; every router-to-router hop adds hop_latency.
//
//   group 0                 group 1
//   r0 -- r1      global    r0 -- r1     routers all-to-all inside a group
//   |  \/  |  ============  |  \/  |     (groupG-localI-J), one global link
//   r2 -- r3   (global0-1)  r2 -- r3     per pair of groups (globalA-B)
#include <fmt/format.h>

#include "platforms/fabric_layout.hpp"

namespace trainsim::platforms {
namespace {

using fabric_detail::ceil_div;
using fabric_detail::pair_index;

class Dragonfly final : public FabricLayout {
 public:
  explicit Dragonfly(const ClusterSpec& spec) : f_(spec.fabric) {
    const int routers = ceil_div(spec.node_count(), f_.nodes_per_router);
    const int r = f_.routers_per_group;
    groups_ = ceil_div(routers, r);
    for (int g = 0; g < groups_; ++g)
      for (int i = 0; i < r; ++i)
        for (int j = i + 1; j < r; ++j)
          add_link(fmt::format("group{}-local{}-{}", g, i, j), f_.local_bandwidth_Bps * f_.efficiency);
    globals_ = links().size();
    for (int a = 0; a < groups_; ++a)
      for (int b = a + 1; b < groups_; ++b)
        add_link(fmt::format("global{}-{}", a, b), f_.global_bandwidth_Bps * f_.efficiency);
  }

  double route(int node_a, int, int node_b, int, std::vector<FabricHop>& hops) const override {
    const int r = f_.routers_per_group;
    const int ra = node_a / f_.nodes_per_router;
    const int rb = node_b / f_.nodes_per_router;
    if (ra == rb)
      return 0;
    const int ga = ra / r, gb = rb / r;
    const std::size_t per_group = static_cast<std::size_t>(r * (r - 1) / 2);
    const auto local = [&](int group, int from, int to) {
      hops.push_back({static_cast<std::size_t>(group) * per_group + pair_index(from, to, r), from < to});
    };
    if (ga == gb) {
      local(ga, ra % r, rb % r);
      return f_.hop_latency_s;
    }
    // The global link between groups a and b leaves group a from router
    // (b mod r) and enters group b at router (a mod r).
    const int gateway_a = gb % r, gateway_b = ga % r;
    int count = 1;
    if (ra % r != gateway_a) {
      local(ga, ra % r, gateway_a);
      ++count;
    }
    hops.push_back({globals_ + pair_index(ga, gb, groups_), ga < gb});
    if (gateway_b != rb % r) {
      local(gb, gateway_b, rb % r);
      ++count;
    }
    return count * f_.hop_latency_s;
  }

 private:
  FabricSpec f_;
  int groups_ = 0;
  std::size_t globals_ = 0;  // index of the first global link
};

}  // namespace

std::unique_ptr<FabricLayout> make_dragonfly(const ClusterSpec& spec) {
  return std::make_unique<Dragonfly>(spec);
}

}  // namespace trainsim::platforms
