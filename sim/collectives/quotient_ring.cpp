// The quotient ring: ring steps (ring.cpp) under a symmetry of their
// endpoints (the fold's rotation of the data-parallel replicas), one state
// per orbit of ring positions instead of one per position.
//
// A ring position t is a rank's send to the next rank of its ring. The
// symmetry maps t to the position pi(t) whose endpoints are the images of
// t's (checked: every edge has an image edge of the same ring structure,
// next(pi(t)) = pi(next(t)), equal chunk bytes and delays). The full machine,
// driven as FoldedCollective drives it (sim/replay/folded_collective.hpp: a
// representative's flow ends, then its images pi(t), ..., pi^(m-1)(t) in
// that order), keeps every orbit's counters equal between such ends, so one
// counter set per orbit, kept at the orbit's representative (the position
// whose sender is a representative endpoint), is the whole state. What an
// end does to it (docs/performance.md, "The quotient ring", says why):
// - next(t) in another orbit than t: t's sends and its successor's
//   receptions grow by one; t tries to send, then the successor's
//   representative;
// - next(t) = pi^d(t) (the ring closes within one orbit): t's sends grow,
//   t tries to send, its receptions grow, t tries again.
// Each is what the full machine does to the representative positions in
// that sequence of m ends, in the same order, so the flows handed on, their
// tags and their order are FoldedCollective's.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <memory>
#include <unordered_map>

#include "sim/collectives/flows.hpp"

namespace trainsim::sim {

std::unique_ptr<Collective> Collective::quotient(const EndpointSymmetry&) const {
  return nullptr;
}

bool Collective::alike_but_endpoints(const Collective&) const {
  return false;
}

std::pair<int, int> Collective::endpoints(int) const {
  return {-1, -1};
}

namespace {

class QuotientRingSteps final : public Collective {
 public:
  struct Position {
    int tag;       // the position's index in the full machine (its flows' tag)
    int src, dst;  // endpoints
    int next;      // the representative position of next(t)'s orbit (index here)
    bool closes;   // next(t) lies in t's own orbit
    double bytes;
    double delay_s;
  };

  // The ring's shape, shared by the clones of a machine (a replay clones a
  // remembered plan for every collective it runs, sim/replay/plan_cache.hpp):
  // the representative positions, in the full machine's order, and each full
  // position's index among them (-1: not a representative).
  struct Shape {
    std::vector<Position> positions;
    std::vector<int> index_of_tag;
  };

  QuotientRingSteps(std::vector<Position> positions, std::vector<int> index_of_tag, int steps, int in_flight)
      : shape_(std::make_shared<const Shape>(Shape{std::move(positions), std::move(index_of_tag)})),
        steps_(steps),
        in_flight_(in_flight),
        counts_(shape_->positions.size()) {}

  void start(std::vector<FlowRequest>& out) override {
    for (std::size_t a = 0; a < counts_.size(); ++a)
      try_send(a, out);
  }

  void on_flow_done(int tag, std::vector<FlowRequest>& out) override {
    const auto a = static_cast<std::size_t>(shape_->index_of_tag[static_cast<std::size_t>(tag)]);
    const Position& p = shape_->positions[a];
    ++completed_;
    ++counts_[a].sent;
    if (p.closes) {
      try_send(a, out);
      ++counts_[a].received;
      try_send(a, out);
      return;
    }
    const auto b = static_cast<std::size_t>(p.next);
    ++counts_[b].received;
    try_send(a, out);
    try_send(b, out);
  }

  bool finished() const override { return completed_ == static_cast<std::size_t>(steps_) * counts_.size(); }
  std::unique_ptr<Collective> clone() const override { return std::make_unique<QuotientRingSteps>(*this); }
  // The full machine's flows (RingSteps::flow_count: `steps` per position)
  // handed on by the orbits' representatives: `steps` per orbit.
  std::optional<std::size_t> flow_count() const override {
    if (in_flight_ < 1 || completed_ > 0 ||
        std::any_of(counts_.begin(), counts_.end(), [](const Counts& c) { return c.posted > 0; }))
      return std::nullopt;
    return static_cast<std::size_t>(std::max(steps_, 0)) * counts_.size();
  }

