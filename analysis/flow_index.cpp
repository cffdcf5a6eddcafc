#include "analysis/flow_index.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <utility>

namespace trainsim::analysis {

template <class ForEachPair>
FlowIndex::FlowIndex(const Timeline& timeline, std::size_t keys, ForEachPair for_each_pair)
    : begin_(keys + 1, 0) {
  if (timeline.flows.size() > std::numeric_limits<std::uint32_t>::max())
    throw std::length_error("more than 2^32 flows in one timeline");
  // Count, turn the counts into offsets, then fill in flow order.
  for_each_pair([&](std::size_t key, std::size_t) { ++begin_[key + 1]; });
  for (std::size_t k = 1; k < begin_.size(); ++k)
    begin_[k] += begin_[k - 1];
  flows_.resize(begin_.back());
  std::vector<std::size_t> next(begin_.begin(), begin_.end() - 1);
  for_each_pair(
      [&](std::size_t key, std::size_t flow) { flows_[next[key]++] = static_cast<std::uint32_t>(flow); });
}

FlowIndex FlowIndex::by_link(const Timeline& timeline) {
  return FlowIndex(timeline, timeline.links.size(), [&](auto&& emit) {
    std::size_t f = 0;
    for (const auto& flow : timeline.flows) {
      for (std::uint32_t k = 0; k < flow.link_count; ++k)
        emit(timeline.flow_links[flow.first_link + k], f);
      ++f;
    }
  });
}

FlowIndex FlowIndex::by_task(const Timeline& timeline) {
  workloads::TaskId tasks = 0;
  for (const auto& flow : timeline.flows)
    tasks = std::max(tasks, flow.task + 1);
  return FlowIndex(timeline, tasks, [&](auto&& emit) {
    std::size_t f = 0;
    for (const auto& flow : timeline.flows)
      emit(flow.task, f++);
  });
}

FlowIndex FlowIndex::by_recorded_task(const Timeline& timeline) {
  const auto& flows = timeline.flows.recorded();
  workloads::TaskId tasks = 0;
  for (const auto& flow : flows)
    tasks = std::max(tasks, flow.task + 1);
  return FlowIndex(timeline, tasks, [&](auto&& emit) {
    for (std::size_t f = 0; f < flows.size(); ++f)
      emit(flows[f].task, f);
  });
}

FlowIndex FlowIndex::of_tasks(const Timeline& timeline, bool recorded,
                              const std::vector<workloads::TaskId>& tasks) {
  constexpr std::uint32_t kNotAsked = std::numeric_limits<std::uint32_t>::max();
  std::vector<std::uint32_t> key_of(tasks.empty() ? 0 : tasks.back() + 1, kNotAsked);
  for (std::size_t i = 0; i < tasks.size(); ++i)
    key_of[tasks[i]] = static_cast<std::uint32_t>(i);
  // The asked flows as (key, flow) in flow order, then filed by the
  // counting sort (which keeps flow order within a key).
  std::vector<std::pair<std::uint32_t, std::uint32_t>> asked;
  const auto collect = [&](const auto& flows) {
    std::uint32_t f = 0;
    for (const auto& flow : flows) {
      if (flow.task < key_of.size() && key_of[flow.task] != kNotAsked)
        asked.emplace_back(key_of[flow.task], f);
      ++f;
    }
  };
  if (recorded)
    collect(timeline.flows.recorded());
  else
    collect(timeline.flows);
  return FlowIndex(timeline, tasks.size(), [&](auto&& emit) {
    for (const auto& [key, flow] : asked)
      emit(key, flow);
  });
}

FlowIndex FlowIndex::by_recorded_link(const Timeline& timeline,
                                      const std::vector<std::uint32_t>& representative) {
  const auto& flows = timeline.flows.recorded();
  return FlowIndex(timeline, timeline.links.size(), [&](auto&& emit) {
    for (std::size_t f = 0; f < flows.size(); ++f)
      for (std::uint32_t k = 0; k < flows[f].link_count; ++k)
        emit(representative[timeline.flow_links[flows[f].first_link + k]], f);
  });
}

}  // namespace trainsim::analysis
