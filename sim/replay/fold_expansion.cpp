#include "sim/replay/fold_expansion.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <unordered_map>

namespace trainsim::sim {
namespace {
constexpr std::uint32_t kNone = static_cast<std::uint32_t>(-1);

// Each timeline link's image, numbered on first use (appended to the
// timeline's links); each route's image, copied once into flow_links.
class LinkImages {
 public:
  LinkImages(analysis::Timeline& timeline, const ClusterZone& zone,
             const std::vector<const simgrid::s4u::Link*>& link_of_index)
      : timeline_(timeline), zone_(zone), links_(link_of_index), link_step_(links_.size(), kNone) {
    for (std::uint32_t i = 0; i < links_.size(); ++i)
      index_of_.emplace(links_[i], i);
  }

  std::uint32_t image_of_route(std::uint32_t first, std::uint32_t count) {
    const std::uint64_t key = static_cast<std::uint64_t>(first) << 32 | count;
    if (const auto it = route_step_.find(key); it != route_step_.end())
      return it->second;
    const auto image = static_cast<std::uint32_t>(timeline_.flow_links.size());
    for (std::uint32_t k = 0; k < count; ++k) {
      const std::uint32_t link = image_of_link(timeline_.flow_links[first + k]);
      timeline_.flow_links.push_back(link);
    }
    route_step_.emplace(key, image);
    return image;
  }

 private:
  std::uint32_t image_of_link(std::uint32_t i) {
    if (i < link_step_.size() && link_step_[i] != kNone)
      return link_step_[i];
    const auto* to = zone_.link_image(links_[i]);
    auto [pos, fresh] = index_of_.emplace(to, static_cast<std::uint32_t>(links_.size()));
    if (fresh) {
      links_.push_back(to);
      timeline_.links.push_back({to->get_name(), to->get_bandwidth(), to->get_latency()});
    }
    if (link_step_.size() < links_.size())
      link_step_.resize(links_.size(), kNone);
    link_step_[i] = pos->second;
    return pos->second;
  }

