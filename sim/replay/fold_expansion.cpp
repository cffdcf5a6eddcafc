#include "sim/replay/fold_expansion.hpp"

#include <cstdint>
#include <unordered_map>

namespace trainsim::sim {
namespace {
constexpr std::uint32_t kNone = static_cast<std::uint32_t>(-1);
}  // namespace

void expand_folded_timeline(analysis::Timeline& timeline, const ReplicaFold& fold, const ClusterZone& zone,
                            const std::vector<const simgrid::s4u::Link*>& link_of_index) {
  const int m = fold.order;
  if (m <= 1)
    return;
  // Task records.
  std::vector<analysis::TaskRecord> records;
  records.reserve(timeline.records.size() * static_cast<std::size_t>(m));
  for (const auto& r : timeline.records) {
    records.push_back(r);
    if (fold.spanning[r.task])
      continue;
    auto image = r;
    for (int j = 1; j < m; ++j) {
      image.task = fold.task_image[image.task];
      image.gpu = fold.endpoint_image[static_cast<std::size_t>(image.gpu)];
      records.push_back(image);
    }
  }
  timeline.records = std::move(records);
  // Collective choices.
  std::vector<std::pair<workloads::TaskId, analysis::CollectiveChoice>> choices(timeline.collectives.begin(),
                                                                                timeline.collectives.end());
  for (const auto& [task, choice] : choices) {
    if (fold.spanning[task])
      continue;
    auto image = task;
    for (int j = 1; j < m; ++j) {
      image = fold.task_image[image];
      timeline.collectives[image] = choice;
    }
  }
  // Links: each timeline link's image, numbered on first use.
  std::vector<const simgrid::s4u::Link*> links = link_of_index;
  std::unordered_map<const simgrid::s4u::Link*, std::uint32_t> index_of;
  for (std::uint32_t i = 0; i < links.size(); ++i)
    index_of.emplace(links[i], i);
  std::vector<std::uint32_t> link_step(links.size(), kNone);
  const auto image_of_link = [&](std::uint32_t i) {
    if (i < link_step.size() && link_step[i] != kNone)
      return link_step[i];
    const auto* to = zone.link_image(links[i]);
    auto [pos, fresh] = index_of.emplace(to, static_cast<std::uint32_t>(links.size()));
    if (fresh) {
      links.push_back(to);
      timeline.links.push_back({to->get_name(), to->get_bandwidth(), to->get_latency()});
    }
    if (link_step.size() < links.size())
      link_step.resize(links.size(), kNone);
    link_step[i] = pos->second;
    return pos->second;
  };
  // Routes: each recorded route's image, once.
  std::unordered_map<std::uint64_t, std::uint32_t> route_step;
  const auto image_of_route = [&](std::uint32_t first, std::uint32_t count) {
    const std::uint64_t key = static_cast<std::uint64_t>(first) << 32 | count;
    if (const auto it = route_step.find(key); it != route_step.end())
      return it->second;
    const auto image = static_cast<std::uint32_t>(timeline.flow_links.size());
    for (std::uint32_t k = 0; k < count; ++k) {
      const std::uint32_t link = image_of_link(timeline.flow_links[first + k]);
      timeline.flow_links.push_back(link);
    }
    route_step.emplace(key, image);
    return image;
  };
  std::vector<analysis::FlowRecord> flows;
  flows.reserve(timeline.flows.size() * static_cast<std::size_t>(m));
  for (const auto& f : timeline.flows) {
    flows.push_back(f);
    auto image = f;
    for (int j = 1; j < m; ++j) {
      if (!fold.spanning[image.task])
        image.task = fold.task_image[image.task];
      image.src_gpu = fold.endpoint_image[static_cast<std::size_t>(image.src_gpu)];
      image.dst_gpu = fold.endpoint_image[static_cast<std::size_t>(image.dst_gpu)];
      image.first_link = image_of_route(image.first_link, image.link_count);
      flows.push_back(image);
    }
  }
  timeline.flows = std::move(flows);
}

}  // namespace trainsim::sim
