#pragma once
// The class fold's images of the representative replica's flows, where the
// quotient replay needs them although it does not replay them
// (sim/replay/class_fold.hpp, docs/performance.md "Perturbed replicas as
// classes of their own"):
//
// - the automatic fidelity's claims. A claim is a flow's bound (or an
//   isolated collective's use) added on each link of its route; whether a
//   collective across replicas may run `isolated` depends on every claim on
//   its links, those of the replicas the quotient does not replay included.
//   Each claim of a representative's task is therefore made on the images
//   of its route too (the route between the image endpoints), so that every
//   link holds the full replay's claims (premise P3 makes the image routes
//   alike link by link; the sums may differ in their last bits, which the
//   claims' slack absorbs);
// - the timeline's routes of the images, numbered when the replay ends, for
//   the expansion of the records (fold_expansion.hpp).
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "sim/replay/flow_recorder.hpp"
#include "sim/replay/isolated_run.hpp"
#include "sim/replay/link_claims.hpp"
#include "sim/replay/replica_fold.hpp"
#include "sim/replay/route_table.hpp"

namespace trainsim::sim {

class ClassGhosts {
 public:
  ClassGhosts(const ReplicaFold& fold, RouteTable& routes, LinkClaims& claims);

  // Whether a task has images (a task of the representative replica).
  bool has_images(workloads::TaskId id) const { return fold_.task_image[id] != id; }

  // The images' claims of a flow on `route` (the route's own: the caller's).
  void add_flow(const Route& route, std::vector<workloads::TaskId>& displaced);
  void remove_flow(const Route& route);
  // The images' claims of an isolated collective of task `id`.
  void add_isolated(workloads::TaskId id, const IsolatedRun& run);
  void remove_isolated(workloads::TaskId id);

  // Each recorded route of a task with images (by its first timeline link),
  // and its order - 1 images' first links, numbered now.
  std::unordered_map<std::uint32_t, std::vector<std::uint32_t>> number_images(FlowRecorder& recorder);

 private:
  // The route's images under the cycle's powers 1 .. order - 1.
  const std::vector<Route*>& images(const Route& route);

  const ReplicaFold& fold_;
  RouteTable& routes_;
  LinkClaims& claims_;
  std::unordered_map<const Route*, std::vector<Route*>> images_;
  std::vector<const Route*> seen_;  // the routes with images, in the order first met
  std::unordered_map<workloads::TaskId, std::vector<LinkClaims::Claims>> isolated_;
};

}  // namespace trainsim::sim
