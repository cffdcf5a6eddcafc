#include "sim/replay/replay.hpp"

#include <fmt/format.h>
#include <xbt/log.h>
#include <simgrid/kernel/Timer.hpp>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>
#include <simgrid/s4u/Activity.hpp>
#include <simgrid/s4u/Comm.hpp>
#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Exec.hpp>
#include <simgrid/s4u/NetZone.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <deque>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <unordered_map>

#include "platforms/input_error.hpp"
#include "sim/collectives/collectives.hpp"
#include "sim/perturbations/driver.hpp"
#include "sim/replay/class_fold.hpp"
#include "sim/replay/class_ghosts.hpp"
#include "sim/replay/flow_recorder.hpp"
#include "sim/replay/fold_expansion.hpp"
#include "sim/replay/folded_collective.hpp"
#include "sim/replay/isolated_run.hpp"
#include "sim/replay/link_claims.hpp"
#include "sim/replay/plan_cache.hpp"
#include "sim/replay/replayed_index.hpp"
#include "sim/replay/route_table.hpp"
#include "sim/replay/task_fifo.hpp"

// The trainsim executable's allocator (sim/cli/small_object_pool.cpp) serves
// every small size from its pool while this is on; tests and other programs
// link no such allocator, and the call is skipped.
extern "C" void trainsim_small_object_pool_widen(bool wide) __attribute__((weak));

namespace trainsim::sim {
namespace sg = simgrid::s4u;
using workloads::TaskGraph;
using workloads::TaskId;
using workloads::TaskKind;

namespace {

// While the engine runs: each communication SimGrid starts and ends
// allocates and frees a dozen objects of 8 to 272 bytes (its network action,
// its max-min variable's elements, route vectors, heap nodes); glibc's free
// took 94 instructions a call on average, most of them past its per-thread
// cache, and the pool's free lists take a few (docs/performance.md).
class SmallObjectPoolWidened {
 public:
  SmallObjectPoolWidened() {
    if (trainsim_small_object_pool_widen != nullptr)
      trainsim_small_object_pool_widen(true);
  }
  ~SmallObjectPoolWidened() {
    if (trainsim_small_object_pool_widen != nullptr)
      trainsim_small_object_pool_widen(false);
  }
  SmallObjectPoolWidened(const SmallObjectPoolWidened&) = delete;
  SmallObjectPoolWidened& operator=(const SmallObjectPoolWidened&) = delete;
};

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
//
// Under the automatic collective fidelity, a collective whose links nothing
// else needs beyond their bandwidth is computed alone (isolated_run.hpp), and
// the SimGrid flows it would have added are never created; a flow that later
// needs one of its links beyond that displaces it: from that instant on its
// steps are SimGrid flows, those in flight resumed where they were
// (link_claims.hpp says why this is exact).
class Replayer {
 public:
  Replayer(const TaskGraph& graph, const ClusterZone& zone, const ReplayOptions& options)
      : graph_(graph),
        zone_(zone),
        options_(options),
        driver_(options.perturbations),
        fold_(options.fold),
        local_(fold_index(options.fold)),
        replayed_count_(options.fold == nullptr ? graph.size() : options.fold->simulated_count),
        remaining_(replayed_count_),
        start_s_(replayed_count_, 0.0),
        compute_queue_(static_cast<std::size_t>(graph.gpu_count)),
        compute_busy_(static_cast<std::size_t>(graph.gpu_count), false),
        collectives_(replayed_count_),
        collective_delay_s_(replayed_count_, 0.0),
        idle_execs_(static_cast<std::size_t>(graph.gpu_count)),
        nominal_flops_(static_cast<std::size_t>(graph.gpu_count), 0.0),
        interference_share_(zone.spec().collectives.compute_interference),
        communicating_(static_cast<std::size_t>(graph.gpu_count), 0),
        interference_(static_cast<std::size_t>(graph.gpu_count)),
        interfering_(interference_share_ > 0 ? replayed_count_ : 0, false),
        routes_(zone),
        flow_recorder_(timeline_, routes_),
        claims_(routes_),
        automatic_(zone.spec().collectives.fidelity == platforms::Fidelity::automatic &&
                   (driver_ == nullptr || !driver_->changes_links())),
        isolated_(automatic_ ? replayed_count_ : 0),
        shared_(automatic_ ? replayed_count_ : 0),
        plans_(driver_ == nullptr || !driver_->changes_links()) {
    if (fold_ != nullptr && fold_->classes) {
      if (!automatic_)
        throw std::logic_error("the class fold without the automatic collective fidelity");
      ghosts_.emplace(*fold_, routes_, claims_);
    }
    // The records of the first iteration, allocated once (see
    // ReplayOptions::expected_flows): one per compute task or send, one per
    // member GPU of a collective.
    // Under the fold, the replayed tasks' records only: the others are read
    // as their images.
    // Under the fold, a replayed task waits only for its replayed
    // predecessors: the others are images of replayed ones and end with them.
    std::size_t records = 0;
    if (fold_ != nullptr)
      in_degree_.assign(replayed_count_, 0);
    for (TaskId id = 0; id < graph.size(); ++id) {
      if (!replayed(id))
        continue;
      records += graph[id].kind == workloads::TaskKind::collective
                     ? graph.groups[static_cast<std::size_t>(graph[id].group)].size()
                     : 1;
      if (fold_ != nullptr)
        for (auto [e, end] = boost::out_edges(workloads::task_vertex(id), graph.dependencies()); e != end;
             ++e)
          if (const TaskId next = boost::target(*e, graph.dependencies()); fold_->simulated[next])
            ++in_degree_[at(next)];
    }
    timeline_.records.reserve(records);
    timeline_.flows.reserve(options.expected_flows);
  }

