#pragma once
// What the replay records: one typed record per task execution on a GPU
// stream, one per network flow (with the links it crossed), and what the
// SimGrid energy plugin measured. Analysis and exporters read these records;
// they never see SimGrid.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "analysis/fold_images.hpp"
#include "analysis/record_list.hpp"
#include "workloads/task_graph.hpp"

namespace trainsim::analysis {

// GPU streams, as CUDA streams in Megatron / NCCL: one compute stream and one
// communication stream per parallelism, so overlap is visible.
enum class Stream : std::uint8_t { compute, tp_comm, pp_comm, dp_comm, cp_comm, ep_comm };
inline constexpr int kStreamCount = 6;
std::string_view to_string(Stream stream);
Stream stream_of(const workloads::Task& task);

struct TaskRecord {
  workloads::TaskId task = 0;
  int gpu = -1;
  Stream stream = Stream::compute;
  double start_s = 0;
  double end_s = 0;
};

// How the replay represented a collective's flows. `flows`: as its fidelity
// asks (detailed or fast), every flow a SimGrid communication. Under the
// automatic fidelity: `isolated`, no other flow needed its links while it ran,
// so each detailed step was computed exactly (latency, then its bytes at the
// route's narrowest link) without SimGrid flows; `shared`, another flow was
// on its links when it started: detailed flows; `isolated_then_shared`,
// computed alone until another flow came onto its links, detailed flows from
// that instant on; `shared_then_isolated`, detailed flows while another flow
// was on its links, computed alone once they were free (the flows then in
// flight finish as SimGrid flows). The last two can follow each other; the
// label keeps the last change.
enum class Representation : std::uint8_t {
  flows,
  isolated,
  shared,
  isolated_then_shared,
  shared_then_isolated
};
inline constexpr int kRepresentationCount = 5;
std::string_view to_string(Representation representation);

// How the replay ran one collective task: the algorithm actually used (what
// `auto` chose, or what was asked for), how many parallel channels (rings or
// tree pairs) it used, the flow model's fidelity and how it was represented.
struct CollectiveChoice {
  platforms::CollectiveAlgorithm algorithm = platforms::CollectiveAlgorithm::ring;
  int channels = 1;
  platforms::Fidelity fidelity = platforms::Fidelity::detailed;
  Representation representation = Representation::flows;
};

// One direction of one network link, as the platform built it
// ("gpu3-nic_UP", "leaf0-uplink_DOWN", ...).
struct LinkInfo {
  std::string name;
  double bandwidth_Bps = 0;
  double latency_s = 0;
};

// One point-to-point transfer the replay started: a pipeline send is one
// flow, a collective many (one per algorithm step and rank). Its links are
// flow_links[first_link, first_link + link_count) of the timeline.
struct FlowRecord {
  workloads::TaskId task = 0;
  int src_gpu = -1;
  int dst_gpu = -1;
  double bytes = 0;
  double start_s = 0;
  double end_s = 0;
  std::uint32_t first_link = 0;
  std::uint32_t link_count = 0;
};

// A folded replay's records read as their images (analysis/record_list.hpp):
// a task record's image k is image task k on image GPU k at the same times
// (a spanning collective's records name every member already: no images); a
// flow's, image endpoints on the image of its route, for the image task.
struct TaskRecordImages {
  static constexpr bool kUniform = false;
  static int count(const TaskRecord& r, const FoldImages& f) { return f.tasks.fixed(r.task) ? 1 : f.order; }
  static TaskRecord image(TaskRecord r, int k, const FoldImages& f) {
    r.task = f.tasks.power(r.task, k);
    r.gpu = static_cast<int>(f.endpoints.power(static_cast<std::size_t>(r.gpu), k));
    return r;
  }
};
struct FlowRecordImages {
  static constexpr bool kUniform = true;
  static int count(const FlowRecord&, const FoldImages& f) { return f.order; }
  static FlowRecord image(FlowRecord r, int k, const FoldImages& f) {
    r.task = f.tasks.power(r.task, k);
    r.src_gpu = static_cast<int>(f.endpoints.power(static_cast<std::size_t>(r.src_gpu), k));
    r.dst_gpu = static_cast<int>(f.endpoints.power(static_cast<std::size_t>(r.dst_gpu), k));
    r.first_link = f.route_image(r.first_link, k);
    return r;
  }
};
using TaskRecords = RecordList<TaskRecord, TaskRecordImages>;
using FlowRecords = RecordList<FlowRecord, FlowRecordImages>;

// Which recorded records of a folded timeline have alike images
// (analysis/images_alike.hpp): every image k runs a task with its record's
// task's row fields and, as its peer, image k of that task's peer. The
// writers take such a record's images' fields from the record instead of
// reading each image's task. Known for the images it was found for, held
// here so that a list read through other images (or none) has no record
// alike; unknown (the default): none.
class ImagesAlike {
 public:
  ImagesAlike() = default;
  // Every record of a list read through `images`: a fact about the tasks
  // (the fold's check compared each task with its image, whatever records
  // the replay made of them).
  static ImagesAlike every(std::shared_ptr<const FoldImages> images) {
    ImagesAlike a;
    a.images_ = std::move(images);
    a.every_ = true;
    return a;
  }
  // Recorded record i's is alike[i], for the list of alike.size() recorded
  // records that read through `images`.
  ImagesAlike(std::shared_ptr<const FoldImages> images, std::vector<char> alike)
      : images_(std::move(images)), alike_(std::move(alike)) {}

  bool of(const TaskRecords& records, std::size_t i) const {
    if (images_ == nullptr || records.fold_images() != images_.get())
      return false;
    return every_ || (alike_.size() == records.recorded().size() && alike_[i] != 0);
  }
  bool known() const { return images_ != nullptr; }

 private:
  // Held, not only compared: another list's images cannot take its address.
  std::shared_ptr<const FoldImages> images_;
  bool every_ = false;
  std::vector<char> alike_;
};

struct Timeline {
  // One record per (task, GPU): a compute task or a send has one (on the
  // sender), a collective one per member GPU. Ordered by completion. A folded
  // replay's records hold the representatives' and read as every GPU's.
  TaskRecords records;
  // Which of them have alike images (set with the images: the fold's
  // expansion, sim/replay/fold_expansion.cpp).
  ImagesAlike alike;
  double end_s = 0;
  // One entry per collective task that moved data.
  std::unordered_map<workloads::TaskId, CollectiveChoice> collectives;

  // Whether recorded record i's images are alike (ImagesAlike).
  bool images_alike(std::size_t i) const { return alike.of(records, i); }

  const CollectiveChoice* collective_choice(workloads::TaskId task) const {
    const auto it = collectives.find(task);
    return it == collectives.end() ? nullptr : &it->second;
  }

  // The network: every link direction any flow crossed, numbered in order of
  // first use. Flows are ordered by completion; flow_links holds each
  // distinct route once (link indices), and flows on the same route share it.
  std::vector<LinkInfo> links;
  FlowRecords flows;
  std::vector<std::uint32_t> flow_links;
  // Energy each GPU consumed over the iteration, measured by SimGrid's host
  // energy plugin (joules, indexed by GPU rank). Empty when not measured.
  std::vector<double> gpu_energy_J;
};

}  // namespace trainsim::analysis