  // A quotient ring's releases depend on its positions' order, tags, ring
  // structure (next, closes), bytes and delays, its steps and flows in
  // flight and its counters, never on the endpoints, which are only copied
  // into the requests: two fresh machines equal in all but the endpoints
  // release alike, each position's flows always from its src to its dst.
  bool alike_but_endpoints(const Collective& other) const override {
    const auto* that = dynamic_cast<const QuotientRingSteps*>(&other);
    if (that == nullptr || !fresh() || !that->fresh() || steps_ != that->steps_ ||
        in_flight_ != that->in_flight_)
      return false;
    if (shape_ == that->shape_)
      return true;
    const auto same_bits = [](double a, double b) {
      return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b);
    };
    return shape_->index_of_tag == that->shape_->index_of_tag &&
           std::equal(shape_->positions.begin(), shape_->positions.end(), that->shape_->positions.begin(),
                      that->shape_->positions.end(), [&](const Position& a, const Position& b) {
                        return a.tag == b.tag && a.next == b.next && a.closes == b.closes &&
                               same_bits(a.bytes, b.bytes) && same_bits(a.delay_s, b.delay_s);
                      });
  }

  std::pair<int, int> endpoints(int tag) const override {
    const Position& p =
        shape_->positions[static_cast<std::size_t>(shape_->index_of_tag[static_cast<std::size_t>(tag)])];
    return {p.src, p.dst};
  }

 private:
  void try_send(std::size_t a, std::vector<FlowRequest>& out) {
    Counts& c = counts_[a];
    if (c.posted >= steps_ || c.received < c.posted || c.posted - c.sent >= in_flight_)
      return;
    ++c.posted;
    const Position& p = shape_->positions[a];
    out.push_back({p.src, p.dst, p.bytes, p.tag, p.delay_s});
  }

  bool fresh() const {
    return completed_ == 0 && std::all_of(counts_.begin(), counts_.end(), [](const Counts& c) {
             return c.sent == 0 && c.received == 0 && c.posted == 0;
           });
  }

  // A representative position's steps sent (ended), received and posted.
  struct Counts {
    int sent = 0, received = 0, posted = 0;
  };

  std::shared_ptr<const Shape> shape_;
  int steps_;
  int in_flight_;
  std::vector<Counts> counts_;
  std::size_t completed_ = 0;
};

std::uint64_t pair_key(int src, int dst) {
  return static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32 | static_cast<std::uint32_t>(dst);
}

}  // namespace