  ReplayResult run() {
    sg::Activity::on_completion_cb([this](const sg::Activity& activity) { on_activity_done(activity); });
    if (driver_ != nullptr)
      driver_->start();
    begin_iteration();
    {
      const SmallObjectPoolWidened widened;
      sg::Engine::get_instance()->run();
    }
    if (iteration_ < options_.iterations && driver_ != nullptr && driver_->waiting_flows() > 0)
      throw platforms::InputError(
          {"the job stalls for good: a link of the perturbations section goes down and never "
           "comes back while transfers need it (give the fault an `until`, or `uplinks` for a "
           "fat-tree uplink that ECMP can route around)"});
    if (iteration_ < options_.iterations)
      throw std::logic_error("replay stalled: " + std::to_string(graph_.size() - completed_) +
                             " tasks never became ready (cyclic or broken task graph)");
    if (!refuted_.empty())
      throw FoldRefuted(refuted_);
    if (options_.check_fold_only)
      return {};
    if (ghosts_)
      expand_class_fold(timeline_, *fold_, ghosts_->number_images(flow_recorder_));
    else if (fold_ != nullptr)
      expand_folded_timeline(timeline_, *fold_, zone_, flow_recorder_.link_of_index());
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
    Route* route = nullptr;      // communications: endpoints (to retry a flow cut by
                                 // a link going down), links (claims)
    double start_s = 0;          // communications: when SimGrid started it
    double delay_s = 0;          // communications: its step's delay (FlowRequest::delay_s)
    // A collective flow left in flight when its collective went isolated
    // (try_isolate): its index among the run's first flows, else -1. An
    // orphan's bound is not in claims_: the run claims it with the rest.
    int orphan = -1;
    std::size_t in_flight_at = 0;  // its place in its collective's Shared::in_flight
  };

  // A collective computed alone, until it ends or is displaced.
  struct Isolated {
    IsolatedRun run;
    simgrid::kernel::timer::Timer* timer = nullptr;
    // Went isolated after running as flows (try_isolate): its state machine
    // then, and its flows in flight then (the run's first orphans() flows),
    // which finish as SimGrid flows: their slots and whether they ended.
    std::unique_ptr<Collective> base;
    std::vector<std::size_t> orphan_slots;
    std::vector<char> orphan_done;
    std::size_t orphans() const { return orphan_slots.size(); }
  };

  // A collective running as SimGrid flows under the automatic fidelity
  // (`shared`): its flows in flight (slot indices) and, to try now and then
  // whether its links have become free (try_isolate), its finished flows.
  struct Shared {
    std::vector<std::size_t> in_flight;
    std::size_t done = 0;
    std::size_t next_try = kFirstTry;
  };
  // A try costs about as much as replaying a few dozen flows (a copy of the
  // state machine, the rest computed until it fits or not): collectives of
  // fewer flows never try (scale-512 with ZeRO-3, 37k shared 8-rank
  // gathers and reduce-scatters: 12 s of CPU, 21 s had they tried from
  // their first flow on).
  static constexpr std::size_t kFirstTry = 64;

  static constexpr std::size_t kNoFlow = static_cast<std::size_t>(-1);

  static double now() { return sg::Engine::get_clock(); }

  // Every task of the graph becomes pending again; the sources start now.
  void begin_iteration() {
    iteration_start_s_.push_back(now());
    completed_ = 0;
    if (driver_ != nullptr)
      driver_->begin_iteration(iteration_);  // perturbations only: no task state
    // One pass in id order, where the replayed tasks' slots (at()) follow
    // each other.
    std::size_t slot = 0;
    for (TaskId v = 0; v < graph_.size(); ++v) {
      if (!replayed(v))
        continue;
      const int waiting =
          fold_ != nullptr
              ? in_degree_[slot]
              : static_cast<int>(boost::in_degree(workloads::task_vertex(v), graph_.dependencies()));
      remaining_[slot++] = waiting;
      if (waiting == 0)
        ready_.push_back(v);
    }
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

  // The first iteration's records (none when the replay only checks the
  // class fold's premise).
  bool recording() const { return iteration_ == 0 && !options_.check_fold_only; }
  // Under the fold, only the representatives' tasks and the spanning
  // collectives are replayed.
  bool replayed(TaskId id) const { return fold_ == nullptr || fold_->simulated[id]; }
  bool replayed_gpu(int gpu) const {
    return fold_ == nullptr || fold_->representative[static_cast<std::size_t>(gpu)];
  }
  std::size_t replayed_count() const { return replayed_count_; }
  // A replayed task's index into the per-task arrays below: under the fold
  // its rank among the replayed tasks (the arrays hold those only), else its
  // id.
  std::size_t at(TaskId id) const { return local_.empty() ? id : local_[id]; }
  static ReplayedIndex fold_index(const ReplicaFold* fold) {
    return fold == nullptr ? ReplayedIndex() : ReplayedIndex(fold->simulated);
  }

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
        start_s_[at(id)] = now();
        if (task.bytes <= 0)
          return complete(id);
        communication_starts(id, std::array{task.gpu, task.peer});
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
      start_s_[at(id)] = now();
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
      // (Pstate 0's speed is fixed once the platform is sealed: asked once
      // per GPU.)
      double& nominal = nominal_flops_[g];
      if (nominal == 0)
        nominal = host->get_pstate_speed(0);
      exec->set_flops_amount(task.duration_s * nominal);
      exec->set_data(slot_for(id, -1, exec, &idle));
      exec->start();
    }
  }

