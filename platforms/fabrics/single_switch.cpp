// single_switch: every NIC on one non-blocking switch; no fabric link.
//
//   NIC ---------------- NIC
#include "platforms/fabric_layout.hpp"

namespace trainsim::platforms {
namespace {

class SingleSwitch final : public FabricLayout {
 public:
  double route(int, int, int, int, std::vector<FabricHop>&) const override { return 0; }
};

}  // namespace

std::unique_ptr<FabricLayout> make_single_switch(const ClusterSpec&) {
  return std::make_unique<SingleSwitch>();
}

}  // namespace trainsim::platforms
