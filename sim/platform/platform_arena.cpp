#include "sim/platform/platform_arena.hpp"

// The trainsim executable's allocator (sim/cli/small_object_pool.cpp);
// tests and other programs link no such allocator, and the calls are
// skipped.
extern "C" void trainsim_platform_arena_open(bool open) __attribute__((weak));
extern "C" bool trainsim_platform_arena_release() __attribute__((weak));
extern "C" long trainsim_platform_arena_in_use() __attribute__((weak));

namespace trainsim::sim {

PlatformArena::Building::Building() {
  if (trainsim_platform_arena_open != nullptr)
    trainsim_platform_arena_open(true);
}

PlatformArena::Building::~Building() {
  if (trainsim_platform_arena_open != nullptr)
    trainsim_platform_arena_open(false);
}

bool PlatformArena::release() {
  return trainsim_platform_arena_release != nullptr && trainsim_platform_arena_release();
}

long PlatformArena::objects_in_use() {
  return trainsim_platform_arena_in_use != nullptr ? trainsim_platform_arena_in_use() : 0;
}

}  // namespace trainsim::sim
