#include "sim/platform/engine_setup.hpp"

#include <xbt/log.h>

#include <array>

namespace trainsim::sim {

std::unique_ptr<simgrid::s4u::Engine> make_engine() {
  xbt_log_control_set("root.thresh:warning");
  std::array<char*, 2> argv{const_cast<char*>("trainsim"), nullptr};
  int argc = 1;
  auto engine = std::make_unique<simgrid::s4u::Engine>(&argc, argv.data());
  simgrid::s4u::Engine::set_config("network/model:CM02");
  simgrid::s4u::Engine::set_config("network/crosstraffic:0");
  simgrid::s4u::Engine::set_config("network/TCP-gamma:1e18");
  return engine;
}

}  // namespace trainsim::sim
