#pragma once
// A collective that spans the replicas of a fold (sim/replay/replica_fold.hpp)
// replayed in the quotient: its state machine runs at full size, but only
// the flows that leave a representative endpoint are handed to the replay;
// when one of them ends, the machine is also told of the end of its images
// (the same step between the image endpoints), which the full replay ends at
// the same instant (docs/performance.md, "The fold", says why). The flows
// released in return come in whole orbits, of which the representative's
// is handed on and the others wait for their representative to end.
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <utility>
#include <vector>

#include "sim/collectives/collectives.hpp"
#include "sim/replay/replica_fold.hpp"

namespace trainsim::sim {

// The machine of a spanning collective in the quotient: its own quotient form
// when it has one for the fold's rotation (Collective::quotient: the quotient
// ring, one state per orbit of ring positions), else the whole machine in a
// FoldedCollective. Both hand on the same flows in the same order.
std::unique_ptr<Collective> fold_spanning_collective(std::unique_ptr<Collective> machine,
                                                     const ReplicaFold& fold);

class FoldedCollective final : public Collective {
 public:
  FoldedCollective(std::unique_ptr<Collective> machine, const ReplicaFold& fold);
  FoldedCollective(const FoldedCollective& other);

  void start(std::vector<FlowRequest>& out) override;
  void on_flow_done(int tag, std::vector<FlowRequest>& out) override;
  bool finished() const override { return machine_->finished(); }
  std::unique_ptr<Collective> clone() const override { return std::make_unique<FoldedCollective>(*this); }

 private:
  static std::uint64_t pair_key(int src, int dst) {
    return static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32 |
           static_cast<std::uint32_t>(dst);
  }
  // Hands on the representatives' flows of `released_`, keeps the others.
  void sort_out(std::vector<FlowRequest>& out);

  std::unique_ptr<Collective> machine_;
  const ReplicaFold* fold_;
  std::vector<FlowRequest> released_;
  // The other flows released and not yet ended between two endpoints, oldest
  // first: tags[head ..]. An entry stays when it empties (its storage is
  // reused: a ring releases and ends a flow between the same endpoints at
  // every step, m - 1 images for each flow the replay runs).
  struct Waiting {
    std::vector<int> tags;
    std::size_t head = 0;
  };

  // The representatives' flows in flight: endpoints and count by tag (a
  // ring rank may have several sends in flight under a protocol); an entry
  // whose count is 0 has none.
  std::unordered_map<int, std::pair<std::uint64_t, int>> handed_;
  std::unordered_map<std::uint64_t, Waiting> waiting_;
};

}  // namespace trainsim::sim
