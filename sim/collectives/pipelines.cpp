// Pipelined expansions: chains (broadcast), trees (tree all-reduce) and
// in-switch reductions (NVLS). The message is cut into chunks that move one
// hop at a time, one chunk in flight per edge and direction, so the pipeline
// fills, streams and drains as NCCL's does.
#include <algorithm>
#include <stdexcept>

#include "sim/collectives/flows.hpp"

namespace trainsim::sim {
namespace {

class ChainPipeline final : public Collective {
 public:
  ChainPipeline(std::vector<std::vector<int>> chains, int chunks, std::vector<double> chunk_bytes)
      : chains_(std::move(chains)), chunks_(chunks), chunk_bytes_(std::move(chunk_bytes)) {
    for (const auto& chain : chains_) {
      offset_.push_back(static_cast<int>(edges_));
      edges_ += chain.size() - 1;
    }
    offset_.push_back(static_cast<int>(edges_));
    sent_.assign(edges_, 0);
    done_.assign(edges_, 0);
    busy_.assign(edges_, false);
  }

  void start(std::vector<FlowRequest>& out) override {
    for (std::size_t c = 0; c < chains_.size(); ++c)
      if (chains_[c].size() > 1)
        try_send(c, 0, out);
  }

  void on_flow_done(int tag, std::vector<FlowRequest>& out) override {
    const auto c =
        static_cast<std::size_t>(std::upper_bound(offset_.begin(), offset_.end(), tag) - offset_.begin() - 1);
    const auto e = static_cast<std::size_t>(tag - offset_[c]);
    busy_[static_cast<std::size_t>(tag)] = false;
    ++done_[static_cast<std::size_t>(tag)];
    ++completed_;
    try_send(c, e, out);
    if (e + 1 < chains_[c].size() - 1)
      try_send(c, e + 1, out);
  }

  bool finished() const override { return completed_ == edges_ * static_cast<std::size_t>(chunks_); }
  std::unique_ptr<Collective> clone() const override { return std::make_unique<ChainPipeline>(*this); }

 private:
  void try_send(std::size_t c, std::size_t e, std::vector<FlowRequest>& out) {
    const auto t = static_cast<std::size_t>(offset_[c]) + e;
    // Edge e forwards chunk k once edge e - 1 delivered it.
    if (busy_[t] || sent_[t] >= chunks_ || (e > 0 && done_[t - 1] <= sent_[t]))
      return;
    busy_[t] = true;
    ++sent_[t];
    out.push_back({chains_[c][e], chains_[c][e + 1], chunk_bytes_[c], static_cast<int>(t)});
  }

  std::vector<std::vector<int>> chains_;
  int chunks_;
  std::vector<double> chunk_bytes_;
  std::vector<int> offset_;
  std::size_t edges_ = 0;
  std::vector<int> sent_, done_;
  std::vector<bool> busy_;
  std::size_t completed_ = 0;
};

class TreePipeline final : public Collective {
 public:
  TreePipeline(std::vector<Tree> trees, int chunks, std::vector<double> chunk_bytes)
      : trees_(std::move(trees)), chunks_(chunks), chunk_bytes_(std::move(chunk_bytes)) {
    for (const auto& tree : trees_) {
      offset_.push_back(static_cast<int>(nodes_));
      nodes_ += tree.gpus.size();
      std::vector<std::vector<int>> children(tree.gpus.size());
      for (std::size_t v = 0; v < tree.parent.size(); ++v)
        if (tree.parent[v] >= 0)
          children[static_cast<std::size_t>(tree.parent[v])].push_back(static_cast<int>(v));
      children_.push_back(std::move(children));
      edges_ += tree.gpus.size() - 1;
    }
    offset_.push_back(static_cast<int>(nodes_));
    up_sent_.assign(nodes_, 0);
    up_done_.assign(nodes_, 0);
    down_sent_.assign(nodes_, 0);
    down_done_.assign(nodes_, 0);
    up_busy_.assign(nodes_, false);
    down_busy_.assign(nodes_, false);
  }