  // src and dst are flow endpoints: GPU ranks, or an NVSwitch for in-switch
  // reductions (ClusterZone::switch_endpoint).
  // `delay_s`: the step's cost beyond the route's latency (FlowRequest),
  // charged as latency.
  void start_comm(TaskId id, int rank, int src, int dst, double bytes, double delay_s = 0) {
    if (driver_ != nullptr && !driver_->route_up(src, dst)) {
      // A link of the route is down: the flow waits for it (SimGrid would
      // drop a transfer started on a dead route).
      const double since = now();
      driver_->when_link_up([this, id, rank, src, dst, bytes, delay_s, since]() {
        driver_->note_stall(now() - since);
        start_comm(id, rank, src, dst, bytes, delay_s);
      });
      return;
    }
    Route& route = routes_.route(src, dst);
    launch_comm(id, rank, route, bytes, now(), std::llround(bytes),
                delay_s > 0 ? route.latency_s + delay_s : -1, delay_s);
  }

  // Starts a SimGrid communication of `payload` bytes on `route` for a flow
  // of `bytes` that started at `start_s` (earlier than now when a displaced
  // collective's flow resumes). `latency_s` < 0: the route's whole latency;
  // else what is left of the route's latency and the step's delay `delay_s`.
  void launch_comm(TaskId id, int rank, Route& route, double bytes, double start_s, long long payload,
                   double latency_s, double delay_s = 0) {
    if (automatic_) {
      std::vector<TaskId> displaced;
      claims_.add_flow(route, displaced);
      if (ghosts_ && ghosts_->has_images(id))
        ghosts_->add_flow(route, displaced);
      for (const TaskId other : displaced)
        displace(other);
    }
    auto& idle = route.idle;
    sg::CommPtr comm;
    if (idle.empty()) {
      comm = sg::Comm::sendto_init(route.src_host, route.dst_host);
    } else {
      comm = boost::static_pointer_cast<sg::Comm>(std::move(idle.back()));
      idle.pop_back();
      comm->set_state(sg::Activity::State::STARTING);  // as sendto_init leaves it
    }
    comm->set_payload_size(static_cast<std::uint64_t>(std::max(payload, 0LL)));
    std::size_t flow = kNoFlow;
    if (recording()) {
      const auto [src, dst] = recorded_gpus(route);
      flow = flow_recorder_.start(id, src, dst, route, bytes, start_s);
    }
    void* data = slot_for(id, rank, comm, &idle, flow, &route);
    comm->set_data(data);
    const auto index = reinterpret_cast<std::size_t>(data) - 1;
    slots_[index].start_s = start_s;
    slots_[index].delay_s = delay_s;
    if (automatic_ && shared_[at(id)] != nullptr) {
      slots_[index].in_flight_at = shared_[at(id)]->in_flight.size();
      shared_[at(id)]->in_flight.push_back(index);
    }
    if (latency_s >= 0 && route.latency_s > 0) {
      // SimGrid charges the route's latency to every communication it starts;
      // a step with a delay pays it on top (a factor above 1), a resumed
      // flow only what is left of both (none once its bytes move: a
      // vanishing factor rather than zero, which SimGrid would treat as a
      // route without latency when sharing the links).
      // SimGrid takes no empty callback back, so the one installed stays,
      // answering 1 (what the CM02 model's default factor is) outside this
      // call; it is installed only when first needed (a displacement, or a
      // step with a delay), as SimGrid copies each route for the callback of
      // every later communication.
      if (!latency_factor_installed_) {
        auto* network = sg::Engine::get_instance()->get_netzone_root()->get_network_model();
        network->set_lat_factor_cb(
            [this](double, const sg::Host*, const sg::Host*, const std::vector<sg::Link*>&,
                   const std::unordered_set<sg::NetZone*>&) { return latency_factor_; });
        latency_factor_installed_ = true;
      }
      latency_factor_ = latency_s > 0 ? latency_s / route.latency_s : 1e-300;
      start(*comm, route);
      latency_factor_ = 1.0;
      return;
    }
    start(*comm, route);
  }

  // SimGrid asks the zone for the route of the communication it starts: the
  // pair's memo spares the zone its lookup.
  void start(sg::Comm& comm, Route& route) {
    zone_.expect_route(route.src, route.dst, route.kernel);
    comm.start();
    zone_.expect_no_route();
  }

