// Rings stepped one chunk at a time: the detailed expansion of ring
// all-reduce, reduce-scatter and all-gather, over one or several rings
// (NCCL channels) at once. A rank forwards a chunk once it has received it
// and has fewer than `in_flight` sends on their way (1: its previous send
// has arrived); sends of one rank that overlap share its links.
#include <algorithm>
#include <stdexcept>

#include "sim/collectives/flows.hpp"

namespace trainsim::sim {
namespace {

class RingSteps final : public Collective {
 public:
  RingSteps(std::vector<std::vector<int>> rings, int steps, std::vector<double> chunk_bytes, int in_flight,
            const std::vector<std::vector<double>>& delays)
      : rings_(std::move(rings)), steps_(steps), in_flight_(in_flight), chunk_bytes_(std::move(chunk_bytes)) {
    if (!delays.empty() && delays.size() != rings_.size())
      throw std::invalid_argument("ring delays need one list per ring");
    for (std::size_t c = 0; c < rings_.size(); ++c) {
      const auto& ring = rings_[c];
      if (ring.size() < 2)
        throw std::invalid_argument("a ring needs at least two GPUs");
      if (!delays.empty() && delays[c].size() != ring.size())
        throw std::invalid_argument("ring delays need one per rank");
      offset_.push_back(static_cast<int>(total_));
      total_ += ring.size();
      for (std::size_t i = 0; i < ring.size(); ++i)
        delay_s_.push_back(delays.empty() ? 0.0 : delays[c][i]);
    }
    offset_.push_back(static_cast<int>(total_));
    sent_.assign(total_, 0);
    received_.assign(total_, 0);
    posted_.assign(total_, 0);
  }

  void start(std::vector<FlowRequest>& out) override {
    for (std::size_t c = 0; c < rings_.size(); ++c)
      for (int i = 0; i < size(c); ++i)
        try_send(c, i, out);
  }

  void on_flow_done(int tag, std::vector<FlowRequest>& out) override {
    const auto c =
        static_cast<std::size_t>(std::upper_bound(offset_.begin(), offset_.end(), tag) - offset_.begin() - 1);
    const int i = tag - offset_[c];
    const int next = (i + 1) % size(c);
    ++sent_[static_cast<std::size_t>(tag)];
    ++received_[static_cast<std::size_t>(offset_[c] + next)];
    ++completed_;
    try_send(c, i, out);
    try_send(c, next, out);
  }

  bool finished() const override { return completed_ == static_cast<std::size_t>(steps_) * total_; }
  std::unique_ptr<Collective> clone() const override { return std::make_unique<RingSteps>(*this); }
  std::unique_ptr<Collective> quotient(const EndpointSymmetry& symmetry) const override {
    if (completed_ > 0 || std::any_of(posted_.begin(), posted_.end(), [](int p) { return p > 0; }))
      return nullptr;  // started: its state is no longer the orbits'
    return make_quotient_ring_steps(rings_, steps_, chunk_bytes_, in_flight_, delay_s_, symmetry);
  }
  // Every position posts `steps` sends, never more (try_send's first test),
  // and none is left short: with no flow in flight, a position short of its
  // steps that cannot send lacks a chunk (received < posted), so its
  // predecessor posted fewer steps and is short too, and so on around the
  // ring back to itself, which would have posted fewer than itself.
  std::optional<std::size_t> flow_count() const override {
    if (in_flight_ < 1 || completed_ > 0 ||
        std::any_of(posted_.begin(), posted_.end(), [](int p) { return p > 0; }))
      return std::nullopt;
    return static_cast<std::size_t>(std::max(steps_, 0)) * total_;
  }

 private:
  int size(std::size_t c) const { return static_cast<int>(rings_[c].size()); }

  void try_send(std::size_t c, int i, std::vector<FlowRequest>& out) {
    const auto t = static_cast<std::size_t>(offset_[c] + i);
    // Step k needs the chunk received at step k - 1 (nothing for k = 0).
    if (posted_[t] >= steps_ || received_[t] < posted_[t] || posted_[t] - sent_[t] >= in_flight_)
      return;
    ++posted_[t];
    const auto& ring = rings_[c];
    out.push_back({ring[static_cast<std::size_t>(i)], ring[static_cast<std::size_t>((i + 1) % size(c))],
                   chunk_bytes_[c], static_cast<int>(t), delay_s_[t]});
  }

  std::vector<std::vector<int>> rings_;
  int steps_;
  int in_flight_;
  std::vector<double> chunk_bytes_;
  std::vector<double> delay_s_;  // per rank of every ring: its sends' delay
  std::vector<int> offset_;
  std::size_t total_ = 0;
  std::vector<int> sent_, received_, posted_;
  std::size_t completed_ = 0;
};

}  // namespace

std::unique_ptr<Collective> make_ring_steps(std::vector<std::vector<int>> rings, int steps,
                                            std::vector<double> chunk_bytes, int in_flight,
                                            std::vector<std::vector<double>> delays) {
  return std::make_unique<RingSteps>(std::move(rings), steps, std::move(chunk_bytes), in_flight, delays);
}

}  // namespace trainsim::sim