std::unique_ptr<Collective> make_quotient_ring_steps(const std::vector<std::vector<int>>& rings, int steps,
                                                     const std::vector<double>& chunk_bytes, int in_flight,
                                                     const std::vector<double>& delay_s,
                                                     const EndpointSymmetry& symmetry) {
  if (symmetry.image == nullptr || symmetry.representative == nullptr || symmetry.order < 2)
    return nullptr;
  const auto& image = *symmetry.image;
  const auto& representative = *symmetry.representative;
  const int m = symmetry.order;
  // Positions: (ring, rank) laid out ring after ring, as RingSteps numbers them.
  std::vector<int> src, dst, next;
  std::vector<double> bytes;
  for (std::size_t c = 0; c < rings.size(); ++c) {
    const auto& ring = rings[c];
    const int base = static_cast<int>(src.size());
    const int n = static_cast<int>(ring.size());
    for (int i = 0; i < n; ++i) {
      src.push_back(ring[static_cast<std::size_t>(i)]);
      dst.push_back(ring[static_cast<std::size_t>((i + 1) % n)]);
      next.push_back(base + (i + 1) % n);
      bytes.push_back(chunk_bytes[c]);
    }
  }
  const std::size_t total = src.size();
  if (delay_s.size() != total)
    return nullptr;
  const auto endpoint_ok = [&](int e) { return e >= 0 && static_cast<std::size_t>(e) < image.size(); };
  // An edge names its position only when no two positions share it.
  std::unordered_map<std::uint64_t, int> by_pair;
  by_pair.reserve(total);
  for (std::size_t t = 0; t < total; ++t) {
    if (!endpoint_ok(src[t]) || !endpoint_ok(dst[t]))
      return nullptr;
    if (!by_pair.emplace(pair_key(src[t], dst[t]), static_cast<int>(t)).second)
      return nullptr;
  }
  // pi: the position of the image edge, with the same bytes and delay.
  std::vector<int> pi(total);
  for (std::size_t t = 0; t < total; ++t) {
    const auto it = by_pair.find(
        pair_key(image[static_cast<std::size_t>(src[t])], image[static_cast<std::size_t>(dst[t])]));
    if (it == by_pair.end())
      return nullptr;
    const auto u = static_cast<std::size_t>(it->second);
    if (std::bit_cast<std::uint64_t>(bytes[u]) != std::bit_cast<std::uint64_t>(bytes[t]) ||
        std::bit_cast<std::uint64_t>(delay_s[u]) != std::bit_cast<std::uint64_t>(delay_s[t]))
      return nullptr;
    pi[t] = it->second;
  }
  for (std::size_t t = 0; t < total; ++t)
    if (next[static_cast<std::size_t>(pi[t])] != pi[static_cast<std::size_t>(next[t])])
      return nullptr;
  // Orbits: each of exactly m positions, exactly one of them sent from a
  // representative endpoint; power[t] = k with pi^k(rep) = t.
  std::vector<int> orbit_rep(total, -1);
  std::vector<int> power(total, -1);
  for (std::size_t t = 0; t < total; ++t) {
    if (orbit_rep[t] >= 0)
      continue;
    std::vector<int> orbit{static_cast<int>(t)};
    for (int u = pi[t]; u != static_cast<int>(t); u = pi[static_cast<std::size_t>(u)]) {
      if (static_cast<int>(orbit.size()) >= m)
        return nullptr;
      orbit.push_back(u);
    }
    if (static_cast<int>(orbit.size()) != m)
      return nullptr;
    int rep = -1;
    for (std::size_t k = 0; k < orbit.size(); ++k)
      if (representative[static_cast<std::size_t>(src[static_cast<std::size_t>(orbit[k])])]) {
        if (rep >= 0)
          return nullptr;
        rep = static_cast<int>(k);
      }
    if (rep < 0)
      return nullptr;
    for (int k = 0; k < m; ++k) {
      const auto u = static_cast<std::size_t>(orbit[static_cast<std::size_t>((rep + k) % m)]);
      orbit_rep[u] = orbit[static_cast<std::size_t>(rep)];
      power[u] = k;
    }
  }
  std::vector<int> index_of_tag(total, -1);
  std::vector<QuotientRingSteps::Position> positions;
  for (std::size_t t = 0; t < total; ++t)
    if (power[t] == 0) {
      index_of_tag[t] = static_cast<int>(positions.size());
      positions.push_back({static_cast<int>(t), src[t], dst[t], -1, false, bytes[t], delay_s[t]});
    }
  for (auto& p : positions) {
    const auto n = static_cast<std::size_t>(next[static_cast<std::size_t>(p.tag)]);
    p.closes = orbit_rep[n] == p.tag;
    p.next = index_of_tag[static_cast<std::size_t>(orbit_rep[n])];
  }
  return std::make_unique<QuotientRingSteps>(std::move(positions), std::move(index_of_tag), steps, in_flight);
}

}  // namespace trainsim::sim
