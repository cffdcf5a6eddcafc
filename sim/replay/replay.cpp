#include "sim/replay/replay.hpp"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Activity.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <stdexcept>
#include <unordered_map>

#include "platforms/input_error.hpp"
#include "sim/collectives/collectives.hpp"
#include "sim/perturbations/driver.hpp"
#include "sim/replay/flow_recorder.hpp"

namespace trainsim::sim {
namespace sg = simgrid::s4u;
using workloads::TaskGraph;
using workloads::TaskId;
using workloads::TaskKind;

namespace {

// Activities are started again rather than created anew. SimGrid 3.32 keeps
// the activities it lists on the maestro actor in one std::list and removes
// each finished one with std::list::remove, a walk over all of them: at 1,024
// GPUs that walk was a third of a run, and it grows with the cluster. A
// communication is listed when it is created (Comm::sendto_init() detaches
// it: CommImpl::detach) and an execution when it is created from the maestro
// (the ExecImpl constructor); completion unlists them (CommImpl::finish,
// ExecImpl::post), and starting a finished one again does not list it. So
// only an activity's first use walks a list that holds first uses alone.
// The network and CPU models see the same actions in the same order. (Only
// Host::turn_off reads that list, to fail what runs on the host: the replay
// never turns a host off.)
class Replayer {
 public:
  Replayer(const TaskGraph& graph, const ClusterZone& zone, const ReplayOptions& options)
      : graph_(graph),
        zone_(zone),
        options_(options),
        driver_(options.perturbations),
        remaining_(graph.size()),
        start_s_(graph.size(), 0.0),
        compute_queue_(static_cast<std::size_t>(graph.gpu_count)),
        compute_busy_(static_cast<std::size_t>(graph.gpu_count), false),
        collectives_(graph.size()),
        collective_delay_s_(graph.size(), 0.0),
        idle_execs_(static_cast<std::size_t>(graph.gpu_count)),
        interference_share_(zone.spec().collectives.compute_interference),
        communicating_(static_cast<std::size_t>(graph.gpu_count), 0),
        interference_(static_cast<std::size_t>(graph.gpu_count)),
        interfering_(interference_share_ > 0 ? graph.size() : 0, false),
        flow_recorder_(timeline_) {}

  ReplayResult run() {
    sg::Activity::on_completion_cb([this](const sg::Activity& activity) { on_activity_done(activity); });
    if (driver_ != nullptr)
      driver_->start();
    begin_iteration();
    sg::Engine::get_instance()->run();
    if (iteration_ < options_.iterations && driver_ != nullptr && driver_->waiting_flows() > 0)
      throw platforms::InputError(
          {"the job stalls for good: a link of the perturbations section goes down and never "
           "comes back while transfers need it (give the fault an `until`, or `uplinks` for a "
           "fat-tree uplink that ECMP can route around)"});
    if (iteration_ < options_.iterations)
      throw std::logic_error("replay stalled: " + std::to_string(graph_.size() - completed_) +
                             " tasks never became ready (cyclic or broken task graph)");
    return {std::move(timeline_), std::move(iteration_start_s_), std::move(iteration_end_s_)};
  }

 private:
  // What a running SimGrid activity stands for.
  struct Slot {
    TaskId task = 0;
    int rank = -1;  // collective flows: the collective's tag for the flow
    sg::ActivityPtr activity;
    // Where the activity waits, once finished, to be started again.
    std::vector<sg::ActivityPtr>* idle = nullptr;
    std::size_t flow = kNoFlow;  // communications: the FlowRecorder handle
    int src = -1;                // communications: endpoints, to retry a flow
    int dst = -1;                // cut by a link going down
  };

  static constexpr std::size_t kNoFlow = static_cast<std::size_t>(-1);

  static double now() { return sg::Engine::get_clock(); }

  // Every task of the graph becomes pending again; the sources start now.
  void begin_iteration() {
    iteration_start_s_.push_back(now());
    completed_ = 0;
    for (TaskId v = 0; v < graph_.size(); ++v)
      remaining_[v] = static_cast<int>(boost::in_degree(v, graph_.graph));
    if (driver_ != nullptr)
      driver_->begin_iteration(iteration_);
    for (TaskId v = 0; v < graph_.size(); ++v)
      if (remaining_[v] == 0)
        ready_.push_back(v);
    drain();
  }

