#include <stdexcept>

#include "sim/collectives.hpp"

namespace trainsim::sim {
namespace {

class Ring final : public Collective {
 public:
  Ring(const std::vector<int>& gpus, int steps, double chunk_bytes)
      : gpus_(gpus),
        steps_(steps),
        chunk_bytes_(chunk_bytes),
        sent_(gpus.size(), 0),
        received_(gpus.size(), 0),
        busy_(gpus.size(), false) {}

  void start(std::vector<FlowRequest>& out) override {
    for (int i = 0; i < n(); ++i)
      try_send(i, out);
  }

  void on_flow_done(int rank, std::vector<FlowRequest>& out) override {
    const auto i = static_cast<std::size_t>(rank);
    busy_[i] = false;
    ++sent_[i];
    ++received_[static_cast<std::size_t>(next(rank))];
    ++completed_;
    try_send(rank, out);
    try_send(next(rank), out);
  }

  bool finished() const override { return completed_ == steps_ * n(); }
  int latency_steps() const override { return steps_; }

 private:
  int n() const { return static_cast<int>(gpus_.size()); }
  int next(int rank) const { return (rank + 1) % n(); }

  void try_send(int rank, std::vector<FlowRequest>& out) {
    const auto i = static_cast<std::size_t>(rank);
    // Step k needs the chunk received at step k - 1 (nothing for k = 0).
    if (busy_[i] || sent_[i] >= steps_ || received_[i] < sent_[i])
      return;
    busy_[i] = true;
    out.push_back({gpus_[i], gpus_[static_cast<std::size_t>(next(rank))], chunk_bytes_, rank});
  }

  std::vector<int> gpus_;
  int steps_;
  double chunk_bytes_;
  std::vector<int> sent_, received_;
  std::vector<bool> busy_;
  int completed_ = 0;
};

}  // namespace

std::unique_ptr<Collective> make_ring(workloads::CollectiveOp op, const std::vector<int>& gpus,
                                      double bytes) {
  const int n = static_cast<int>(gpus.size());
  if (n < 2)
    throw std::invalid_argument("a ring needs at least two GPUs");
  const int steps = op == workloads::CollectiveOp::all_reduce ? 2 * (n - 1) : n - 1;
  return std::make_unique<Ring>(gpus, steps, bytes / n);
}

}  // namespace trainsim::sim