  // The class fold's premise P1 (class_fold.hpp): a collective across
  // replicas runs `isolated` throughout.
  void refute_if_across(TaskId id, const char* what) {
    if (ghosts_ && fold_->across[id] && refuted_.empty())
      refuted_ = fmt::format("task {} ({}) {} at {} s: P1 fails (it reaches the replicas at other times)", id,
                             workloads::task_label(graph_, id), what, now());
  }

  CollectivePlan plan_collective(TaskId id, std::optional<platforms::Fidelity> fidelity = std::nullopt,
                                 std::size_t* remembered_as = nullptr) {
    const auto& task = graph_[id];
    return plans_.plan(
        {task.op, graph_.groups[static_cast<std::size_t>(task.group)], task.bytes, task.fold, task.algorithm,
         task.exchange >= 0 ? &graph_.exchanges[static_cast<std::size_t>(task.exchange)] : nullptr},
        task.group, zone_, fidelity, fold_ != nullptr && fold_->spanning[id] ? fold_ : nullptr,
        remembered_as);
  }

  // The collective computed alone from now (IsolatedRunner::run), or the
  // run of an alike collective (the same remembered plan) dated again when
  // its flows end in the same order (IsolatedRunner::rerun: the same run,
  // bit for bit). scale-16k computes 32,768 TP collectives alone, of 2,048
  // plans. A plan's run is scripted at its second run, so that the plans
  // run once (the spanning rings, 8,192 flows each at scale-16k) keep no
  // script, and only up to kMostScriptedFlows flows (a script holds ~80
  // bytes a flow).
  //
  // `plan`: as plan_collective() gave it with `planned_as` (a remembered
  // plan without its machine: made here only to be run).
  bool run_alone(CollectivePlan& plan, std::size_t planned_as, IsolatedRun& out) {
    const double t = now();
    if (planned_as == PlanCache::kNotRemembered)
      return runner_.run(*plan.flows, t, routes_, claims_, out, false);
    if (plan_runs_.size() <= planned_as)
      plan_runs_.resize(planned_as + 1);
    PlanRuns& runs = plan_runs_[planned_as];
    if (runs.script) {
      switch (IsolatedRunner::rerun(*runs.script, t, claims_, out)) {
        case IsolatedRunner::Rerun::done:
          return true;
        case IsolatedRunner::Rerun::doesnt_fit:
          return false;
        case IsolatedRunner::Rerun::other_order:
        case IsolatedRunner::Rerun::other_links:  // (rerun() does not move flows)
          plan.flows = plans_.machine(planned_as);
          return runner_.run(*plan.flows, t, routes_, claims_, out, false);
      }
    }
    plan.flows = plans_.machine(planned_as);
    if (runs.runs == 0 && plan.flows->alike_but_endpoints(*plan.flows))
      if (const auto fits = run_moved(*plan.flows, t, out))
        return *fits;
    // Only the second run is scripted (below).
    if (!runner_.run(*plan.flows, t, routes_, claims_, out, runs.runs == 1))
      return false;
    if (runs.runs < 2 && ++runs.runs == 2 && out.flows.size() <= kMostScriptedFlows)
      runs.script = runner_.script(out);
    return true;
  }
  static constexpr std::size_t kMostScriptedFlows = 4096;

  // A plan's first run, of a machine that can tell whether another is alike
  // to it but for its endpoints (Collective::alike_but_endpoints: the
  // spanning data-parallel quotient rings, each its own plan, 128 of 8,128
  // flows each at scale-16k, alike across a stage's rings and the stages):
  // dated from the script of an alike machine's run on routes that map
  // link for link (IsolatedRunner::rerun_moved: the same run, bit for bit,
  // but for the endpoints), or run and, the first of its kind, scripted.
  // Up to kMostMovedScripts kinds keep a script; none (nullopt) when the
  // machine is of no kept kind and no more are kept: the plan's own script
  // (run_alone) then serves it.
  std::optional<bool> run_moved(Collective& machine, double t, IsolatedRun& out) {
    for (const MovedScript& kind : moved_scripts_) {
      if (!kind.machine->alike_but_endpoints(machine))
        continue;
      switch (IsolatedRunner::rerun_moved(kind.script, machine, t, routes_, claims_, out)) {
        case IsolatedRunner::Rerun::done:
          return true;
        case IsolatedRunner::Rerun::doesnt_fit:
          return false;
        case IsolatedRunner::Rerun::other_order:
        case IsolatedRunner::Rerun::other_links:
          return runner_.run(machine, t, routes_, claims_, out, false);
      }
    }
    if (moved_scripts_.size() >= kMostMovedScripts)
      return std::nullopt;
    std::unique_ptr<Collective> fresh = machine.clone();
    if (!runner_.run(machine, t, routes_, claims_, out))
      return false;
    if (auto script = runner_.script(out))
      moved_scripts_.push_back({std::move(fresh), std::move(*script)});
    return true;
  }
  static constexpr std::size_t kMostMovedScripts = 8;

