// Expansions without a ring or tree: the pairwise all-to-all, a set of
// independent flows (send_recv, and every fast expansion), and phases run
// one after the other (hierarchical algorithms).
#include <stdexcept>

#include "sim/collectives/flows.hpp"

namespace trainsim::sim {
namespace {

class PairwiseExchange final : public Collective {
 public:
  PairwiseExchange(std::vector<int> gpus, double bytes)
      : gpus_(std::move(gpus)), bytes_(bytes), step_(gpus_.size(), 0) {}

  void start(std::vector<FlowRequest>& out) override {
    for (std::size_t i = 0; i < gpus_.size(); ++i)
      send_next(i, out);
  }

  void on_flow_done(int tag, std::vector<FlowRequest>& out) override {
    ++completed_;
    send_next(static_cast<std::size_t>(tag), out);
  }

  bool finished() const override { return completed_ == gpus_.size() * (gpus_.size() - 1); }

 private:
  // Step s (1..n-1): rank i sends to rank i + s, so at every step each rank
  // sends once and receives once.
  void send_next(std::size_t i, std::vector<FlowRequest>& out) {
    const std::size_t n = gpus_.size();
    if (step_[i] + 1 >= n)
      return;
    const std::size_t s = ++step_[i];
    out.push_back({gpus_[i], gpus_[(i + s) % n], bytes_, static_cast<int>(i)});
  }

  std::vector<int> gpus_;
  double bytes_;
  std::vector<std::size_t> step_;
  std::size_t completed_ = 0;
};

class FlowSet final : public Collective {
 public:
  explicit FlowSet(std::vector<FlowRequest> flows) : flows_(std::move(flows)) {}
  void start(std::vector<FlowRequest>& out) override {
    for (std::size_t i = 0; i < flows_.size(); ++i) {
      auto f = flows_[i];
      f.tag = static_cast<int>(i);
      out.push_back(f);
    }
  }
  void on_flow_done(int, std::vector<FlowRequest>&) override { ++completed_; }
  bool finished() const override { return completed_ == flows_.size(); }

 private:
  std::vector<FlowRequest> flows_;
  std::size_t completed_ = 0;
};

class Sequence final : public Collective {
 public:
  explicit Sequence(std::vector<std::unique_ptr<Collective>> phases) : phases_(std::move(phases)) {}

  void start(std::vector<FlowRequest>& out) override { advance(out); }

  void on_flow_done(int tag, std::vector<FlowRequest>& out) override {
    phases_[current_]->on_flow_done(tag, out);
    if (phases_[current_]->finished()) {
      ++current_;
      advance(out);
    }
  }

  bool finished() const override { return current_ >= phases_.size(); }

 private:
  // Starts the current phase; skips phases that move nothing.
  void advance(std::vector<FlowRequest>& out) {
    while (current_ < phases_.size()) {
      const auto before = out.size();
      phases_[current_]->start(out);
      if (out.size() > before || !phases_[current_]->finished())
        return;
      ++current_;
    }
  }

  std::vector<std::unique_ptr<Collective>> phases_;
  std::size_t current_ = 0;
};

}  // namespace

std::unique_ptr<Collective> make_pairwise_exchange(std::vector<int> gpus, double bytes) {
  if (gpus.size() < 2)
    throw std::invalid_argument("an exchange needs at least two GPUs");
  return std::make_unique<PairwiseExchange>(std::move(gpus), bytes);
}

std::unique_ptr<Collective> make_flow_set(std::vector<FlowRequest> flows) {
  return std::make_unique<FlowSet>(std::move(flows));
}

std::unique_ptr<Collective> make_sequence(std::vector<std::unique_ptr<Collective>> phases) {
  return std::make_unique<Sequence>(std::move(phases));
}

}  // namespace trainsim::sim
