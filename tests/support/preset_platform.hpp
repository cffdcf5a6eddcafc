#pragma once
// A cluster preset (with overrides) as a SimGrid platform: the engine and the
// zone it owns, for tests that ask the collectives' tuner and factory
// questions without a replay.
#include <memory>
#include <string>
#include <vector>

#include <simgrid/s4u/Engine.hpp>

#include "sim/platform/cluster_zone.hpp"
#include "sim/platform/engine_setup.hpp"
#include "sim/scenario/cluster_loader.hpp"

namespace trainsim::testing {

struct PresetPlatform {
  platforms::ClusterSpec spec;
  std::unique_ptr<simgrid::s4u::Engine> engine;
  sim::ClusterZone* zone = nullptr;
  explicit PresetPlatform(const std::string& preset, std::vector<std::string> overrides = {})
      : spec(scenario::load_cluster(preset, overrides)), engine(sim::make_engine()) {
    zone = new sim::ClusterZone(spec);  // owned by the engine
  }
};

}  // namespace trainsim::testing
