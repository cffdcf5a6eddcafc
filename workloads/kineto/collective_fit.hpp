#pragma once
// Fitting the collective constants of a cluster to the NCCL kernels of
// measured traces (`trainsim calibrate`): the efficiency of the links a
// collective's ring crosses and their latency per hop, the constants of
// trainsim's ring model (docs/collectives.md):
//
//   time = launch latency + steps x hop latency + S x f / (bandwidth x efficiency)
//
//   all-reduce       f = 2 (n - 1) / n   steps 2 (n - 1)   S = each rank's buffer
//   all-gather       f = (n - 1) / n     steps n - 1       S = the gathered output
//   reduce-scatter   f = (n - 1) / n     steps n - 1       S = the scattered input
//   broadcast        f = 1               steps n - 1
//
// A group within one NVLink domain crosses NVLink (bandwidth: the GPU's
// NVLink port; fitted: nvlink.efficiency, nvlink.latency); a group across
// domains crosses the NICs (bandwidth: a GPU's share of its node's NICs;
// fitted: fabric.efficiency, nic.latency). An NCCL kernel starts when it is
// launched and waits there for its peers, so each (collective, group size,
// size) keeps its fastest kernel: the one that waited least. The two
// unknowns come from a least-squares fit of the relative error; with one
// message size only, the hop latency keeps the cluster's value. A fit that
// leaves more than 25% error per sample (kernels that mostly waited) is
// reported but sets no key.
#include <string>
#include <vector>

#include "platforms/cluster_spec.hpp"
#include "workloads/kineto/kernel_classes.hpp"
#include "workloads/kineto/kineto_trace.hpp"

namespace trainsim::kineto {

struct CollectiveSample {
  std::string collective;  // allreduce, allgather, reduce_scatter, broadcast
  int group_size = 0;
  bool across_domains = false;
  double bytes = 0;   // S above
  double time_s = 0;  // the fastest kernel of its kind
  int kernels = 0;    // kernels of its kind
};

struct LinkFit {
  std::string link;  // "nvlink" or "network"
  int samples = 0;
  double bandwidth_Bps = 0;
  double efficiency_before = 0, efficiency_after = 0;
  double hop_latency_before_s = 0, hop_latency_after_s = 0;
  double launch_latency_s = 0;
  double rms_error_before = 0, rms_error_after = 0;  // relative, per sample
  // The scenario keys the fit sets, with their values as a scenario writes
  // them ("cluster.nvlink.efficiency" -> "0.712"); none when the fit is poor.
  std::vector<std::pair<std::string, std::string>> keys;
  std::string note;
};

struct CollectiveFit {
  std::vector<CollectiveSample> samples;
  std::vector<LinkFit> links;
  // Communication kernels not fitted, by reason ("send / recv: ...").
  std::vector<std::string> notes;
};

CollectiveFit fit_collectives(const std::vector<RankTrace>& traces, const KernelClassTable& classes,
                              const platforms::ClusterSpec& cluster);

// Bytes of one element of NCCL metadata's dtype ("Float" 4, "BFloat16" 2,
// ...), 0 when unknown.
double nccl_dtype_bytes(const std::string& dtype);

}  // namespace trainsim::kineto
