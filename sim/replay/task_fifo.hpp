#pragma once
// A first-in first-out queue of task ids that holds no heap while empty:
// the replay keeps one per GPU of the whole cluster, and std::deque
// allocates its map and a first 512-byte block on construction (~576 B per
// GPU, 0.6 GB at 1,048,576 GPUs, though a folded replay uses the
// representatives' GPUs only). The ids are kept in one vector whose front
// is dropped once it is at least half the vector.
#include <cstddef>
#include <vector>

#include "workloads/task_graph.hpp"

namespace trainsim::sim {

class TaskFifo {
 public:
  bool empty() const { return head_ == ids_.size(); }
  workloads::TaskId front() const { return ids_[head_]; }
  void push_back(workloads::TaskId id) { ids_.push_back(id); }
  void pop_front() {
    ++head_;
    if (head_ == ids_.size()) {
      ids_.clear();
      head_ = 0;
    } else if (head_ >= kCompactFrom && 2 * head_ >= ids_.size()) {
      ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }

 private:
  static constexpr std::size_t kCompactFrom = 32;
  std::vector<workloads::TaskId> ids_;
  std::size_t head_ = 0;
};

}  // namespace trainsim::sim