  void start(std::vector<FlowRequest>& out) override {
    for (std::size_t t = 0; t < trees_.size(); ++t)
      for (std::size_t v = 0; v < trees_[t].gpus.size(); ++v)
        try_up(t, static_cast<int>(v), out);
  }

  // Tags: 2 * (global node index) for v's flow up to its parent, + 1 for the
  // flow down from its parent to v.
  void on_flow_done(int tag, std::vector<FlowRequest>& out) override {
    const int node = tag / 2;
    const auto t = static_cast<std::size_t>(std::upper_bound(offset_.begin(), offset_.end(), node) -
                                            offset_.begin() - 1);
    const int v = node - offset_[t];
    const auto g = static_cast<std::size_t>(node);
    ++completed_;
    const int parent = trees_[t].parent[static_cast<std::size_t>(v)];
    if (tag % 2 == 0) {
      up_busy_[g] = false;
      ++up_done_[g];
      try_up(t, v, out);
      try_up(t, parent, out);
      if (trees_[t].parent[static_cast<std::size_t>(parent)] < 0)
        for (int child : children_[t][static_cast<std::size_t>(parent)])
          try_down(t, child, out);
    } else {
      down_busy_[g] = false;
      ++down_done_[g];
      try_down(t, v, out);
      for (int child : children_[t][static_cast<std::size_t>(v)])
        try_down(t, child, out);
    }
  }

  bool finished() const override { return completed_ == 2 * edges_ * static_cast<std::size_t>(chunks_); }
  std::unique_ptr<Collective> clone() const override { return std::make_unique<TreePipeline>(*this); }

 private:
  std::size_t at(std::size_t t, int v) const { return static_cast<std::size_t>(offset_[t] + v); }

  // Chunks whose reduction v has completed: all its children sent them up.
  int reduced(std::size_t t, int v) const {
    int ready = chunks_;
    for (int child : children_[t][static_cast<std::size_t>(v)])
      ready = std::min(ready, up_done_[at(t, child)]);
    return ready;
  }

  void try_up(std::size_t t, int v, std::vector<FlowRequest>& out) {
    const int parent = trees_[t].parent[static_cast<std::size_t>(v)];
    const auto g = at(t, v);
    if (parent < 0 || up_busy_[g] || up_sent_[g] >= chunks_ || reduced(t, v) <= up_sent_[g])
      return;
    up_busy_[g] = true;
    ++up_sent_[g];
    out.push_back({trees_[t].gpus[static_cast<std::size_t>(v)],
                   trees_[t].gpus[static_cast<std::size_t>(parent)], chunk_bytes_[t],
                   static_cast<int>(2 * g)});
  }

  // The flow from v's parent down to v.
  void try_down(std::size_t t, int v, std::vector<FlowRequest>& out) {
    const int parent = trees_[t].parent[static_cast<std::size_t>(v)];
    const auto g = at(t, v);
    if (parent < 0 || down_busy_[g] || down_sent_[g] >= chunks_)
      return;
    const bool parent_is_root = trees_[t].parent[static_cast<std::size_t>(parent)] < 0;
    const int available = parent_is_root ? reduced(t, parent) : down_done_[at(t, parent)];
    if (available <= down_sent_[g])
      return;
    down_busy_[g] = true;
    ++down_sent_[g];
    out.push_back({trees_[t].gpus[static_cast<std::size_t>(parent)],
                   trees_[t].gpus[static_cast<std::size_t>(v)], chunk_bytes_[t],
                   static_cast<int>(2 * g + 1)});
  }

  std::vector<Tree> trees_;
  int chunks_;
  std::vector<double> chunk_bytes_;
  std::vector<std::vector<std::vector<int>>> children_;
  std::vector<int> offset_;
  std::size_t nodes_ = 0, edges_ = 0;
  std::vector<int> up_sent_, up_done_, down_sent_, down_done_;
  std::vector<bool> up_busy_, down_busy_;
  std::size_t completed_ = 0;
};

class SwitchPipeline final : public Collective {
 public:
  SwitchPipeline(std::vector<SwitchGroup> nodes, int chunks, double up_bytes, double down_bytes)
      : nodes_(std::move(nodes)), chunks_(chunks), up_bytes_(up_bytes), down_bytes_(down_bytes) {
    for (const auto& node : nodes_) {
      offset_.push_back(static_cast<int>(members_));
      members_ += node.members.size();
    }
    offset_.push_back(static_cast<int>(members_));
    up_sent_.assign(members_, 0);
    up_done_.assign(members_, 0);
    down_sent_.assign(members_, 0);
    up_busy_.assign(members_, false);
    down_busy_.assign(members_, false);
  }

