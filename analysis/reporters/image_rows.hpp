#pragma once
// Writers that stream a folded timeline class by class (RecordList::images_of,
// docs/performance.md "The fold"): an image record differs from the record it
// is an image of only in its GPU, task and peer numbering; its times, stream,
// bytes and label are equal, so what a row takes from them is formatted once
// per class. Whether an image's task really writes the same row fields is
// checked here, not assumed: a writer formats the row whole when it does not.
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

}  // namespace trainsim::analysis
