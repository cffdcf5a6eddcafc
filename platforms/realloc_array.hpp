#pragma once
// A growable array of trivially copyable elements that grows by realloc:
// past glibc's mmap threshold (32 MiB at most) realloc moves a block by
// remapping its pages rather than copying them, so doubling a 100 MB array
// costs a system call, not a copy of 100 MB and a first touch of as many
// new pages. What std::vector's doubling cost the task graph's builder,
// whose tasks grow to 1.16M (111 MB) on scale-16k without a count known
// before building (docs/performance.md, "The builder's op lists and sealed
// rows"). Capacities grow as std::vector's do (1, 2, 4, ...; exact on
// reserve and on copy), so memory figures read as they did.
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <new>
#include <type_traits>
#include <utility>

namespace trainsim::platforms {

template <typename T>
class ReallocArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  ReallocArray() = default;
  ReallocArray(const ReallocArray& other) { assign(other); }
  ReallocArray(ReallocArray&& other) noexcept { steal(other); }
  ReallocArray& operator=(const ReallocArray& other) {
    if (this != &other) {
      clear_and_free();
      assign(other);
    }
    return *this;
  }
  ReallocArray& operator=(ReallocArray&& other) noexcept {
    if (this != &other) {
      clear_and_free();
      steal(other);
    }
    return *this;
  }
  ~ReallocArray() { std::free(data_); }

  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  bool empty() const { return size_ == 0; }
  T& operator[](std::size_t i) { return data_[i]; }
  const T& operator[](std::size_t i) const { return data_[i]; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }

  // The value is taken as a copy before the array may move: an element of
  // this array may be appended.
  T& push_back(T value) {
    if (size_ == capacity_)
      grow_to(capacity_ == 0 ? 1 : 2 * capacity_);
    data_[size_] = value;
    return data_[size_++];
  }
  void reserve(std::size_t n) {
    if (n > capacity_)
      grow_to(n);
  }
  // Empty, its memory given back.
  void clear_and_free() {
    std::free(data_);
    data_ = nullptr;
    size_ = capacity_ = 0;
  }

 private:
  void grow_to(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T))
      throw std::bad_alloc();
    void* p = std::realloc(data_, n * sizeof(T));
    if (p == nullptr)
      throw std::bad_alloc();
    data_ = static_cast<T*>(p);
    capacity_ = n;
  }
  void assign(const ReallocArray& other) {
    if (other.size_ == 0)
      return;
    grow_to(other.size_);
    std::memcpy(static_cast<void*>(data_), other.data_, other.size_ * sizeof(T));
    size_ = other.size_;
  }
  void steal(ReallocArray& other) {
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    capacity_ = std::exchange(other.capacity_, 0);
  }

  T* data_ = nullptr;
  std::size_t size_ = 0, capacity_ = 0;
};

}  // namespace trainsim::platforms