  void start_collective(TaskId id) {
    const auto& task = graph_[id];
    start_s_[at(id)] = now();
    const auto& gpus = graph_.groups[static_cast<std::size_t>(task.group)];
    if (gpus.size() < 2 || task.bytes <= 0)
      return complete(id);
    communication_starts(id, gpus);
    std::size_t planned_as = PlanCache::kNotRemembered;
    CollectivePlan plan = plan_collective(id, std::nullopt, &planned_as);
    auto& choice = timeline_.collectives[id] = plan.choice;
    collective_delay_s_[at(id)] = plan.extra_latency_s;
    if (!automatic_ && plan.choice.fidelity == platforms::Fidelity::automatic)
      choice.representation = analysis::Representation::shared;  // links change: flows throughout
    if (automatic_ && plan.choice.fidelity == platforms::Fidelity::automatic) {
      auto isolated = std::make_unique<Isolated>();
      if (run_alone(plan, planned_as, isolated->run)) {
        choice.representation = analysis::Representation::isolated;
        go_isolated(id, std::move(isolated));
        return;
      }
      choice.representation = analysis::Representation::shared;
      refute_if_across(id, "starts as flows (its links carry other flows)");
      const std::int64_t limit = zone_.spec().collectives.detailed_flow_limit;
      if (limit > 0 && plan.detailed_flows > limit) {
        // Too many steps to replay as flows (collectives.detailed_flow_limit):
        // its fast form, one flow per edge, as flows to its end.
        plan = plan_collective(id, platforms::Fidelity::fast);
        choice.fidelity = plan.choice.fidelity;
        collective_delay_s_[at(id)] = plan.extra_latency_s;
      } else {
        // Its links carry other flows: detailed flows (the run spent the
        // plan), computed alone again once its links are free (try_isolate).
        plan = plan_collective(id);
        shared_[at(id)] = std::make_unique<Shared>();
      }
    }
    if (plan.flows == nullptr)
      plan.flows = plans_.machine(planned_as);
    collectives_[at(id)] = std::move(plan.flows);
    flows_.clear();
    collectives_[at(id)]->start(flows_);
    start_flows(id);
  }

  // The flow's endpoints as the timeline records them: a leg to or from an
  // NVSwitch on its GPU.
  static std::pair<int, int> recorded_gpus(const Route& route) {
    return {route.recorded_src, route.recorded_dst};
  }

  void record_isolated(TaskId id, const ScheduledFlow& flow) {
    const auto [src, dst] = recorded_gpus(*flow.route);
    flow_recorder_.record(id, src, dst, *flow.route, flow.request.bytes, flow.start_s, flow.end_s);
  }

  // An isolated collective's last flow ends.
  void end_isolated(TaskId id) {
    const auto isolated = std::move(isolated_[at(id)]);
    claims_.remove_isolated(id, isolated->run.claims);
    if (ghosts_)
      ghosts_->remove_isolated(id);
    // Flows left in flight by try_isolate are SimGrid's: recorded and counted
    // as they end.
    const std::size_t orphans = isolated->orphans();
    if (recording())
      for (const std::uint32_t f : isolated->run.finish_order)
        if (f >= orphans)
          record_isolated(id, isolated->run.flows[f]);
    count_flows_done(isolated->run.flows.size() - orphans);
    finish_collective(id);
    drain();
  }

  // A collective running as flows (`shared`) tries, after its 64th, 128th,
  // 256th, ... finished flow, whether the rest of it fits alone on its links
  // now: if so it goes on computed alone (`shared_then_isolated`), exactly
  // as an isolated collective (link_claims.hpp): its flows in flight finish
  // as SimGrid flows, at the end SimGrid gives a flow on links nothing else
  // needs (what remains of their latency, then their remaining bytes at
  // their bound), which dates the steps they release. Contention at a
  // collective's start is often brief (a pipeline send finishing on the
  // same NIC as a data-parallel ring's first step), and the doubling bounds
  // the cost of the tries to a few per collective.
  void try_isolate(TaskId id) {
    Shared& shared = *shared_[at(id)];
    const double t = now();
    std::vector<ScheduledFlow> in_flight;
    in_flight.reserve(shared.in_flight.size());
    for (const std::size_t s : shared.in_flight) {
      const Slot& slot = slots_[s];
      Route& route = *slot.route;
      const double moving_from = std::max(t, slot.start_s + route.latency_s + slot.delay_s);
      const double end_s = moving_from + slot.activity->get_remaining() / route.bound_Bps;
      in_flight.push_back(
          {FlowRequest{route.src, route.dst, 0.0, slot.rank, slot.delay_s}, &route, slot.start_s, end_s});
      claims_.remove_flow(route);  // the run claims them with the rest
      if (ghosts_ && ghosts_->has_images(id))
        ghosts_->remove_flow(route);
    }
    auto machine = collectives_[at(id)]->clone();
    auto isolated = std::make_unique<Isolated>();
    if (!runner_.resume(*machine, in_flight, t, routes_, claims_, isolated->run)) {
      std::vector<TaskId> displaced;  // stays empty: these claims were there a moment ago
      for (const std::size_t s : shared.in_flight) {
        claims_.add_flow(*slots_[s].route, displaced);
        if (ghosts_ && ghosts_->has_images(id))
          ghosts_->add_flow(*slots_[s].route, displaced);
      }
      return;
    }
    for (std::size_t k = 0; k < shared.in_flight.size(); ++k) {
      Slot& slot = slots_[shared.in_flight[k]];
      slot.orphan = static_cast<int>(k);
    }
    isolated->base = std::move(collectives_[at(id)]);
    isolated->orphan_slots = std::move(shared.in_flight);
    isolated->orphan_done.assign(isolated->orphans(), 0);
    shared_[at(id)].reset();
    timeline_.collectives[id].representation = analysis::Representation::shared_then_isolated;
    go_isolated(id, std::move(isolated));
  }

