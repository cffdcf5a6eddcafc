#pragma once
// The collectives a replay plans, remembered per distinct request. A replay
// asks make_collective() for the same group's collective thousands of times
// (scale-512 with ZeRO-3: 73,728 data-parallel gathers and reduce-scatters
// over a few hundred distinct (group, bytes) pairs), and each call lays out
// the group, builds its rings and costs their hops on the routes. The plan
// depends only on the request and the platform's links, so while the links
// keep their bandwidth and latency (no link perturbations) the first plan
// of a request serves every later one: its figures as they were, and a
// copy of its state machine as created (Collective::clone() of a machine
// not yet started is a fresh one). Uneven exchanges (their bytes per
// member pair) are planned anew each time. Under the fold, a spanning
// collective's quotient machine (fold_spanning_collective) is remembered
// too: its checks and orbits are computed once per distinct request.
#include <cstdint>
#include <memory>
#include <optional>
#include <unordered_map>
#include <vector>

#include "sim/collectives/collectives.hpp"
#include "sim/replay/replica_fold.hpp"

namespace trainsim::sim {

class PlanCache {
 public:
  // `remember` false: every call plans anew (links that change during the
  // run: their collectives' estimates and chunking read them).
  explicit PlanCache(bool remember) : remember_(remember) {}

  // make_collective(request, zone, fidelity), `group` naming request.gpus
  // (TaskGraph::groups' index: one group, one list of GPUs). `spanning`: a
  // collective that spans the classes of this fold, whose machine is the
  // quotient fold_spanning_collective() makes of the plan's (remembered
  // folded: the quotient ring's checks and orbits are the plan's alone).
  // `remembered_as`, when given: the remembered plan's number (0, 1, ... in
  // the order first planned; equal numbers, alike requests and machines), or
  // kNotRemembered for a plan made anew; a remembered plan then comes
  // without its machine (flows null): machine(number) makes one when it is
  // needed (a collective dated from an alike run's script needs none, and a
  // machine's copy and its release cost as much as the rerun).
  CollectivePlan plan(const CollectiveRequest& request, int group, const ClusterZone& zone,
                      std::optional<platforms::Fidelity> fidelity, const ReplicaFold* spanning = nullptr,
                      std::size_t* remembered_as = nullptr);
  static constexpr std::size_t kNotRemembered = static_cast<std::size_t>(-1);
  // A fresh copy of remembered plan `number`'s machine.
  std::unique_ptr<Collective> machine(std::size_t number) const { return by_number_[number]->flows->clone(); }

  // Distinct requests planned and remembered so far.
  std::size_t size() const { return plans_.size(); }

 private:
  struct Key {
    int group;
    int fold;
    std::uint64_t bytes_bits;  // the double's bits: equal keys, equal bytes
    workloads::CollectiveOp op;
    platforms::CollectiveAlgorithm algorithm;
    int fidelity;   // -1: the cluster's
    bool spanning;  // folded (the fold is the run's: one per cache)
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    std::size_t operator()(const Key& k) const;
  };

  struct Remembered {
    CollectivePlan plan;
    std::size_t number;
  };

  bool remember_;
  std::unordered_map<Key, Remembered, KeyHash> plans_;
  std::vector<const CollectivePlan*> by_number_;  // into plans_' nodes, which stay put
};

}  // namespace trainsim::sim