  analysis::Timeline& timeline_;
  const ClusterZone& zone_;
  std::vector<const simgrid::s4u::Link*> links_;
  std::unordered_map<const simgrid::s4u::Link*, std::uint32_t> index_of_;
  std::vector<std::uint32_t> link_step_;
  std::unordered_map<std::uint64_t, std::uint32_t> route_step_;
};

void expand_collective_choices(analysis::Timeline& timeline, const ReplicaFold& fold) {
  const int m = fold.order;
  std::vector<std::pair<workloads::TaskId, analysis::CollectiveChoice>> choices(timeline.collectives.begin(),
                                                                                timeline.collectives.end());
  // Sized once for every image (scale-16k: 98,304 more), not rehashed as
  // they come.
  timeline.collectives.reserve(choices.size() * static_cast<std::size_t>(m));
  for (const auto& [task, choice] : choices) {
    if (fold.spanning[task])
      continue;
    auto image = task;
    for (int j = 1; j < m; ++j) {
      image = fold.task_image[image];
      timeline.collectives[image] = choice;
    }
  }
}

// The images as maps (analysis/fold_images.hpp), when the rotation's cycles
// on tasks and endpoints all have length m or 1 and the tasks that are their
// own images are exactly the spanning collectives (what the fold checks);
// nullopt otherwise, and the records are then materialised.
std::optional<analysis::FoldImages> fold_images(const ReplicaFold& fold) {
  auto tasks = analysis::PermutationPowers::of(fold.task_image, fold.order);
  auto endpoints = analysis::PermutationPowers::of(fold.endpoint_image, fold.order);
  if (!tasks || !endpoints || fold.spanning.size() != tasks->size())
    return std::nullopt;
  for (std::size_t t = 0; t < fold.spanning.size(); ++t)
    if ((fold.spanning[t] != 0) != tasks->fixed(t))
      return std::nullopt;
  analysis::FoldImages images;
  images.order = fold.order;
  images.tasks = std::move(*tasks);
  images.endpoints = std::move(*endpoints);
  return images;
}

// The full replay's records, materialised: each record followed by its images.
void materialise(analysis::Timeline& timeline, const ReplicaFold& fold, LinkImages& link_images) {
  const int m = fold.order;
  std::vector<analysis::TaskRecord> records;
  records.reserve(timeline.records.size() * static_cast<std::size_t>(m));
  for (const auto& r : timeline.records.recorded()) {
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
  timeline.records.recorded() = std::move(records);
  std::vector<analysis::FlowRecord> flows;
  flows.reserve(timeline.flows.size() * static_cast<std::size_t>(m));
  for (const auto& f : timeline.flows.recorded()) {
    flows.push_back(f);
    auto image = f;
    for (int j = 1; j < m; ++j) {
      if (!fold.spanning[image.task])
        image.task = fold.task_image[image.task];
      image.src_gpu = fold.endpoint_image[static_cast<std::size_t>(image.src_gpu)];
      image.dst_gpu = fold.endpoint_image[static_cast<std::size_t>(image.dst_gpu)];
      image.first_link = link_images.image_of_route(image.first_link, image.link_count);
      flows.push_back(image);
    }
  }
  timeline.flows.recorded() = std::move(flows);
}

}  // namespace

void expand_folded_timeline(analysis::Timeline& timeline, const ReplicaFold& fold, const ClusterZone& zone,
                            const std::vector<const simgrid::s4u::Link*>& link_of_index) {
  const int m = fold.order;
  if (m <= 1)
    return;
  expand_collective_choices(timeline, fold);
  LinkImages link_images(timeline, zone, link_of_index);
  auto images = fold_images(fold);
  if (!images) {
    materialise(timeline, fold, link_images);
    return;
  }
  // Routes: each recorded route's images, in the order the materialised
  // expansion makes them (flow by flow, image by image), so that links and
  // routes are numbered as there. A route's images are made at its first
  // flow; later flows on it find them made. A route is known by its first
  // link (an empty route may share it with the next: then materialised,
  // which keeps making the images in the same order).
  const auto recorded_routes = static_cast<std::uint32_t>(timeline.flow_links.size());
  images->route_slot.assign(static_cast<std::size_t>(recorded_routes) + 1, analysis::FoldImages::kNoRoute);
  std::vector<std::uint32_t> slot_links;
  for (const auto& f : timeline.flows.recorded()) {
    if (f.first_link > recorded_routes) {
      materialise(timeline, fold, link_images);
      return;
    }
    auto& slot = images->route_slot[f.first_link];
    if (slot != analysis::FoldImages::kNoRoute) {
      if (slot_links[slot] != f.link_count) {
        materialise(timeline, fold, link_images);
        return;
      }
      continue;
    }
    slot = static_cast<std::uint32_t>(slot_links.size());
    slot_links.push_back(f.link_count);
    std::uint32_t route = f.first_link;
    images->route_images.push_back(route);
    for (int j = 1; j < m; ++j) {
      route = link_images.image_of_route(route, f.link_count);
      images->route_images.push_back(route);
    }
  }
  auto shared = std::make_shared<const analysis::FoldImages>(std::move(*images));
  timeline.records.expand(shared);
  timeline.flows.expand(shared);
  // Every image is alike its record (analysis/images_alike.hpp), which the
  // writers rest on instead of reading 2.1M image tasks (scale-16k): the
  // rotation's check (sim/replay/replica_fold.cpp), before this replay,
  // compared every task with its image in every attribute, a peer mapped
  // as image_peer maps it (fold_task_match.hpp's alike), and refuses named
  // tasks (an imported trace's labels).
  if (!fold.classes)
    timeline.alike = analysis::ImagesAlike::every(shared);
}

void expand_class_fold(analysis::Timeline& timeline, const ReplicaFold& fold,
                       const std::unordered_map<std::uint32_t, std::vector<std::uint32_t>>& route_images) {
  const int m = fold.order;
  const auto fixed = [&](workloads::TaskId task) { return fold.task_image[task] == task; };
  {
    std::vector<std::pair<workloads::TaskId, analysis::CollectiveChoice>> choices(
        timeline.collectives.begin(), timeline.collectives.end());
    for (const auto& [task, choice] : choices) {
      if (fixed(task))
        continue;
      auto image = task;
      for (int j = 1; j < m; ++j) {
        image = fold.task_image[image];
        timeline.collectives[image] = choice;
      }
    }
  }
  // Reserved at their size: grown by doubling, the lists would hold up to
  // twice the full replay's records at the peak.
  const auto images = [&](workloads::TaskId task) { return fixed(task) ? std::size_t{1} : std::size_t(m); };
  std::vector<analysis::TaskRecord> records;
  {
    std::size_t size = 0;
    for (const auto& r : timeline.records.recorded())
      size += images(r.task);
    records.reserve(size);
  }
  for (const auto& r : timeline.records.recorded()) {
    records.push_back(r);
    if (fixed(r.task))
      continue;
    auto image = r;
    for (int j = 1; j < m; ++j) {
      image.task = fold.task_image[image.task];
      image.gpu = fold.endpoint_image[static_cast<std::size_t>(image.gpu)];
      records.push_back(image);
    }
  }
  timeline.records.recorded() = std::move(records);
  std::vector<analysis::FlowRecord> flows;
  {
    std::size_t size = 0;
    for (const auto& f : timeline.flows.recorded())
      size += images(f.task);
    flows.reserve(size);
  }
  for (const auto& f : timeline.flows.recorded()) {
    flows.push_back(f);
    if (fixed(f.task))
      continue;
    const std::vector<std::uint32_t>* routes = nullptr;
    if (f.link_count > 0) {
      const auto it = route_images.find(f.first_link);
      if (it == route_images.end() || it->second.size() != static_cast<std::size_t>(m - 1))
        throw std::logic_error("the class fold's expansion: a recorded route without its images");
      routes = &it->second;
    }
    auto image = f;
    for (int j = 1; j < m; ++j) {
      image.task = fold.task_image[image.task];
      image.src_gpu = fold.endpoint_image[static_cast<std::size_t>(image.src_gpu)];
      image.dst_gpu = fold.endpoint_image[static_cast<std::size_t>(image.dst_gpu)];
      if (routes != nullptr)
        image.first_link = (*routes)[static_cast<std::size_t>(j - 1)];
      flows.push_back(image);
    }
  }
  timeline.flows.recorded() = std::move(flows);
}

}  // namespace trainsim::sim
