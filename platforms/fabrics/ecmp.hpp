#pragma once
// ECMP over explicit spine planes (cluster.fabric.ecmp), for fat_tree and
// rail_optimised. Without it a leaf's uplinks are one aggregate link and
// every flow is spread evenly over them: hash collisions on the spine never
// happen. With it, a leaf's uplinks (and a pod's core uplinks) are `planes`
// links of 1/planes of the aggregate each (plane s: the leaf's uplink to
// spine s, and that spine's uplink to core plane s), and one transfer
// between two NICs is `flows_per_pair` sub-flows of equal size (NCCL's
// channels x NCCL_IB_QPS_PER_CONNECTION queue pairs, each its own 5-tuple),
// each on one plane:
//
//   seeded: the plane is a hash of (seed, source NIC, destination NIC,
//           sub-flow), as switches hash a flow's 5-tuple: sub-flows of one
//           or several transfers may collide on a plane while others idle.
//   spread: sub-flow k of the NIC at port p under its leaf takes plane
//           (p * flows_per_pair + k) mod planes: distinct planes for one
//           transfer, and the NICs of a leaf fill the planes round-robin
//           (adaptive routing, or QPs whose source ports were chosen to land
//           on distinct paths, as Meta's enhanced ECMP does).
//
// How SimGrid carries the split (one route per host pair in any zone):
// one SimGrid communication per transfer whose route crosses the plane link
// of each sub-flow (a plane hit by m sub-flows m times), every plane link
// created with flows_per_pair x its physical capacity. SimGrid's max-min
// sharing counts a link listed m times m times, so a transfer at rate r
// uses m * r / flows_per_pair of the plane's physical capacity: exactly its
// m sub-flows of r / flows_per_pair each. The sub-flows of one transfer
// progress together (the transfer ends with its slowest sub-flow, as NCCL's
// step waits for all its channels).
#include <cstdint>
#include <vector>

#include "platforms/cluster_spec.hpp"

namespace trainsim::platforms {

// The plane of each sub-flow of a transfer from the NIC `source_port`
// (its index among its leaf's NICs) identified, with its destination, by
// `pair_key`: flows_per_pair entries, each in [0, planes).
std::vector<int> ecmp_planes(const EcmpSpec& ecmp, std::uint64_t pair_key, int source_port);

// The bytes each plane carries of a transfer of `bytes` (planes entries,
// summing to `bytes`).
std::vector<double> ecmp_bytes_per_plane(const EcmpSpec& ecmp, const std::vector<int>& planes, double bytes);

}  // namespace trainsim::platforms