  // A collective's computed run takes effect: it claims its links until it
  // ends (or is displaced).
  void go_isolated(TaskId id, std::unique_ptr<Isolated> isolated) {
    claims_.add_isolated(id, isolated->run.claims);
    if (ghosts_ && ghosts_->has_images(id))
      ghosts_->add_isolated(id, isolated->run);
    if (recording())
      for (auto& flow : isolated->run.flows)
        flow_recorder_.number_links(*flow.route);
    isolated->timer =
        simgrid::kernel::timer::Timer::set(isolated->run.end_s, [this, id]() { end_isolated(id); });
    isolated_[at(id)] = std::move(isolated);
  }

  // Another flow needs an isolated collective's links: its flows become
  // SimGrid flows from now on, those in flight resumed where they are.
  void displace(TaskId id) {
    if (isolated_[at(id)] == nullptr)
      return;  // displaced already, by another link of the same flow
    const auto isolated = std::move(isolated_[at(id)]);
    isolated->timer->remove();
    claims_.remove_isolated(id, isolated->run.claims);
    if (ghosts_)
      ghosts_->remove_isolated(id);
    timeline_.collectives[id].representation = analysis::Representation::isolated_then_shared;
    refute_if_across(id, "is displaced by a flow that needs its links");
    const double t = now();
    // A state machine told of every flow that has finished: a fresh one, or
    // the one it had when it went isolated (try_isolate).
    std::vector<FlowRequest> released;
    std::unique_ptr<Collective> machine = std::move(isolated->base);
    if (machine == nullptr) {
      machine = plan_collective(id).flows;
      machine->start(released);
    }
    const auto& flows = isolated->run.flows;
    std::vector<char> done(flows.size(), 0);
    // Its flows left in flight by try_isolate are SimGrid's: those that have
    // ended (or end now by the run's date: SimGrid's may come a rounding
    // later, and is then ignored, as the flows it released are in the run)
    // tell the machine now, the others drive it again when they end.
    std::vector<TaskId> displaced_too;
    for (std::size_t k = 0; k < isolated->orphans(); ++k) {
      done[k] = 1;
      if (isolated->orphan_done[k] || flows[k].end_s <= t) {
        machine->on_flow_done(flows[k].request.tag, released);
        continue;
      }
      Slot& slot = slots_[isolated->orphan_slots[k]];
      slot.orphan = -1;
      claims_.add_flow(*slot.route, displaced_too);
      if (ghosts_ && ghosts_->has_images(id))
        ghosts_->add_flow(*slot.route, displaced_too);
    }
    for (const std::uint32_t f : isolated->run.finish_order) {
      if (f < isolated->orphans())
        continue;
      if (flows[f].end_s > t)
        break;
      done[f] = 1;
      count_flows_done(1);
      machine->on_flow_done(flows[f].request.tag, released);
      if (recording())
        record_isolated(id, flows[f]);
    }
    const bool finished = machine->finished();
    collectives_[at(id)] = std::move(machine);
    if (finished)
      return finish_collective(id);
    for (std::size_t f = 0; f < flows.size() && flows[f].start_s <= t; ++f) {
      if (done[f])
        continue;
      const auto& flow = flows[f];
      Route& route = *flow.route;
      const double bytes = static_cast<double>(std::llround(flow.request.bytes));
      const double latency_end_s = flow.start_s + route.latency_s + flow.request.delay_s;
      if (t < latency_end_s)
        launch_comm(id, flow.request.tag, route, flow.request.bytes, flow.start_s, std::llround(bytes),
                    latency_end_s - t, flow.request.delay_s);
      else
        launch_comm(id, flow.request.tag, route, flow.request.bytes, flow.start_s,
                    std::llround(bytes - (t - latency_end_s) * route.bound_Bps), 0.0, flow.request.delay_s);
    }
    for (const TaskId other : displaced_too)
      displace(other);
  }

  void leave_in_flight(Shared& shared, std::size_t slot) {
    const std::size_t at = slots_[slot].in_flight_at;
    const std::size_t last = shared.in_flight.back();
    shared.in_flight[at] = last;
    slots_[last].in_flight_at = at;
    shared.in_flight.pop_back();
  }

  void start_flows(TaskId id) {
    for (const auto& f : flows_)
      start_comm(id, f.tag, f.src, f.dst, f.bytes, f.delay_s);
    flows_.clear();
  }