  void start(std::vector<FlowRequest>& out) override {
    for (std::size_t n = 0; n < nodes_.size(); ++n)
      for (std::size_t i = 0; i < nodes_[n].members.size(); ++i)
        try_up(n, i, out);
  }

  // Tags: 2 * member index (up to the switch), + 1 (down from it).
  void on_flow_done(int tag, std::vector<FlowRequest>& out) override {
    const int member = tag / 2;
    const auto n = static_cast<std::size_t>(std::upper_bound(offset_.begin(), offset_.end(), member) -
                                            offset_.begin() - 1);
    const auto i = static_cast<std::size_t>(member - offset_[n]);
    ++completed_;
    if (tag % 2 == 0) {
      up_busy_[static_cast<std::size_t>(member)] = false;
      ++up_done_[static_cast<std::size_t>(member)];
      try_up(n, i, out);
      for (std::size_t j = 0; j < nodes_[n].members.size(); ++j)
        try_down(n, j, out);
    } else {
      down_busy_[static_cast<std::size_t>(member)] = false;
      try_down(n, i, out);
    }
  }

  bool finished() const override { return completed_ == 2 * members_ * static_cast<std::size_t>(chunks_); }
  std::unique_ptr<Collective> clone() const override { return std::make_unique<SwitchPipeline>(*this); }

 private:
  void try_up(std::size_t n, std::size_t i, std::vector<FlowRequest>& out) {
    const auto m = static_cast<std::size_t>(offset_[n]) + i;
    if (up_busy_[m] || up_sent_[m] >= chunks_)
      return;
    up_busy_[m] = true;
    ++up_sent_[m];
    out.push_back({nodes_[n].members[i], nodes_[n].switch_endpoint, up_bytes_, static_cast<int>(2 * m)});
  }

  // The switch multicasts chunk k once every member's chunk k arrived.
  void try_down(std::size_t n, std::size_t i, std::vector<FlowRequest>& out) {
    const auto m = static_cast<std::size_t>(offset_[n]) + i;
    int reduced = chunks_;
    for (std::size_t j = 0; j < nodes_[n].members.size(); ++j)
      reduced = std::min(reduced, up_done_[static_cast<std::size_t>(offset_[n]) + j]);
    if (down_busy_[m] || down_sent_[m] >= reduced)
      return;
    down_busy_[m] = true;
    ++down_sent_[m];
    out.push_back(
        {nodes_[n].switch_endpoint, nodes_[n].members[i], down_bytes_, static_cast<int>(2 * m + 1)});
  }

  std::vector<SwitchGroup> nodes_;
  int chunks_;
  double up_bytes_, down_bytes_;
  std::vector<int> offset_;
  std::size_t members_ = 0;
  std::vector<int> up_sent_, up_done_, down_sent_;
  std::vector<bool> up_busy_, down_busy_;
  std::size_t completed_ = 0;
};

}  // namespace

std::unique_ptr<Collective> make_chain_pipeline(std::vector<std::vector<int>> chains, int chunks,
                                                std::vector<double> chunk_bytes) {
  return std::make_unique<ChainPipeline>(std::move(chains), chunks, std::move(chunk_bytes));
}

std::unique_ptr<Collective> make_tree_pipeline(std::vector<Tree> trees, int chunks,
                                               std::vector<double> chunk_bytes) {
  return std::make_unique<TreePipeline>(std::move(trees), chunks, std::move(chunk_bytes));
}

std::unique_ptr<Collective> make_switch_pipeline(std::vector<SwitchGroup> nodes, int chunks, double up_bytes,
                                                 double down_bytes) {
  return std::make_unique<SwitchPipeline>(std::move(nodes), chunks, up_bytes, down_bytes);
}

}  // namespace trainsim::sim
