// A pool for 17- to 32-byte allocations, replacing the global operator new
// and delete of the trainsim executable (only: it is a source of the
// executable, not of a library).
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
// The pool reserves address space once (no memory until touched), hands out
// 32-byte slots by bumping a pointer, and keeps freed slots on a free list
// (per thread: trainsim's simulations are single-threaded, the study
// commands' threads only wait on child processes). Other sizes, and
// everything if the reservation fails, go to malloc.
#include <sys/mman.h>

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <new>

namespace {

constexpr std::size_t kSlot = 32;
constexpr std::size_t kArenaBytes = std::size_t{1} << 36;  // 64 GiB of address space
constexpr std::size_t kChunk = std::size_t{1} << 20;       // taken from the arena per thread

struct Arena {
  char* base = nullptr;
  std::atomic<std::size_t> used{0};
  Arena() {
    void* p = mmap(nullptr, kArenaBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (p != MAP_FAILED)
      base = static_cast<char*>(p);
  }
  bool owns(const void* p) const { return base != nullptr && p >= base && p < base + kArenaBytes; }
};

Arena& arena() {
  static Arena a;  // first use may come from a static constructor anywhere
  return a;
}

struct ThreadPool {
  void* free_list = nullptr;
  char* next = nullptr;
  char* end = nullptr;
};
thread_local ThreadPool pool;

void* pool_allocate() {
  ThreadPool& t = pool;
  if (t.free_list != nullptr) {
    void* p = t.free_list;
    t.free_list = *static_cast<void**>(p);
    return p;
  }
  if (t.next == t.end) {
    Arena& a = arena();
    if (a.base == nullptr)
      return nullptr;
    const std::size_t offset = a.used.fetch_add(kChunk);
    if (offset + kChunk > kArenaBytes)
      return nullptr;
    t.next = a.base + offset;
    t.end = t.next + kChunk;
  }
  void* p = t.next;
  t.next += kSlot;
  return p;
}

void* allocate(std::size_t n) {
  if (n > 16 && n <= kSlot)
    if (void* p = pool_allocate())
      return p;
  return std::malloc(n == 0 ? 1 : n);
}

void release(void* p) noexcept {
  if (p == nullptr)
    return;
  if (arena().owns(p)) {
    *static_cast<void**>(p) = pool.free_list;
    pool.free_list = p;
    return;
  }
  std::free(p);
}

}  // namespace

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
