// single_switch: every NIC on one non-blocking switch; no fabric link.
//
//   NIC ---------------- NIC
#include "platforms/fabric_layout.hpp"

namespace trainsim::platforms {
namespace {

class SingleSwitch final : public FabricLayout {
 public:
  double route(int, int, int, int, std::vector<FabricHop>&) const override { return 0; }
  // No link: every node permutation maps the one switch onto itself.
  std::string link_images(const std::vector<int>&, std::vector<std::size_t>& link_image) const override {
    link_image.clear();
    return {};
  }
};

}  // namespace

std::unique_ptr<FabricLayout> make_single_switch(const ClusterSpec&) {
  return std::make_unique<SingleSwitch>();
}

}  // namespace trainsim::platforms
