#pragma once
// What the folds (sim/replay/replica_fold.hpp, sim/replay/class_fold.hpp)
// compare between a task and its image: every attribute the replay and the
// analyses read, bit for bit, with its GPUs mapped; memory events as sets;
// uneven exchanges member by member.
#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <tuple>
#include <vector>

#include "workloads/task_graph.hpp"

namespace trainsim::sim::fold_match {

using workloads::Task;
using workloads::TaskGraph;
using workloads::TaskId;
using workloads::TaskKind;

inline std::uint64_t bits(double x) {
  std::uint64_t b = 0;
  std::memcpy(&b, &x, sizeof b);
  return b;
}

// What makes a spanning collective's expansion (group, op, bytes, fold,
// algorithm): the key under which the checks below treat it once. None for
// one that moves nothing (fewer than two members, or no bytes). A tuple, not
// formatted text: scale-512 with ZeRO-3 asks it of 73,728 spanning gathers
// and reduce-scatters, twice.
using SpanningSignature = std::tuple<int, int, std::uint64_t, int, int>;
inline std::optional<SpanningSignature> spanning_signature(const TaskGraph& graph, const Task& t) {
  if (graph.groups[static_cast<std::size_t>(t.group)].size() < 2 || t.bytes <= 0)
    return std::nullopt;
  return SpanningSignature{t.group, static_cast<int>(t.op), bits(t.bytes), t.fold,
                           static_cast<int>(t.algorithm)};
}

// What a task and its image must share: every attribute the replay and the
// analyses read, `t`'s GPUs and group given mapped (`gpu`, `peer`,
// `group_set`: its image's canonical group, -1 for other tasks) and `u`'s
// as they are; doubles bit for bit, and as many memory events. Compared
// field by field (not packed into keys first: 1.16M pairs on scale-16k).
inline bool alike(const Task& t, int gpu, int peer, int group_set, const Task& u, int u_group_set) {
  return t.kind == u.kind && t.comm == u.comm && t.op == u.op && t.transfer == u.transfer &&
         t.algorithm == u.algorithm && t.attention == u.attention && gpu == u.gpu && peer == u.peer &&
         group_set == u_group_set && t.stage == u.stage && t.chunk == u.chunk &&
         t.micro_batch == u.micro_batch && t.layer == u.layer && bits(t.duration_s) == bits(u.duration_s) &&
         bits(t.memory_bound_fraction) == bits(u.memory_bound_fraction) &&
         bits(t.model_flops) == bits(u.model_flops) && bits(t.hardware_flops) == bits(u.hardware_flops) &&
         bits(t.bytes) == bits(u.bytes) && t.fold == u.fold &&
         t.memory_end - t.memory_begin == u.memory_end - u.memory_begin &&
         bits(t.imbalance_s) == bits(u.imbalance_s);
}

// The GPUs a task runs on.
template <class F>
void for_each_gpu(const TaskGraph& graph, const Task& t, F&& f) {
  if (t.kind == TaskKind::collective) {
    for (int g : graph.groups[static_cast<std::size_t>(t.group)])
      f(g);
    return;
  }
  if (t.gpu >= 0)
    f(t.gpu);
  if (t.kind == TaskKind::send && t.peer >= 0)
    f(t.peer);
}

inline std::string task_name(const TaskGraph& graph, TaskId id) {
  return fmt::format("task {} ({})", id, workloads::task_label(graph, id));
}

// A task's memory events and its image's, as sets (a spanning collective
// lists its members' events in its group's order, which the rotation
// shifts).
// `x` and `y`: scratch lists, reused from task to task.
using MemoryEvent = std::tuple<int, int, int, std::uint64_t>;
inline bool same_memory(const TaskGraph& graph, const Task& a, const Task& b,
                        const std::vector<int>& gpu_image, std::vector<MemoryEvent>& x,
                        std::vector<MemoryEvent>& y) {
  const std::uint32_t n = a.memory_end - a.memory_begin;
  if (n == 0)
    return true;
  // Listed in the same order (every task but a spanning collective): equal
  // lists are equal sets, without sorting.
  bool in_order = true;
  for (std::uint32_t i = 0; i < n && in_order; ++i) {
    const auto& e = graph.memory[a.memory_begin + i];
    const auto& f = graph.memory[b.memory_begin + i];
    in_order = gpu_image[static_cast<std::size_t>(e.gpu)] == f.gpu && e.at == f.at && e.kind == f.kind &&
               bits(e.bytes) == bits(f.bytes);
  }
  if (in_order)
    return true;
  x.clear();
  y.clear();
  for (std::uint32_t i = 0; i < n; ++i) {
    const auto& e = graph.memory[a.memory_begin + i];
    const auto& f = graph.memory[b.memory_begin + i];
    x.emplace_back(gpu_image[static_cast<std::size_t>(e.gpu)], static_cast<int>(e.at),
                   static_cast<int>(e.kind), bits(e.bytes));
    y.emplace_back(f.gpu, static_cast<int>(f.at), static_cast<int>(f.kind), bits(f.bytes));
  }
  std::sort(x.begin(), x.end());
  std::sort(y.begin(), y.end());
  return x == y;
}

// Two exchanges alike bit for bit.
inline bool same_exchange(const workloads::Exchange& a, const workloads::Exchange& b) {
  const auto same = [](const std::vector<double>& x, const std::vector<double>& y) {
    return x.size() == y.size() &&
           std::equal(x.begin(), x.end(), y.begin(), [](double p, double q) { return bits(p) == bits(q); });
  };
  return same(a.send_bytes, b.send_bytes) && same(a.dispatch_bytes, b.dispatch_bytes) &&
         same(a.combine_bytes, b.combine_bytes) && bits(a.node_share) == bits(b.node_share) &&
         same(a.node_shares, b.node_shares);
}

// The groups' images under a relabelling of GPUs (`gpu_image`): one
// canonical index per distinct member list, and each canonical group's
// image: the group listing the image GPUs in the image order
// (make_collective lays a group out in its order; member k onto member k,
// so an uneven exchange's matrix carries over unpermuted, `in_order`), or
// the group itself when the relabelling maps its set onto itself (a
// collective across the replicas); -1 when neither.
struct GroupImages {
  std::vector<int> canonical;
  std::vector<int> image;
  std::vector<char> in_order;
};

inline GroupImages group_images(const std::vector<std::vector<int>>& groups,
                                const std::vector<int>& gpu_image) {
  GroupImages out;
  std::map<std::vector<int>, int> list_index;
  out.canonical.resize(groups.size());
  for (std::size_t i = 0; i < groups.size(); ++i)
    out.canonical[i] = list_index.emplace(groups[i], static_cast<int>(i)).first->second;
  out.image.assign(groups.size(), -1);
  out.in_order.assign(groups.size(), 0);
  std::vector<int> image_list;
  for (std::size_t i = 0; i < groups.size(); ++i) {
    if (out.canonical[i] != static_cast<int>(i))
      continue;
    image_list.clear();
    for (int g : groups[i])
      image_list.push_back(gpu_image[static_cast<std::size_t>(g)]);
    if (const auto it = list_index.find(image_list); it != list_index.end()) {
      out.image[i] = it->second;
      out.in_order[i] = 1;
      continue;
    }
    auto set = groups[i];
    std::sort(set.begin(), set.end());
    std::sort(image_list.begin(), image_list.end());
    if (set == image_list)
      out.image[i] = static_cast<int>(i);
  }
  return out;
}

// Task ids grouped by anchor (a GPU, a group), each anchor's in id order:
// rows of one array, filled by a counting sort rather than a list per
// anchor (1.16M appends on scale-16k).
class AnchorRows {
 public:
  // anchor_of(id): the task's anchor, below `anchors`, or -1 for a task
  // that has none. Returns the first such task's id, the rows then unset.
  template <class AnchorOf>
  std::optional<TaskId> fill(std::size_t anchors, std::size_t tasks, AnchorOf&& anchor_of) {
    std::vector<std::uint32_t> anchor(tasks);
    start_.assign(anchors + 1, 0);
    for (TaskId id = 0; id < tasks; ++id) {
      const int a = anchor_of(id);
      if (a < 0)
        return id;
      anchor[id] = static_cast<std::uint32_t>(a);
      ++start_[anchor[id] + 1];
    }
    for (std::size_t a = 0; a < anchors; ++a)
      start_[a + 1] += start_[a];
    ids_.resize(tasks);
    std::vector<std::uint32_t> next(start_.begin(), start_.end() - 1);
    for (TaskId id = 0; id < tasks; ++id)
      ids_[next[anchor[id]]++] = static_cast<std::uint32_t>(id);
    return std::nullopt;
  }
  std::span<const std::uint32_t> row(std::size_t anchor) const {
    return {ids_.data() + start_[anchor], ids_.data() + start_[anchor + 1]};
  }

