#include "analysis/images_alike.hpp"

#include <utility>
#include <vector>

namespace trainsim::analysis {

ImagesAlike images_alike_by_reading(const workloads::TaskGraph& graph, const TaskRecords& records) {
  const FoldImages* images = records.fold_images();
  if (images == nullptr)
    return {};
  const auto& recorded = records.recorded();
  std::vector<char> alike(recorded.size(), 1);
  for (std::size_t i = 0; i < recorded.size(); ++i) {
    const TaskRecord& first = recorded[i];
    const int peer = graph[first.task].peer;
    const int n = records.images_of(first);
    for (int k = 1; k < n && alike[i] != 0; ++k) {
      const workloads::TaskId task = records.image(first, k).task;
      alike[i] = same_row_fields(graph, first.task, task) &&
                 graph[task].peer == image_peer(peer, k, graph.gpu_count, *images);
    }
  }
  return {records.shared_fold_images(), std::move(alike)};
}

}  // namespace trainsim::analysis
