#pragma once
// What the replay records: one typed record per task execution on a GPU
// stream. Analysis and exporters read these records; they never see SimGrid.
#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

// GPU streams, as CUDA streams in Megatron / NCCL: one compute stream and one
// communication stream per parallelism, so overlap is visible.
enum class Stream : std::uint8_t { compute, tp_comm, pp_comm, dp_comm };
inline constexpr int kStreamCount = 4;
std::string_view to_string(Stream stream);
Stream stream_of(const workloads::Task& task);

struct TaskRecord {
  workloads::TaskId task = 0;
  int gpu = -1;
  Stream stream = Stream::compute;
  double start_s = 0;
  double end_s = 0;
};

// How the replay ran one collective task: the algorithm actually used (what
// `auto` chose, or what was asked for), how many parallel channels (rings or
// tree pairs) it used, and the flow model's fidelity.
struct CollectiveChoice {
  platforms::CollectiveAlgorithm algorithm = platforms::CollectiveAlgorithm::ring;
  int channels = 1;
  platforms::Fidelity fidelity = platforms::Fidelity::detailed;
};

struct Timeline {
  // One record per (task, GPU): a compute task or a send has one (on the
  // sender), a collective one per member GPU. Ordered by completion.
  std::vector<TaskRecord> records;
  double end_s = 0;
  // One entry per collective task that moved data.
  std::unordered_map<workloads::TaskId, CollectiveChoice> collectives;

  const CollectiveChoice* collective_choice(workloads::TaskId task) const {
    const auto it = collectives.find(task);
    return it == collectives.end() ? nullptr : &it->second;
  }
};

}  // namespace trainsim::analysis