 private:
  std::vector<std::uint32_t> start_;
  std::vector<std::uint32_t> ids_;
};

// Matches a run of tasks onto its image's, k-th onto k-th (the tasks of a
// GPU or a group, in id order, onto those of its image): each pair alike in
// every attribute with its GPUs and group mapped, in its memory events and
// its uneven exchange; records task_image[from[k]] = to[k]. Empty when they
// match, else why not.
class TaskRunMatcher {
 public:
  TaskRunMatcher(const TaskGraph& graph, const std::vector<int>& gpu_image, const GroupImages& groups)
      : graph_(graph), gpu_image_(gpu_image), groups_(groups) {}

  std::string match(std::span<const std::uint32_t> from, std::span<const std::uint32_t> to,
                    std::vector<std::uint32_t>& task_image) {
    if (from.size() != to.size())
      return fmt::format("{} has no image (the replicas' tasks differ)", task_name(graph_, from.front()));
    for (std::size_t k = 0; k < from.size(); ++k) {
      const Task& t = graph_[from[k]];
      const Task& u = graph_[to[k]];
      if (!alike(t, map_gpu(t.gpu), map_gpu(t.peer), group_key(t, true), u, group_key(u, false)))
        return fmt::format("{} has no image (the replicas' tasks differ)", task_name(graph_, from[k]));
      if (!same_memory(graph_, t, u, gpu_image_, events_from_, events_to_))
        return fmt::format("{}'s memory events differ from its image's", task_name(graph_, from[k]));
      if (t.exchange >= 0 || u.exchange >= 0) {
        // An uneven exchange (MoE routing imbalance, a DeepEP dispatch) maps
        // onto its image's only member by member: a group the relabelling
        // maps onto itself would permute its matrix, which the folds do not.
        if (t.exchange < 0 || u.exchange < 0 ||
            !groups_.in_order[static_cast<std::size_t>(groups_.canonical[static_cast<std::size_t>(t.group)])])
          return fmt::format("{}'s uneven exchange has no image", task_name(graph_, from[k]));
        if (t.exchange != u.exchange &&
            !same_exchange(graph_.exchanges[static_cast<std::size_t>(t.exchange)],
                           graph_.exchanges[static_cast<std::size_t>(u.exchange)]))
          return fmt::format(
              "{}'s exchange differs from its image's (the replicas route their tokens "
              "differently)",
              task_name(graph_, from[k]));
      }
      task_image[from[k]] = to[k];
    }
    return {};
  }