  void end_iteration() {
    iteration_end_s_.push_back(now());
    ++iteration_;
    if (iteration_ < options_.iterations) {
      begin_iteration();
      return;
    }
    if (driver_ != nullptr)
      driver_->stop();  // pending perturbation timers (flapping) would run on forever
    // The interference executions would never end: SimGrid ends them (their
    // completion is ignored) before run() returns.
    for (auto& exec : interference_)
      if (exec)
        exec->cancel();
  }

  bool recording() const { return iteration_ == 0; }

  // Handles every task that became ready, including the chains of zero-cost
  // tasks that complete on the spot, without recursion.
  void drain() {
    while (!ready_.empty()) {
      const TaskId id = ready_.front();
      ready_.pop_front();
      dispatch(id);
    }
  }

  void dispatch(TaskId id) {
    const auto& task = graph_[id];
    switch (task.kind) {
      case TaskKind::send:
        start_s_[id] = now();
        if (task.bytes <= 0)
          return complete(id);
        communication_starts(id, {task.gpu, task.peer});
        start_comm(id, -1, task.gpu, task.peer, task.bytes);
        return;
      case TaskKind::collective:
        return start_collective(id);
      default: {
        auto& queue = compute_queue_[static_cast<std::size_t>(task.gpu)];
        queue.push_back(id);
        start_compute(task.gpu);
      }
    }
  }

  void start_compute(int gpu) {
    const auto g = static_cast<std::size_t>(gpu);
    while (!compute_busy_[g] && !compute_queue_[g].empty()) {
      const TaskId id = compute_queue_[g].front();
      compute_queue_[g].pop_front();
      start_s_[id] = now();
      const auto& task = graph_[id];
      if (task.duration_s <= 0) {
        complete(id);
        continue;
      }
      compute_busy_[g] = true;
      sg::Host* host = zone_.host(gpu);
      auto& idle = idle_execs_[g];
      sg::ExecPtr exec;
      if (idle.empty()) {
        exec = sg::Exec::init();
        exec->set_host(host);
      } else {
        exec = boost::static_pointer_cast<sg::Exec>(std::move(idle.back()));
        idle.pop_back();
        exec->set_state(sg::Activity::State::INITED);
      }
      // Durations are at nominal speed (pstate 0); a slowed host (another
      // pstate, sim/perturbations/driver.hpp) stretches them.
      exec->set_flops_amount(task.duration_s * host->get_pstate_speed(0));
      exec->set_data(slot_for(id, -1, exec, &idle));
      exec->start();
    }
  }

  // src and dst are flow endpoints: GPU ranks, or an NVSwitch for in-switch
  // reductions (ClusterZone::switch_endpoint).
  void start_comm(TaskId id, int rank, int src, int dst, double bytes) {
    if (driver_ != nullptr && !driver_->route_up(src, dst)) {
      // A link of the route is down: the flow waits for it (SimGrid would
      // drop a transfer started on a dead route).
      const double since = now();
      driver_->when_link_up([this, id, rank, src, dst, bytes, since]() {
        driver_->note_stall(now() - since);
        start_comm(id, rank, src, dst, bytes);
      });
      return;
    }
    auto& idle = idle_comms_[(static_cast<std::uint64_t>(src) << 32) | static_cast<std::uint32_t>(dst)];
    sg::CommPtr comm;
    if (idle.empty()) {
      comm = sg::Comm::sendto_init(zone_.endpoint_host(src), zone_.endpoint_host(dst));
    } else {
      comm = boost::static_pointer_cast<sg::Comm>(std::move(idle.back()));
      idle.pop_back();
      comm->set_state(sg::Activity::State::STARTING);  // as sendto_init leaves it
    }
    comm->set_payload_size(static_cast<std::uint64_t>(std::llround(bytes)));
    // A leg to or from an NVSwitch is recorded on its GPU (src == dst).
    const int gpus = zone_.gpu_count();
    const std::size_t flow =
        recording() ? flow_recorder_.start(id, src, dst, src < gpus ? src : dst, dst < gpus ? dst : src,
                                           zone_.endpoint_host(src), zone_.endpoint_host(dst), bytes, now())
                    : kNoFlow;
    comm->set_data(slot_for(id, rank, comm, &idle, flow, src, dst));
    comm->start();
  }

  void start_collective(TaskId id) {
    const auto& task = graph_[id];
    start_s_[id] = now();
    const auto& gpus = graph_.groups[static_cast<std::size_t>(task.group)];
    if (gpus.size() < 2 || task.bytes <= 0)
      return complete(id);
    communication_starts(id, gpus);
    CollectivePlan plan = make_collective({task.op, gpus, task.bytes, task.fold, task.algorithm}, zone_);
    timeline_.collectives[id] = plan.choice;
    collective_delay_s_[id] = plan.extra_latency_s;
    collectives_[id] = std::move(plan.flows);
    flows_.clear();
    collectives_[id]->start(flows_);
    start_flows(id);
  }

