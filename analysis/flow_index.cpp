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
  const auto& fl = timeline.flow_links;
  const auto each_crossing = [&] {
    return FlowIndex(timeline, timeline.links.size(), [&](auto&& emit) {
      for (std::size_t f = 0; f < flows.size(); ++f)
        for (std::uint32_t k = 0; k < flows[f].link_count; ++k)
          emit(representative[fl[flows[f].first_link + k]], f);
    });
  };
  // A folded timeline numbers its recorded routes (FoldImages::route_slot),
  // and flows share them: each route's links are mapped to their orbits
  // once, not once per flow crossing them, and the flows are counted per
  // route, then added to its links' orbits. The same entries, in the same
  // order, as counting every crossing.
  const FoldImages* images = timeline.flows.fold_images();
  if (images == nullptr || images->order < 1 || flows.size() > std::numeric_limits<std::uint32_t>::max())
    return each_crossing();
  const std::size_t slots = images->route_images.size() / static_cast<std::size_t>(images->order);
  std::vector<std::uint32_t> uses(slots, 0), first_of(slots, 0), count_of(slots, 0);
  for (const auto& flow : flows) {
    const std::uint32_t s = flow.first_link < images->route_slot.size() ? images->route_slot[flow.first_link]
                                                                        : FoldImages::kNoRoute;
    if (s >= slots || (uses[s] > 0 && (first_of[s] != flow.first_link || count_of[s] != flow.link_count)))
      return each_crossing();
    if (uses[s]++ == 0) {
      first_of[s] = flow.first_link;
      count_of[s] = flow.link_count;
    }
  }
  // Each route's links' orbits, route after route from at[s].
  std::vector<std::size_t> at(slots + 1, 0);
  for (std::size_t s = 0; s < slots; ++s)
    at[s + 1] = at[s] + (uses[s] > 0 ? count_of[s] : 0);
  std::vector<std::uint32_t> orbit(at.back());
  FlowIndex index;
  index.begin_.assign(timeline.links.size() + 1, 0);
  for (std::size_t s = 0; s < slots; ++s)
    for (std::size_t k = 0; k < at[s + 1] - at[s]; ++k) {
      orbit[at[s] + k] = representative[fl[first_of[s] + k]];
      index.begin_[orbit[at[s] + k] + 1] += uses[s];
    }
  for (std::size_t k = 1; k < index.begin_.size(); ++k)
    index.begin_[k] += index.begin_[k - 1];
  index.flows_.resize(index.begin_.back());
  std::vector<std::size_t> next(index.begin_.begin(), index.begin_.end() - 1);
  for (std::size_t f = 0; f < flows.size(); ++f) {
    const auto* route = orbit.data() + at[images->route_slot[flows[f].first_link]];
    for (std::uint32_t k = 0; k < flows[f].link_count; ++k)
      index.flows_[next[route[k]]++] = static_cast<std::uint32_t>(f);
  }
  return index;
}

}  // namespace trainsim::analysis
