// Expansions without a ring or tree: a set of independent flows (all-to-all,
// send_recv, and every fast expansion), and phases run one after the other
// (hierarchical algorithms).
#include <stdexcept>

#include "sim/collectives/flows.hpp"

namespace trainsim::sim {
namespace {

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
  std::unique_ptr<Collective> clone() const override { return std::make_unique<FlowSet>(*this); }
  std::optional<std::size_t> flow_count() const override {
    return completed_ == 0 ? std::optional<std::size_t>(flows_.size()) : std::nullopt;
  }

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
  std::unique_ptr<Collective> clone() const override {
    std::vector<std::unique_ptr<Collective>> phases;
    phases.reserve(phases_.size());
    for (const auto& phase : phases_)
      phases.push_back(phase->clone());
    auto copy = std::make_unique<Sequence>(std::move(phases));
    copy->current_ = current_;
    return copy;
  }
  // Each phase runs to its end before the next starts: their counts added.
  std::optional<std::size_t> flow_count() const override {
    std::size_t flows = 0;
    for (const auto& phase : phases_) {
      const auto known = phase->flow_count();
      if (!known || current_ > 0)
        return std::nullopt;
      flows += *known;
    }
    return flows;
  }

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

std::unique_ptr<Collective> make_flow_set(std::vector<FlowRequest> flows) {
  return std::make_unique<FlowSet>(std::move(flows));
}

std::unique_ptr<Collective> make_sequence(std::vector<std::unique_ptr<Collective>> phases) {
  return std::make_unique<Sequence>(std::move(phases));
}

}  // namespace trainsim::sim
