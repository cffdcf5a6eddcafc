#pragma once
// A cost model whose torch async-TP fused ops (plan.tp_comm_overlap:
// torch_async) are fixed by the test, every other cost the wrapped model's:
// `forward` for the forward's fused ops, `backward` for the input-gradient
// pass's (none by default; a weight-gradient pass fuses none).
#include <utility>
#include <vector>

#include "workloads/cost_model.hpp"

namespace trainsim::testing {

class FixedAsyncTpCost final : public workloads::CostModel {
 public:
  FixedAsyncTpCost(const workloads::CostModel& inner, std::vector<workloads::AsyncTpUnit> forward,
                   std::vector<workloads::AsyncTpUnit> backward = {})
      : inner_(inner), forward_(std::move(forward)), backward_(std::move(backward)) {}
  workloads::OpCost forward(const workloads::StageSlice& s, const platforms::GpuSpec& g) const override {
    return inner_.forward(s, g);
  }
  workloads::OpCost backward(const workloads::StageSlice& s, const platforms::GpuSpec& g) const override {
    return inner_.backward(s, g);
  }
  workloads::OpCost backward_input(const workloads::StageSlice& s,
                                   const platforms::GpuSpec& g) const override {
    return inner_.backward_input(s, g);
  }
  workloads::OpCost backward_weight(const workloads::StageSlice& s,
                                    const platforms::GpuSpec& g) const override {
    return inner_.backward_weight(s, g);
  }
  workloads::OpCost optimizer(double p, const platforms::GpuSpec& g) const override {
    return inner_.optimizer(p, g);
  }
  std::vector<workloads::AsyncTpUnit> async_tp_units(workloads::PipeOpKind kind,
                                                     const platforms::GpuSpec&) const override {
    if (kind == workloads::PipeOpKind::forward)
      return forward_;
    return kind == workloads::PipeOpKind::backward_weight ? std::vector<workloads::AsyncTpUnit>{} : backward_;
  }

 private:
  const workloads::CostModel& inner_;
  std::vector<workloads::AsyncTpUnit> forward_, backward_;
};

}  // namespace trainsim::testing
