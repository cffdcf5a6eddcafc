#pragma once
// The fold's outputs (docs/performance.md, "The fold"): a folded replay
// records the representatives' tasks and flows; this expands the timeline
// to what the full replay records, every record of a representative's task
// followed by its images (image task, image GPU, the same times), every flow
// by its images (image endpoints, the images of its own links), every
// collective's choice by its images'. A spanning collective's records
// already name every member, and its flows are expanded like the others.
// The task and flow records are not materialised: the timeline's
// RecordLists are given the fold's images (analysis/fold_images.hpp) and
// read as the expanded lists; only the collective choices, the links and
// each route's images are added. (Should the rotation's cycles not all have
// length m or 1, the records are materialised as the full lists.)
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "analysis/timeline.hpp"
#include "sim/platform/cluster_zone.hpp"
#include "sim/replay/replica_fold.hpp"

namespace trainsim::sim {

// `link_of_index`: the SimGrid link of each of the timeline's links.
void expand_folded_timeline(analysis::Timeline& timeline, const ReplicaFold& fold, const ClusterZone& zone,
                            const std::vector<const simgrid::s4u::Link*>& link_of_index);

// The class fold's (sim/replay/class_fold.hpp): materialised, every record
// of a task of the representative replica followed by its order - 1 images
// (the cycle's powers), a perturbed replica's and a collective across
// replicas' records (their own images) alone. `route_images`: each recorded
// route of the representative's (by its first timeline link) and its
// images' first links, numbered by the replay (ClassGhosts::number_images).
void expand_class_fold(analysis::Timeline& timeline, const ReplicaFold& fold,
                       const std::unordered_map<std::uint32_t, std::vector<std::uint32_t>>& route_images);

}  // namespace trainsim::sim
