#pragma once
// Small specs shared by tests: uniform clusters and fixed-cost models whose
// results have closed forms.
#include "platforms/cluster_spec.hpp"
#include "platforms/gpu_spec.hpp"
#include "workloads/cost_model.hpp"

namespace trainsim::testing {

// `nodes` x `gpus_per_node` A100s, every link of the given bandwidth and
// GPU-to-GPU latency, one switch.
inline platforms::ClusterSpec uniform_cluster(int nodes, int gpus_per_node, double bandwidth_Bps,
                                              double latency_s) {
  platforms::ClusterSpec cluster;
  platforms::NodeGroup group;
  group.gpu = *platforms::find_gpu("A100-SXM-80GB");
  group.nodes = nodes;
  group.gpus_per_node = gpus_per_node;
  group.nvlink = {bandwidth_Bps, latency_s};
  group.nic = {bandwidth_Bps, latency_s};
  group.nics_per_node = gpus_per_node;
  cluster.groups = {group};
  return cluster;
}

// Communication made negligible: 1 EB/s links with no latency.
inline platforms::ClusterSpec free_network_cluster(int gpus) {
  return uniform_cluster(gpus, 1, 1e18, 0);
}

// A GPU whose catalogue name ends in kSlowedSuffix (see with_slowed_gpu)
// takes FixedCostModel::slow_by times longer for every op: a straggler.
inline constexpr const char* kSlowedSuffix = " (slowed)";

// Every stage's forward takes forward_s and backward backward_s, whatever
// the layers; the split backward takes backward_input_s + backward_weight_s
// (half each unless given); the optimizer is free. What closed-form bubbles
// assume.
class FixedCostModel final : public workloads::CostModel {
 public:
  FixedCostModel(double forward_s, double backward_s)
      : FixedCostModel(forward_s, backward_s / 2, backward_s / 2) {}
  FixedCostModel(double forward_s, double backward_input_s, double backward_weight_s)
      : forward_s_(forward_s), input_s_(backward_input_s), weight_s_(backward_weight_s) {}
  // Ops on "(slowed)" GPUs take `factor` times longer.
  FixedCostModel& slow_by(double factor) {
    slow_factor_ = factor;
    return *this;
  }
  workloads::OpCost forward(const workloads::StageSlice&, const platforms::GpuSpec& gpu) const override {
    return {forward_s_ * factor(gpu), 1, 1};
  }
  workloads::OpCost backward(const workloads::StageSlice&, const platforms::GpuSpec& gpu) const override {
    return {(input_s_ + weight_s_) * factor(gpu), 2, 2};
  }
  workloads::OpCost backward_input(const workloads::StageSlice&,
                                   const platforms::GpuSpec& gpu) const override {
    return {input_s_ * factor(gpu), 1, 1};
  }
  workloads::OpCost backward_weight(const workloads::StageSlice&,
                                    const platforms::GpuSpec& gpu) const override {
    return {weight_s_ * factor(gpu), 1, 1};
  }
  workloads::OpCost optimizer(double, const platforms::GpuSpec&) const override { return {0, 0, 0}; }

 private:
  double factor(const platforms::GpuSpec& gpu) const {
    return gpu.name.ends_with(kSlowedSuffix) ? slow_factor_ : 1.0;
  }
  double forward_s_, input_s_, weight_s_;
  double slow_factor_ = 1;
};

// `gpus` one-GPU nodes on a free network where GPU rank `slow_gpu` sits in a
// node group of its own whose GPU is named "... (slowed)".
inline platforms::ClusterSpec with_slowed_gpu(int gpus, int slow_gpu) {
  const auto base = free_network_cluster(1).groups.front();
  platforms::ClusterSpec cluster;
  auto add = [&](int nodes, bool slowed) {
    if (nodes <= 0)
      return;
    auto group = base;
    group.nodes = nodes;
    if (slowed)
      group.gpu.name += kSlowedSuffix;
    cluster.groups.push_back(group);
  };
  add(slow_gpu, false);
  add(1, true);
  add(gpus - slow_gpu - 1, false);
  return cluster;
}

}  // namespace trainsim::testing
