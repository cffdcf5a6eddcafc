// A pool for small allocations (up to 512 bytes), replacing the global
// operator new and delete of the trainsim executable (only: it is a source of
// the executable, not of a library).
//
// Why: SimGrid 3.32 keeps every communication started from the maestro in one
// std::list and removes a finished one with list::remove, a walk over every
// live communication. The walk is unavoidable; its cost is not: with the
// list's 24-byte nodes scattered across the heap among the comms' own
// allocations, each step of the walk is a cache and TLB miss (about 300 ns at
// 30,000 live flows). Served from this pool the nodes sit next to each other
// and the same walk runs ~40 times faster: a fast-fidelity all-reduce over
// 4,096 GPUs went from 174 s to 3.8 s (docs/performance.md).
//
// Each communication SimGrid starts and ends also allocates and frees a dozen
// small objects (its network action, its max-min variable's elements, route
// vectors, heap nodes, sets of zones: 8 to 272 bytes), 1.4 million times in a
// folded ZeRO-3 run of scale-512. glibc's free took 94 instructions a call
// on average there, most of them past its per-thread cache (which holds 7
// blocks of a size). Served here in size classes (a free list each), an
// allocation and a free take a few instructions, while the replay's engine
// runs (trainsim_small_object_pool_widen; docs/performance.md, "FSDP: the
// overlapping pair examined, SimGrid's small objects from a pool").
//
// The pool reserves address space once (no memory until touched), hands out
// slots of a class by bumping a pointer through 1 MiB chunks of that class
// (a table gives each chunk's class), and keeps freed slots on the class's
// free list (per thread: trainsim's simulations are single-threaded, the
// study commands' threads only wait on child processes). Larger sizes, and
// everything if the reservation fails (as under valgrind), go to malloc.
// Freed slots are not given back to the system, nor to another class (glibc
// keeps most freed memory too), except the platform's (below).
//
// The SimGrid platform's small objects (trainsim_platform_arena_open, around
// the cluster zone's construction: sim/platform/platform_arena.hpp) come
// from chunks of their own. Each link direction and host is several small
// objects (the link, its constraint, its name, the nodes of SimGrid's maps
// by name: 1,066 for 32 GPUs and their 128 link directions); glibc's free
// of scale-16k's at the engine's end walked and merged its free chunks
// (malloc_consolidate, unlink_chunk) for 1.9% of the run's user time. Here
// their frees are pushes on the platform's free lists, and once none of its
// objects is left (the engine is gone), its chunks' pages go back to the
// system at once (madvise), which glibc's merged chunks did not: the
// analyses after the replay reuse the memory either way, so the peak stays.
// If one of its objects outlived the engine, its chunks stay as they are.
#include <sys/mman.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

constexpr std::size_t kArenaBytes = std::size_t{1} << 36;  // 64 GiB of address space
constexpr std::size_t kChunkBits = 20;
constexpr std::size_t kChunk = std::size_t{1} << kChunkBits;  // taken from the arena per thread and class
constexpr std::size_t kChunks = kArenaBytes / kChunk;
// The slot sizes: every multiple of 16 (operator new's alignment) up to
// kLargest, so that a slot wastes less than glibc's block header would.
constexpr std::size_t kStep = 16;
constexpr std::size_t kLargest = 512;
constexpr std::size_t kClasses = kLargest / kStep;
constexpr std::size_t class_of_size(std::size_t n) {
  return n == 0 ? 0 : (n - 1) / kStep;
}
constexpr std::size_t class_bytes(std::size_t c) {
  return (c + 1) * kStep;
}

// A chunk's class in Arena::chunk_class, with this bit when it is the
// platform's.
constexpr std::uint8_t kPlatformChunk = 0x80;

struct Arena {
  char* base = nullptr;
  std::atomic<std::size_t> used{0};
  std::array<std::uint8_t, kChunks> chunk_class{};  // the class of each chunk handed out (| kPlatformChunk)
  Arena() {
    void* p = mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p != MAP_FAILED)
      base = static_cast<char*>(p);
  }
  bool owns(const void* p) const { return base != nullptr && p >= base && p < base + kArenaBytes; }
  std::uint8_t chunk_of(const void* p) const {
    return chunk_class[static_cast<std::size_t>(static_cast<const char*>(p) - base) >> kChunkBits];
  }
};

Arena& arena() {
  static Arena a;  // first use may come from a static constructor anywhere
  return a;
}

struct ClassPool {
  void* free_list = nullptr;
  char* next = nullptr;
  char* end = nullptr;
};
struct ThreadPool {
  std::array<ClassPool, kClasses> classes;
  std::array<ClassPool, kClasses> platform;  // the platform's (trainsim_platform_arena_open)
  bool wide = false;            // every class, not only 17 to 32 bytes (trainsim_small_object_pool_widen)
  bool platform_open = false;   // every class, from the platform's chunks
  bool platform_owner = false;  // this thread opened the platform's chunks: their frees come back here
};
thread_local ThreadPool pool;

