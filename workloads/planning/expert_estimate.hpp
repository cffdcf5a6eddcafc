#pragma once
// The plan estimate's expert parallelism (workloads/planning/plan_estimate.hpp):
// the uncontended time of one MoE layer's dispatch and combine on an EP
// group, from the bytes the replay moves (workloads/expert_parallel.hpp for
// all_to_all, workloads/moe_dispatch.hpp for deepep) over the links they
// take, under balanced routing. docs/plan_search.md derives it.
//
//   all_to_all  each rank sends S (ep - l) / ep of a pass's S bytes to the
//               GPUs of other nodes through its NIC and S (l - 1) / ep to
//               the l - 1 others of its node over NVLink, at once:
//               max(remote / B_nic, local / B_nvlink) + latency + launch
//   deepep      the RDMA bytes a rank sends (one copy per touched node,
//               node_share of the bytes for that node's GPUs) through its
//               NIC, against its NVLink bytes (its node's own GPUs plus
//               what it relays to them, the (l - 1) / l of the remote
//               bytes that are not its own), the same max
//
// B_nic is a NIC's achievable bandwidth (nic.bandwidth x fabric.efficiency)
// shared by the GPUs of a NIC, B_nvlink the GPU's NVLink port.
#include "platforms/cluster_spec.hpp"
#include "workloads/model_spec.hpp"
#include "workloads/parallel_plan.hpp"

namespace trainsim::workloads {

struct ExpertExchangeEstimate {
  double pass_pair_s = 0;   // one MoE layer's dispatch + combine (or their gradients)
  double transfer_s = 0;    // of it, the bytes' time on the busier of NIC and NVLink
  double remote_bytes = 0;  // sent by one rank over its NIC per pass pair
  double nvlink_bytes = 0;  // sent by one rank over NVLink per pass pair
};

// For the first EP group of pipeline rank `stage` (TP rank 0; deepep with
// 1 < expert_tp < tp: its first expert-TP x EP block); zero when ep is 1 or
// the model is dense.
ExpertExchangeEstimate expert_exchange_estimate(const ModelSpec& model, const ParallelPlan& plan,
                                                const platforms::ClusterSpec& cluster, int stage);

}  // namespace trainsim::workloads
