#pragma once
// What the writers that stream a folded timeline class by class
// (RecordList::images_of, docs/performance.md "The fold") may take from a
// record for its images. An image record differs from the record it is an
// image of only in its GPU, task and peer numbering: its times and stream
// are the record's, and so, when its task is alike, are its bytes, label and
// the other row fields; what a row takes from them is then formatted once per
// class. Whether an image's task is alike is known, not assumed: once per run
// for all images (Timeline::alike: the fold's check, or
// images_alike_by_reading), else checked by the writers image by image.
#include <cstddef>

#include "analysis/timeline.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

// Tasks `a` and `b` have the same label (workloads::task_label), kind,
// micro-batch, stage and bytes.
inline bool same_row_fields(const workloads::TaskGraph& graph, workloads::TaskId a, workloads::TaskId b) {
  const workloads::Task& x = graph[a];
  const workloads::Task& y = graph[b];
  if (x.kind != y.kind || x.comm != y.comm || x.op != y.op || x.transfer != y.transfer ||
      x.micro_batch != y.micro_batch || x.chunk != y.chunk || x.layer != y.layer ||
      x.attention != y.attention || x.stage != y.stage || !(x.bytes == y.bytes))
    return false;
  const auto label_of = [&](workloads::TaskId t) -> const std::string* {
    return t < graph.labels.size() && !graph.labels[t].empty() ? &graph.labels[t] : nullptr;
  };
  const std::string* la = label_of(a);
  const std::string* lb = label_of(b);
  return la == nullptr ? lb == nullptr : lb != nullptr && *la == *lb;
}

// Image k of a task's peer: a GPU rank's image under the fold (its images
// map GPU ranks onto GPU ranks, the first `gpu_count` endpoints); no peer
// (-1), or any other number, as it is. What the fold's check maps a peer by
// (sim/replay/fold_task_match.hpp, TaskRunMatcher::map_gpu).
inline int image_peer(int peer, int k, int gpu_count, const FoldImages& images) {
  if (peer < 0 || peer >= gpu_count || static_cast<std::size_t>(peer) >= images.endpoints.size())
    return peer;
  return static_cast<int>(images.endpoints.power(static_cast<std::size_t>(peer), k));
}

// Which recorded records of `records` have alike images, found by reading
// every image's task (same_row_fields with the record's task, peer
// image_peer of its peer): for images no check covered, and the reference
// the tests pin the fold's fact against. Unknown when `records` is not
// folded.
ImagesAlike images_alike_by_reading(const workloads::TaskGraph& graph, const TaskRecords& records);

}  // namespace trainsim::analysis
