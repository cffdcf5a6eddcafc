#include "sim/replay/folded_collective.hpp"

#include <stdexcept>
#include <string>

namespace trainsim::sim {

std::unique_ptr<Collective> fold_spanning_collective(std::unique_ptr<Collective> machine,
                                                     const ReplicaFold& fold) {
  if (auto quotient = machine->quotient({&fold.endpoint_image, &fold.representative, fold.order}))
    return quotient;
  return std::make_unique<FoldedCollective>(std::move(machine), fold);
}

FoldedCollective::FoldedCollective(std::unique_ptr<Collective> machine, const ReplicaFold& fold)
    : machine_(std::move(machine)), fold_(&fold) {}

FoldedCollective::FoldedCollective(const FoldedCollective& other)
    : Collective(other),
      machine_(other.machine_->clone()),
      fold_(other.fold_),
      handed_(other.handed_),
      waiting_(other.waiting_) {}

void FoldedCollective::start(std::vector<FlowRequest>& out) {
  released_.clear();
  machine_->start(released_);
  sort_out(out);
}

void FoldedCollective::on_flow_done(int tag, std::vector<FlowRequest>& out) {
  const auto it = handed_.find(tag);
  if (it == handed_.end() || it->second.second == 0)
    throw std::logic_error("fold: a spanning collective's flow ended that it did not hand on");
  int src = static_cast<int>(it->second.first >> 32);
  int dst = static_cast<int>(it->second.first & 0xffffffffU);
  --it->second.second;
  released_.clear();
  machine_->on_flow_done(tag, released_);
  // Its m - 1 images end at the same instant.
  for (int j = 1; j < fold_->order; ++j) {
    src = fold_->endpoint_image[static_cast<std::size_t>(src)];
    dst = fold_->endpoint_image[static_cast<std::size_t>(dst)];
    const auto w = waiting_.find(pair_key(src, dst));
    if (w == waiting_.end() || w->second.head == w->second.tags.size())
      throw std::logic_error("fold: the image of a spanning collective's flow was never released (" +
                             std::to_string(src) + " -> " + std::to_string(dst) + ")");
    Waiting& waiting = w->second;
    const int image_tag = waiting.tags[waiting.head++];
    if (waiting.head == waiting.tags.size()) {
      waiting.tags.clear();
      waiting.head = 0;
    }
    machine_->on_flow_done(image_tag, released_);
  }
  sort_out(out);
}

void FoldedCollective::sort_out(std::vector<FlowRequest>& out) {
  for (const auto& flow : released_) {
    if (fold_->representative[static_cast<std::size_t>(flow.src)]) {
      auto& [key, count] = handed_[flow.tag];
      if (count > 0 && key != pair_key(flow.src, flow.dst))
        throw std::logic_error("fold: one tag of a spanning collective on two routes at once");
      key = pair_key(flow.src, flow.dst);
      ++count;
      out.push_back(flow);
    } else {
      waiting_[pair_key(flow.src, flow.dst)].tags.push_back(flow.tag);
    }
  }
  released_.clear();
}

}  // namespace trainsim::sim
