#pragma once
// The analyses of a folded run, per class (docs/performance.md, "Analyses
// per class"). A folded timeline reads as the full replay's records: each
// recorded record followed by its m - 1 images (analysis/record_list.hpp).
// An image GPU has its representative's records at the same times (image
// tasks of the same kind, on the image GPUs), and an image link carries the
// images of its representative's flows, at the same times and bytes. So a
// per-GPU figure (intervals, utilisation, power spans) is computed once per
// GPU orbit, on its representative, and given to the m - 1 others; a per-link
// figure once per link orbit. Sums over GPUs or links stay the callers', in
// the full list's order, so that every figure is bit for bit the full
// computation's.
//
// On a timeline that is not folded, or whose images could differ from their
// representatives' (checked below), the classes are the identity: every GPU
// and link its own representative, every record read as the full list has it.
#include <cstdint>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "analysis/flow_index.hpp"
#include "analysis/timeline.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

// GPU orbits. Folded when the timeline's records are read as images, every
// GPU below `gpus` has m images, no send has both ends in one orbit (its two
// images would reach one GPU in another order than on its image), and every
// spanning collective's record (one per member, no images) has the same
// times and stream as the record of the same task on the member's image GPU.
class GpuClasses {
 public:
  static GpuClasses of(const workloads::TaskGraph& graph, const Timeline& timeline, std::size_t gpus);

  bool folded() const { return images_ != nullptr; }
  // The GPUs it was built for (`gpus` of of()).
  std::size_t size() const { return rep_.size(); }
  std::size_t representative(std::size_t gpu) const { return rep_[gpu]; }
  bool is_representative(std::size_t gpu) const { return rep_[gpu] == gpu; }
  // Folded: the images it reads through, and the power of the rotation
  // that takes `gpu`'s representative to `gpu` (a task on the
  // representative has its image on `gpu` under the same power). Not
  // folded: null and 0.
  const FoldImages* images() const { return images_; }
  int step(std::size_t gpu) const { return step_[gpu]; }

  // Folded: for each GPU, at least as many records as for_each_record gives
  // with it as their GPU or as a send's peer (counted in of()'s pass over the
  // records, so that a caller filing them per GPU reserves its lists without
  // a pass of its own). Not folded: empty.
  std::span<const std::uint32_t> landing_counts() const { return landings_; }

  // Every record of the timeline (as the full list reads) that lands on a
  // representative GPU, on its GPU or, for a send, on its peer; in the full
  // list's order. Not folded: every record. A caller keeps what lands on a
  // representative (a send's other end may not be one).
  template <class OnRecord>
  void for_each_record(const OnRecord& on) const {
    if (!images_) {
      for (const auto& r : timeline_->records)
        on(r);
      return;
    }
    for (const auto& r : timeline_->records.recorded()) {
      const auto& task = (*graph_)[r.task];
      const bool send = task.kind == workloads::TaskKind::send && task.peer >= 0;
      if (images_->tasks.fixed(r.task)) {  // a spanning collective: one record per member
        if (is_representative(static_cast<std::size_t>(r.gpu)) ||
            (send && is_representative(static_cast<std::size_t>(task.peer))))
          on(r);
        continue;
      }
      int k = landing(static_cast<std::size_t>(r.gpu));
      int peer_k = -1;
      if (send)
        peer_k = landing(static_cast<std::size_t>(task.peer));
      if (peer_k >= 0 && peer_k < k)
        std::swap(k, peer_k);
      // Image 0 is the record itself (a representative's record, as the
      // replay records them): no lookup of its powers.
      on(k == 0 ? r : TaskRecordImages::image(r, k, *images_));
      if (peer_k >= 0 && peer_k != k)
        on(peer_k == 0 ? r : TaskRecordImages::image(r, peer_k, *images_));
    }
  }

 private:
  // of()'s check of the spanning collectives' records ((task, GPU) key,
  // index in `recorded`, in recorded order) when each task's are one run of
  // consecutive entries: whether they pass; nullopt when some task's records
  // are apart (of() then checks them all sorted).
  static std::optional<bool> check_spanning_runs(
      const std::vector<std::pair<std::uint64_t, std::size_t>>& spanning,
      const std::vector<TaskRecord>& recorded, std::size_t tasks, const FoldImages& images);

  // The image of a record on `gpu`'s orbit that lands on the representative.
  int landing(std::size_t gpu) const { return step_[gpu] == 0 ? 0 : images_->order - step_[gpu]; }

  const workloads::TaskGraph* graph_ = nullptr;
  const Timeline* timeline_ = nullptr;
  const FoldImages* images_ = nullptr;   // null: not folded
  std::vector<std::uint32_t> rep_;       // each GPU's representative (the lowest of its orbit)
  std::vector<std::uint16_t> step_;      // gpu = the rotation's step-th power of its representative
  std::vector<std::uint32_t> landings_;  // landing_counts()
};

// Link orbits. Folded when the timeline's flows are read as images, every
// link has m distinct images (from the recorded routes' images), and no
// recorded route crosses two links of one orbit (its flow's images would
// reach one link in another order than on its image).
class LinkClasses {
 public:
  static LinkClasses of(const Timeline& timeline);

  bool folded() const { return folded_; }
  std::size_t representative(std::size_t link) const { return rep_[link]; }
  bool is_representative(std::size_t link) const { return rep_[link] == link; }

  // A representative link's flows, in the full list's order, as flow
  // numbers to read with record(): folded, the recorded flows one of whose
  // images crosses it (the images crossing its image links are the same
  // records' images, in the same order); not folded, every flow crossing it.
  std::span<const std::uint32_t> flows_of(std::size_t link) const { return flows_.of(link); }
  std::span<std::uint32_t> flows_of(std::size_t link) { return flows_.of(link); }
  // Bytes, times and route of flow number n (folded: the recorded flow; not
  // folded: the flow it is an image of, as RecordList::source).
  const FlowRecord& record(std::uint32_t n) const {
    return folded_ ? timeline_->flows.recorded()[n] : timeline_->flows.source(n);
  }
  // Puts a link's flows (flows_of) in order of start, ties in their order
  // before: sorted on (start, place in the list), which is that stable order,
  // with each start read once rather than at every comparison. `keyed` is
  // left holding each flow's (start, place before) in the new order; a list
  // in that order already is left as it is. `on_record` is given each flow's
  // record in the order before, as it is read for its start (a caller's
  // other figures in the same pass over the records).
  template <class OnRecord>
  void order_by_start(std::size_t link, std::vector<std::pair<double, std::uint32_t>>& keyed,
                      OnRecord&& on_record) {
    const auto list = flows_of(link);
    keyed.clear();
    keyed.reserve(list.size());
    for (std::uint32_t k = 0; k < list.size(); ++k) {
      const FlowRecord& flow = record(list[k]);
      on_record(flow);
      keyed.emplace_back(flow.start_s, k);
    }
    put_in_order(list, keyed);
  }
  void order_by_start(std::size_t link, std::vector<std::pair<double, std::uint32_t>>& keyed) {
    order_by_start(link, keyed, [](const FlowRecord&) {});
  }

 private:
  LinkClasses(const Timeline& timeline, FlowIndex flows) : timeline_(&timeline), flows_(std::move(flows)) {}
  // order_by_start's sort of `keyed` and the list's permutation.
  static void put_in_order(std::span<std::uint32_t> list,
                           std::vector<std::pair<double, std::uint32_t>>& keyed);

  const Timeline* timeline_ = nullptr;
  FlowIndex flows_;
  bool folded_ = false;
  std::vector<std::uint32_t> rep_;
};

}  // namespace trainsim::analysis