 private:
  // A GPU's image; a task's missing GPU (-1) or an endpoint past the GPUs
  // stays as it is.
  int map_gpu(int g) const {
    return g < 0 || static_cast<std::size_t>(g) >= gpu_image_.size()
               ? g
               : gpu_image_[static_cast<std::size_t>(g)];
  }
  // A collective's canonical group, or its image's; -1 for other tasks.
  int group_key(const Task& t, bool image) const {
    if (t.kind != TaskKind::collective)
      return -1;
    const int c = groups_.canonical[static_cast<std::size_t>(t.group)];
    return image ? groups_.image[static_cast<std::size_t>(c)] : c;
  }

  const TaskGraph& graph_;
  const std::vector<int>& gpu_image_;
  const GroupImages& groups_;
  std::vector<MemoryEvent> events_from_, events_to_;
};

// Every task's dependencies map onto its image's, as sets (with the task
// images a bijection, the relabelling is then an automorphism of the
// dependency graph), and no edge crosses where the fold forbids it:
// `crossing(task, next)` says why the edge may not be, empty when it may.
// Empty when both hold, else why not.
template <class Crossing>
std::string dependencies_map_onto_images(const TaskGraph& graph, const std::vector<std::uint32_t>& task_image,
                                         Crossing&& crossing) {
  // The sealed rows read in place (a task's out-edges in the order added):
  // no list built per task unless the orders differ.
  const auto& rows = graph.dependencies().m_forward;
  const auto& start = rows.m_rowstart;
  const auto& column = rows.m_column;
  std::vector<TaskId> mapped, expected;
  for (TaskId id = 0; id < graph.size(); ++id) {
    const std::size_t from = start[id], from_end = start[id + 1];
    for (std::size_t k = from; k < from_end; ++k)
      if (auto why = crossing(id, TaskId{column[k]}); !why.empty())
        return why;
    const std::uint32_t image = task_image[id];
    const std::size_t to = start[image], to_end = start[image + 1];
    // In the same order (an image's edges were added as its task's were),
    // equal lists are equal sets, without sorting.
    bool in_order = from_end - from == to_end - to;
    for (std::size_t k = 0; in_order && k < from_end - from; ++k)
      in_order = task_image[column[from + k]] == column[to + k];
    if (in_order)
      continue;
    mapped.clear();
    expected.clear();
    for (std::size_t k = from; k < from_end; ++k)
      mapped.push_back(task_image[column[k]]);
    for (std::size_t k = to; k < to_end; ++k)
      expected.push_back(column[k]);
    std::sort(mapped.begin(), mapped.end());
    std::sort(expected.begin(), expected.end());
    if (mapped != expected)
      return fmt::format("the dependencies of {} differ from its image's", task_name(graph, id));
  }
  return {};
}

}  // namespace trainsim::sim::fold_match
