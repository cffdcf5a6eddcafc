#pragma once
// Where the SimGrid platform's small objects live: chunks of their own in
// the trainsim executable's small-object pool (sim/cli/small_object_pool.cpp),
// freed by a push on a free list and given back to the system at once when
// the engine is gone. The engine's teardown, over scale-16k's 66,560 link
// directions and 18,432 hosts, took 3.65% of the run's user time, 1.9% in
// glibc's free walking and merging its free chunks; 0.96% with these chunks
// (docs/performance.md, "The platform's small objects in chunks of their
// own"). Programs without that pool (the tests,
// the Python module) build the platform from malloc as before.
//
//   const PlatformArena arena;          // before the engine: destroyed after it
//   auto engine = make_engine();
//   auto* zone = new ClusterZone(spec); // its hosts and links: PlatformArena::Building
//   ...                                 // the engine frees the zone, then the arena gives its pages back
namespace trainsim::sim {

class PlatformArena {
 public:
  // While one lives, this thread's small allocations come from the
  // platform's chunks (ClusterZone's constructor, once SimGrid's models,
  // whose callbacks outlive the engine, are set up).
  class Building {
   public:
    Building();
    ~Building();
    Building(const Building&) = delete;
    Building& operator=(const Building&) = delete;
  };

  PlatformArena() = default;
  // release(): after the engine's destruction, when this is declared before
  // the engine.
  ~PlatformArena() { release(); }
  PlatformArena(const PlatformArena&) = delete;
  PlatformArena& operator=(const PlatformArena&) = delete;

  // Gives the platform's chunks back to the system when none of their
  // objects is in use; says whether it did (false without the pool, or
  // while an object built under Building lives on: its chunks then stay).
  static bool release();
  // The objects of the platform's chunks in use (0 without the pool).
  static long objects_in_use();
};

}  // namespace trainsim::sim