  void start_flows(TaskId id) {
    for (const auto& f : flows_)
      start_comm(id, f.tag, f.src, f.dst, f.bytes);
    flows_.clear();
  }

  void* slot_for(TaskId id, int rank, sg::ActivityPtr activity, std::vector<sg::ActivityPtr>* idle,
                 std::size_t flow = kNoFlow, int src = -1, int dst = -1) {
    std::size_t index;
    if (!free_slots_.empty()) {
      index = free_slots_.back();
      free_slots_.pop_back();
    } else {
      index = slots_.size();
      slots_.emplace_back();
    }
    slots_[index] = Slot{id, rank, std::move(activity), idle, flow, src, dst};
    // Slot indices travel in the activity's data pointer, offset by one so
    // that no slot is a null pointer.
    return reinterpret_cast<void*>(index + 1);
  }

  // The kernel still touches an activity right after its completion callback
  // (it is posted then): a finished activity becomes idle, ready to start
  // again, only at the next completion.
  void retire(Slot& slot) { retired_.push_back({std::move(slot.activity), slot.idle}); }

  void on_activity_done(const sg::Activity& activity) {
    for (auto& [finished, idle] : retired_)
      idle->push_back(std::move(finished));
    retired_.clear();
    if (activity.get_data<void>() == nullptr)
      return;  // an interference execution, cancelled at the end (see below)
    const auto index = reinterpret_cast<std::size_t>(activity.get_data<void>()) - 1;
    Slot& slot = slots_[index];
    if (activity.get_state() == sg::Activity::State::FAILED && driver_ != nullptr && slot.src >= 0) {
      // A link of its route went down: the rest of the flow waits for it.
      const auto* comm = dynamic_cast<const sg::Comm*>(&activity);
      const double left = comm != nullptr ? comm->get_remaining() : 0;
      retire(slot);
      if (slot.flow != kNoFlow)
        flow_recorder_.finish(slot.flow, now());
      free_slots_.push_back(index);
      start_comm(slot.task, slot.rank, slot.src, slot.dst, std::max(left, 1.0));
      drain();
      return;
    }
    if (activity.get_state() != sg::Activity::State::FINISHED)
      throw std::logic_error("a simulated activity failed: " + workloads::task_label(graph_[slot.task]));
    retire(slot);
    if (slot.flow != kNoFlow)
      flow_recorder_.finish(slot.flow, now());
    free_slots_.push_back(index);
    if (slot.src >= 0 && (++flows_done_ & 4095) == 0)
      report_progress();
    const TaskId id = slot.task;
    const auto& task = graph_[id];
    if (task.kind == TaskKind::collective) {
      auto& collective = *collectives_[id];
      collective.on_flow_done(slot.rank, flows_);
      start_flows(id);
      if (collective.finished())
        finish_collective(id);
    } else {
      if (workloads::is_compute(task.kind))
        compute_busy_[static_cast<std::size_t>(task.gpu)] = false;
      complete(id);
      if (workloads::is_compute(task.kind))
        start_compute(task.gpu);
    }
    drain();
  }

  // The flows are done; the collective ends after the latency they do not
  // carry (NCCL's launch latency, a fast expansion's latency terms, the
  // extra passes of a folded collective: see make_collective).
  void finish_collective(TaskId id) {
    collectives_[id].reset();
    const double delay = collective_delay_s_[id];
    if (delay <= 0)
      return complete(id);
    simgrid::kernel::timer::Timer::set(now() + delay, [this, id]() {
      complete(id);
      drain();
    });
  }

  // Masks of powers of two keep the checks cheap; a few hundred tasks or a
  // few thousand flows take well under the progress line's refresh interval.
  void report_progress() {
    if (options_.on_progress)
      options_.on_progress({now(), tasks_done_,
                            graph_.size() * static_cast<std::size_t>(std::max(options_.iterations, 1)),
                            flows_done_});
  }

