#pragma once
// How busy GPUs and links were: per GPU the compute and communication
// streams, their overlap and the communication left exposed (by kind); per
// link the bytes it carried, the fraction of the iteration it carried any
// flow, its mean load and the most flows it carried at once.
#include <array>
#include <map>
#include <string>
#include <vector>

#include "analysis/fold_classes.hpp"
#include "analysis/intervals.hpp"
#include "analysis/timeline.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

// The communication kinds reported separately, in file order.
inline constexpr std::array<workloads::CommKind, 5> kCommKinds{
    workloads::CommKind::tp, workloads::CommKind::pp, workloads::CommKind::dp, workloads::CommKind::cp,
    workloads::CommKind::ep};
using CommSeconds = std::array<double, kCommKinds.size()>;
std::size_t comm_kind_index(workloads::CommKind kind);

struct GpuStreams {
  int gpu = 0;
  double compute_busy_s = 0;
  double comm_busy_s = 0;  // any communication stream
  double overlap_s = 0;    // communication under compute
  CommSeconds comm_busy_by_kind_s{};
  // Communication with no compute running, split evenly between the kinds
  // active at the same moment: adds up to the GPU's exposed communication.
  CommSeconds exposed_by_kind_s{};
};

struct LinkUsage {
  int link = 0;  // index into Timeline::links
  std::string name;
  double bandwidth_Bps = 0;
  double bytes = 0;
  std::size_t flows = 0;
  double busy_s = 0;         // time at least one flow crossed it
  double busy_fraction = 0;  // busy_s / iteration time
  double utilization = 0;    // bytes / (bandwidth x iteration time)
  int peak_concurrent_flows = 0;
};

struct Utilization {
  double iteration_time_s = 0;
  std::size_t flow_count = 0;
  std::vector<GpuStreams> gpus;
  std::vector<LinkUsage> links;     // in link index order
  std::vector<int> hottest;         // up to 10 link indices, by utilization then busy fraction
  CommSeconds exposed_by_kind_s{};  // summed over GPUs
  // The same exposed time split finer, by what is communicated: a
  // collective's parallelism and operation (`dp_all_gather`,
  // `dp_reduce_scatter`, `tp_all_reduce`, `cp_all_gather`) or a pipeline
  // transfer's content (`pp_activation`, `pp_gradient`, BPipe's `pp_evict`
  // and `pp_reload`); summed over GPUs. Only labels of tasks the graph has.
  // Adds up to the total exposed communication (cp included, which
  // exposed_by_kind_s leaves out).
  std::map<std::string, double> exposed_by_op_s;
};

// The label exposed_by_op_s files a communication task under; empty for a
// compute task.
std::string comm_op_label(const workloads::Task& task);

Utilization analyze_utilization(const workloads::TaskGraph& graph, const Timeline& timeline);
// The same, on the GPU and link orbits already built for this graph and
// timeline (GpuClasses::of(graph, timeline, graph.gpu_count), LinkClasses::of).
// `comm_busy`, when not null, gets what analyze_bubbles reads of the same
// records (analysis/bubbles.hpp), from this one pass over them: each
// representative GPU's communication busy intervals, merged (every record
// off the compute stream, a send's on both ends), representatives alike
// sharing one list (the image GPUs' entries are not set). It is left empty
// when some such record's parallelism is none of kCommKinds (the union of
// the kinds' lists here would not hold it).
Utilization analyze_utilization(const workloads::TaskGraph& graph, const Timeline& timeline,
                                const GpuClasses& classes, const LinkClasses& link_classes,
                                SharedIntervalLists* comm_busy = nullptr);

}  // namespace trainsim::analysis