  void* slot_for(TaskId id, int rank, sg::ActivityPtr activity, std::vector<sg::ActivityPtr>* idle,
                 std::size_t flow = kNoFlow, Route* route = nullptr) {
    std::size_t index;
    if (!free_slots_.empty()) {
      index = free_slots_.back();
      free_slots_.pop_back();
    } else {
      index = slots_.size();
      slots_.emplace_back();
    }
    slots_[index] = Slot{id, rank, std::move(activity), idle, flow, route};
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
    if (automatic_ && slot.route != nullptr && slot.orphan < 0) {
      claims_.remove_flow(*slot.route);
      if (ghosts_ && ghosts_->has_images(slot.task))
        ghosts_->remove_flow(*slot.route);
    }
    if (activity.get_state() == sg::Activity::State::FAILED && driver_ != nullptr && slot.route != nullptr) {
      // A link of its route went down: the rest of the flow waits for it.
      const auto* comm = dynamic_cast<const sg::Comm*>(&activity);
      const double left = comm != nullptr ? comm->get_remaining() : 0;
      retire(slot);
      if (slot.flow != kNoFlow)
        flow_recorder_.finish(slot.flow, now());
      free_slots_.push_back(index);
      start_comm(slot.task, slot.rank, slot.route->src, slot.route->dst, std::max(left, 1.0));
      drain();
      return;
    }
    if (activity.get_state() != sg::Activity::State::FINISHED)
      throw std::logic_error("a simulated activity failed: " + workloads::task_label(graph_[slot.task]));
    retire(slot);
    if (slot.flow != kNoFlow)
      flow_recorder_.finish(slot.flow, now());
    free_slots_.push_back(index);
    if (slot.route != nullptr)
      count_flows_done(1);
    const TaskId id = slot.task;
    const auto& task = graph_[id];
    if (slot.orphan >= 0) {
      // Its collective went isolated while it was in flight (try_isolate),
      // which dated this end already.
      const auto& isolated = isolated_[at(id)];
      const auto k = static_cast<std::size_t>(slot.orphan);
      if (isolated != nullptr && k < isolated->orphans() && isolated->orphan_slots[k] == index)
        isolated->orphan_done[k] = 1;
      drain();
      return;
    }
    if (task.kind == TaskKind::collective) {
      Shared* shared = automatic_ ? shared_[at(id)].get() : nullptr;
      if (shared != nullptr) {
        leave_in_flight(*shared, index);
        // Under the fold a spanning collective's flow ends with its images:
        // the tries come after as many ended flows as in the full replay.
        shared->done += fold_ != nullptr && fold_->spanning[id] ? static_cast<std::size_t>(fold_->order) : 1;
      }
      auto& collective = *collectives_[at(id)];
      collective.on_flow_done(slot.rank, flows_);
      start_flows(id);
      if (collective.finished()) {
        finish_collective(id);
      } else if (shared != nullptr && shared->done >= shared->next_try) {
        while (shared->next_try <= shared->done)
          shared->next_try *= 2;
        try_isolate(id);
      }
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
    collectives_[at(id)].reset();
    if (automatic_)
      shared_[at(id)].reset();
    const double delay = collective_delay_s_[at(id)];
    if (delay <= 0)
      return complete(id);
    simgrid::kernel::timer::Timer::set(now() + delay, [this, id]() {
      complete(id);
      drain();
    });
  }

  // Masks of powers of two keep the checks cheap; a few hundred tasks or a
  // few thousand flows take well under the progress line's refresh interval.
  //
  // An isolated collective's flows count as done when it ends (or, when
  // displaced, those that had finished), so that the count follows the
  // estimate of sim/replay/replay_cost.hpp, which counts every flow.
  void count_flows_done(std::size_t flows) {
    const std::size_t before = flows_done_;
    flows_done_ += flows;
    if ((before >> 12) != (flows_done_ >> 12))
      report_progress();
  }

  void report_progress() {
    if (options_.on_progress)
      options_.on_progress({now(), tasks_done_,
                            replayed_count() * static_cast<std::size_t>(std::max(options_.iterations, 1)),
                            flows_done_});
  }

  // Compute/communication interference (CollectiveConfig::compute_interference):
  // while a GPU takes part in a collective or a transfer, an execution bounded
  // to that share of its nominal speed runs on its host beside the compute
  // task, and SimGrid's fair sharing of the host leaves compute the rest. One
  // such execution per GPU, started at its first communication; between
  // communications its priority drops to kIdlePriority, whose share of the
  // host (1e-100 of the compute task's) rounds away in double, and it is
  // restored at the next one. Not suspend() / resume(): SimGrid 3.32's
  // Activity::resume() leaves the activity marked suspended, so the next
  // suspend() did nothing and compute stayed slowed after a GPU's second
  // communication (ComputeInterference.ComputeAfterAGpusSecondCommunicationRunsAtFullSpeed);
  // nor a new execution per communication (cancelling a suspended one
  // mid-run stalls 3.32's replay, and keeping them slows its solver).
  // (`gpus`: a span, so that a send's pair allocates nothing.)
  void communication_starts(TaskId id, std::span<const int> gpus) {
    if (interference_share_ <= 0 || graph_[id].copy_engine)
      return;
    interfering_[at(id)] = true;
    for (int gpu : gpus) {
      const auto g = static_cast<std::size_t>(gpu);
      if (gpu < 0 || g >= communicating_.size() || !replayed_gpu(gpu) || communicating_[g]++ > 0)
        continue;
      if (interference_[g]) {
        interference_[g]->update_priority(1.0);
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
    if (interference_share_ <= 0 || !interfering_[at(id)])
      return;
    interfering_[at(id)] = false;
    const auto& task = graph_[id];
    const auto end = [this](int gpu) {
      const auto g = static_cast<std::size_t>(gpu);
      if (gpu >= 0 && g < communicating_.size() && replayed_gpu(gpu) && --communicating_[g] == 0)
        interference_[g]->update_priority(kIdlePriority);
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
          timeline_.records.push_back({id, gpu, stream, start_s_[at(id)], end});
      } else {
        timeline_.records.push_back({id, task.gpu, stream, start_s_[at(id)], end});
      }
      timeline_.end_s = std::max(timeline_.end_s, end);
    }
    ++completed_;
    if ((++tasks_done_ & 255) == 0)
      report_progress();
    for (auto [e, e_end] = boost::out_edges(workloads::task_vertex(id), graph_.dependencies()); e != e_end;
         ++e) {
      const TaskId next = boost::target(*e, graph_.dependencies());
      if (replayed(next) && --remaining_[at(next)] == 0)
        ready_.push_back(next);
    }
    if (completed_ == replayed_count())
      end_iteration();
  }

  const TaskGraph& graph_;
  const ClusterZone& zone_;
  const ReplayOptions& options_;
  PerturbationDriver* driver_;
  const ReplicaFold* fold_;
  // Per-task arrays hold the replayed tasks only (at(id)).
  ReplayedIndex local_;  // under the fold: each replayed task's index
  std::size_t replayed_count_;
  std::vector<int> in_degree_;  // under the fold: replayed predecessors
  int iteration_ = 0;
  std::vector<double> iteration_start_s_;
  std::vector<double> iteration_end_s_;
  std::vector<int> remaining_;
  std::vector<double> start_s_;
  std::deque<TaskId> ready_;
  std::vector<TaskFifo> compute_queue_;
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
  std::vector<double> nominal_flops_;  // per GPU, its host's pstate 0 speed (0: not asked yet)
  struct Retired {
    sg::ActivityPtr activity;
    std::vector<sg::ActivityPtr>* idle;
  };
  std::vector<Retired> retired_;
  // Compute/communication interference: the share, how many communications
  // each GPU is in, its bounded execution, and the tasks that started one.
  static constexpr double kInterferenceFlops = 1e30;  // never finishes
  static constexpr double kIdlePriority = 1e-100;     // 1 + 1e-100 == 1: no share left
  double interference_share_;
  std::vector<int> communicating_;
  std::vector<sg::ExecPtr> interference_;
  std::vector<bool> interfering_;
  std::size_t completed_ = 0;
  std::size_t tasks_done_ = 0;  // over every iteration, for the progress reports
  std::size_t flows_done_ = 0;
  analysis::Timeline timeline_;
  RouteTable routes_;  // and the idle communications of each pair
  FlowRecorder flow_recorder_;
  LinkClaims claims_;
  IsolatedRunner runner_;
  // The automatic collective representation is on: asked for, and no link
  // changes its bandwidth during the run.
  bool automatic_;
  std::vector<std::unique_ptr<Isolated>> isolated_;  // by task
  std::vector<std::unique_ptr<Shared>> shared_;      // by task: running as flows under `auto`
  // Each distinct collective planned once while the links stay as built.
  PlanCache plans_;
  // By remembered plan: its runs computed alone (up to 2), and the second
  // one's script, to date again (run_alone).
  struct PlanRuns {
    int runs = 0;
    std::optional<IsolatedScript> script;
  };
  std::vector<PlanRuns> plan_runs_;
  // run_moved(): a machine as it was before its run, and the run's script.
  struct MovedScript {
    std::unique_ptr<Collective> machine;
    IsolatedScript script;
  };
  std::vector<MovedScript> moved_scripts_;
  // The latency factor SimGrid applies to the communication being started
  // (below 1 only while a displaced collective's flow resumes).
  double latency_factor_ = 1.0;
  bool latency_factor_installed_ = false;
  // The class fold (class_ghosts.hpp): the images' claims; and the first
  // collective across replicas that did not run `isolated` throughout.
  std::optional<ClassGhosts> ghosts_;
  std::string refuted_;
};

}  // namespace

analysis::Timeline replay(const TaskGraph& graph, const ClusterZone& zone) {
  const ReplayOptions options;
  return replay(graph, zone, options).timeline;
}

ReplayResult replay(const TaskGraph& graph, const ClusterZone& zone, const ReplayOptions& options) {
  auto replayer = std::make_unique<Replayer>(graph, zone, options);
  try {
    return replayer->run();
  } catch (...) {
    // A replay stopped by an exception (an allocation that failed under
    // `ulimit -v`) holds started SimGrid communications, and SimGrid 3.32's
    // Comm destructor prints a backtrace for each one not completed: hundreds
    // of them above the one-line "out of memory" message. Nothing can end
    // them once the engine has thrown, and the process ends on this
    // exception, so the replayer is left to it rather than destroyed, and
    // the engine's teardown may not warn about the flows still listed
    // ("Probable bug: ... not removed before the LMM system destruction").
    static_cast<void>(replayer.release());
    xbt_log_control_set("root.thresh:critical");
    throw;
  }
}

}  // namespace trainsim::sim