  // Compute/communication interference (CollectiveConfig::compute_interference):
  // while a GPU takes part in a collective or a transfer, an execution bounded
  // to that share of its nominal speed runs on its host beside the compute
  // task, and SimGrid's fair sharing of the host leaves compute the rest. One
  // such execution per GPU, started at its first communication, suspended
  // between communications and resumed at the next (suspending changes the
  // sharing at once; a cancellation would only be seen at the next event).
  void communication_starts(TaskId id, const std::vector<int>& gpus) {
    if (interference_share_ <= 0)
      return;
    interfering_[id] = true;
    for (int gpu : gpus) {
      const auto g = static_cast<std::size_t>(gpu);
      if (gpu < 0 || g >= communicating_.size() || communicating_[g]++ > 0)
        continue;
      if (interference_[g]) {
        interference_[g]->resume();
        continue;
      }
      sg::Host* host = zone_.host(gpu);
      interference_[g] = sg::Exec::init();
      interference_[g]->set_host(host);
      interference_[g]->set_flops_amount(kInterferenceFlops);
      interference_[g]->set_bound(interference_share_ * host->get_pstate_speed(0));
      interference_[g]->start();
    }
  }

  void communication_ends(TaskId id) {
    if (interference_share_ <= 0 || !interfering_[id])
      return;
    interfering_[id] = false;
    const auto& task = graph_[id];
    const auto end = [this](int gpu) {
      const auto g = static_cast<std::size_t>(gpu);
      if (gpu >= 0 && g < communicating_.size() && --communicating_[g] == 0)
        interference_[g]->suspend();
    };
    if (task.kind == TaskKind::send) {
      end(task.gpu);
      end(task.peer);
    } else {
      for (int gpu : graph_.groups[static_cast<std::size_t>(task.group)])
        end(gpu);
    }
  }

  void complete(TaskId id) {
    communication_ends(id);
    const auto& task = graph_[id];
    const double end = now();
    if (recording()) {
      const auto stream = analysis::stream_of(task);
      if (task.kind == TaskKind::collective) {
        for (int gpu : graph_.groups[static_cast<std::size_t>(task.group)])
          timeline_.records.push_back({id, gpu, stream, start_s_[id], end});
      } else {
        timeline_.records.push_back({id, task.gpu, stream, start_s_[id], end});
      }
      timeline_.end_s = std::max(timeline_.end_s, end);
    }
    ++completed_;
    if ((++tasks_done_ & 255) == 0)
      report_progress();
    for (auto [e, e_end] = boost::out_edges(id, graph_.graph); e != e_end; ++e) {
      const TaskId next = boost::target(*e, graph_.graph);
      if (--remaining_[next] == 0)
        ready_.push_back(next);
    }
    if (completed_ == graph_.size())
      end_iteration();
  }

  const TaskGraph& graph_;
  const ClusterZone& zone_;
  const ReplayOptions& options_;
  PerturbationDriver* driver_;
  int iteration_ = 0;
  std::vector<double> iteration_start_s_;
  std::vector<double> iteration_end_s_;
  std::vector<int> remaining_;
  std::vector<double> start_s_;
  std::deque<TaskId> ready_;
  std::vector<std::deque<TaskId>> compute_queue_;
  std::vector<bool> compute_busy_;
  std::vector<std::unique_ptr<Collective>> collectives_;
  std::vector<double> collective_delay_s_;
  std::vector<FlowRequest> flows_;
  std::vector<Slot> slots_;
  std::vector<std::size_t> free_slots_;
  // Finished activities, kept to be started again (see above Replayer):
  // executions by GPU, communications by (source, destination) endpoints
  // (SimGrid fixes a communication's endpoints once set).
  std::vector<std::vector<sg::ActivityPtr>> idle_execs_;
  std::unordered_map<std::uint64_t, std::vector<sg::ActivityPtr>> idle_comms_;
  struct Retired {
    sg::ActivityPtr activity;
    std::vector<sg::ActivityPtr>* idle;
  };
  std::vector<Retired> retired_;
  // Compute/communication interference: the share, how many communications
  // each GPU is in, its bounded execution, and the tasks that started one.
  static constexpr double kInterferenceFlops = 1e30;  // never finishes
  double interference_share_;
  std::vector<int> communicating_;
  std::vector<sg::ExecPtr> interference_;
  std::vector<bool> interfering_;
  std::size_t completed_ = 0;
  std::size_t tasks_done_ = 0;  // over every iteration, for the progress reports
  std::size_t flows_done_ = 0;
  analysis::Timeline timeline_;
  FlowRecorder flow_recorder_;
};

}  // namespace

analysis::Timeline replay(const TaskGraph& graph, const ClusterZone& zone) {
  const ReplayOptions options;
  return Replayer(graph, zone, options).run().timeline;
}

ReplayResult replay(const TaskGraph& graph, const ClusterZone& zone, const ReplayOptions& options) {
  return Replayer(graph, zone, options).run();
}

}  // namespace trainsim::sim