// The platform's slots handed out and not freed, whichever thread frees
// them (its chunks go back to the system only at 0).
std::atomic<std::int64_t> platform_live{0};

void* pool_allocate(std::size_t c, bool platform) {
  ClassPool& t = platform ? pool.platform[c] : pool.classes[c];
  if (t.free_list != nullptr) {
    void* p = t.free_list;
    t.free_list = *static_cast<void**>(p);
    return p;
  }
  const std::size_t slot = class_bytes(c);
  if (static_cast<std::size_t>(t.end - t.next) < slot) {
    Arena& a = arena();
    if (a.base == nullptr)
      return nullptr;
    const std::size_t offset = a.used.fetch_add(kChunk);
    if (offset + kChunk > kArenaBytes)
      return nullptr;
    a.chunk_class[offset >> kChunkBits] = static_cast<std::uint8_t>(c | (platform ? kPlatformChunk : 0));
    t.next = a.base + offset;
    t.end = t.next + kChunk;
  }
  void* p = t.next;
  t.next += slot;
  return p;
}

void* allocate(std::size_t n) {
  if (pool.platform_open && n <= kLargest) {
    if (void* p = pool_allocate(class_of_size(n), true)) {
      platform_live.fetch_add(1, std::memory_order_relaxed);
      return p;
    }
  } else if ((n > 16 && n <= 32) || (n <= kLargest && pool.wide)) {
    if (void* p = pool_allocate(class_of_size(n), false))
      return p;
  }
  return std::malloc(n == 0 ? 1 : n);
}

void release(void* p) noexcept {
  if (p == nullptr)
    return;
  if (Arena& a = arena(); a.owns(p)) {
    const std::uint8_t chunk = a.chunk_of(p);
    if ((chunk & kPlatformChunk) != 0) {
      platform_live.fetch_sub(1, std::memory_order_relaxed);
      // Another thread's free leaves the slot unused until the release.
      if (!pool.platform_owner)
        return;
    }
    ClassPool& t =
        (chunk & kPlatformChunk) != 0 ? pool.platform[chunk & ~kPlatformChunk] : pool.classes[chunk];
    *static_cast<void**>(p) = t.free_list;
    t.free_list = p;
    return;
  }
  std::free(p);
}

}  // namespace

// While the replay runs its simulation (sim/replay/replay.cpp). Outside it,
// glibc serves every size but 17 to 32 bytes: a graph's or an analysis's
// vectors growing through the classes would leave a freed slot in each,
// which glibc would have merged for the next larger block (scale-16k peaked
// 17% higher with every class served throughout).
extern "C" void trainsim_small_object_pool_widen(bool wide) {
  pool.wide = wide;
}

// While open, this thread's small allocations come from the platform's
// chunks (sim/platform/platform_arena.hpp); never without the reservation
// (as under valgrind), where each would try the pool before malloc.
extern "C" void trainsim_platform_arena_open(bool open) {
  pool.platform_open = open && arena().base != nullptr;
  if (pool.platform_open)
    pool.platform_owner = true;
}

// The platform's slots in use.
extern "C" long trainsim_platform_arena_in_use() {
  return static_cast<long>(platform_live.load());
}

// Gives the platform's chunks back to the system when none of their slots is
// in use, and says whether it did. Their address space is not handed out
// again (the arena has 64 GiB of it; a process builds one platform).
extern "C" bool trainsim_platform_arena_release() {
  Arena& a = arena();
  if (a.base == nullptr || !pool.platform_owner || pool.platform_open || platform_live.load() != 0)
    return false;
  const std::size_t chunks = std::min(a.used.load(), kArenaBytes) >> kChunkBits;
  for (std::size_t c = 0; c < chunks; ++c)
    if ((a.chunk_class[c] & kPlatformChunk) != 0) {
      ::madvise(a.base + (c << kChunkBits), kChunk, MADV_DONTNEED);
      a.chunk_class[c] = 0;
    }
  pool.platform = {};
  pool.platform_owner = false;
  return true;
}

void* operator new(std::size_t n) {
  if (void* p = allocate(n))
    return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) {
  return operator new(n);
}
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n);
}
void* operator new[](std::size_t n, const std::nothrow_t&) noexcept {
  return allocate(n);
}
void operator delete(void* p) noexcept {
  release(p);
}
void operator delete[](void* p) noexcept {
  release(p);
}
void operator delete(void* p, std::size_t) noexcept {
  release(p);
}
void operator delete[](void* p, std::size_t) noexcept {
  release(p);
}
void operator delete(void* p, const std::nothrow_t&) noexcept {
  release(p);
}
void operator delete[](void* p, const std::nothrow_t&) noexcept {
  release(p);
}
