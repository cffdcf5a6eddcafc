#include "sim/platform/engine_setup.hpp"

#include <xbt/log.h>

#include <array>

#include "platforms/interruption.hpp"

namespace trainsim::sim {

std::unique_ptr<simgrid::s4u::Engine> make_engine() {
  xbt_log_control_set("root.thresh:warning");
  std::array<char*, 2> argv{const_cast<char*>("trainsim"), nullptr};
  int argc = 1;
  auto engine = std::make_unique<simgrid::s4u::Engine>(&argc, argv.data());
  // SimGrid 3.32's engine constructor sets its own SIGINT handler
  // (EngineImpl::initialize: it prints every actor's status, which crashes
  // mid-replay, then calls exit(1), which runs the destructors of a live
  // simulation), and has no option to leave it out: trainsim's policy goes
  // back in its place (a no-op when none is installed, as in unit tests).
  platforms::restore_interruption_policy();
  simgrid::s4u::Engine::set_config("network/model:CM02");
  simgrid::s4u::Engine::set_config("network/crosstraffic:0");
  simgrid::s4u::Engine::set_config("network/TCP-gamma:1e18");
  return engine;
}

}  // namespace trainsim::sim
