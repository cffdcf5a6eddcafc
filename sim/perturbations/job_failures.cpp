#include "sim/perturbations/job_failures.hpp"

#include <simgrid/kernel/Timer.hpp>
#include <simgrid/s4u/Engine.hpp>

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "sim/perturbations/driver.hpp"

namespace trainsim::sim {
namespace {
namespace sg = simgrid::s4u;
using simgrid::kernel::timer::Timer;

// Failure times in [0, horizon): the given ones and the exponential draws.
std::vector<double> failure_times(const scenario::Failures& f, int gpus, int nodes, std::uint64_t seed) {
  std::vector<double> times;
  for (double t : f.at_s)
    if (t < f.run_time_s)
      times.push_back(t);
  // A separate stream from the stragglers' (same seed, other purpose).
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ULL);
  const auto draw_process = [&](double mean_s) {
    for (double t = 0;;) {
      t += -std::log(1.0 - uniform01(rng)) * mean_s;
      if (t >= f.run_time_s)
        break;
      times.push_back(t);
    }
  };
  if (f.gpu_mtbf_s > 0)
    draw_process(f.gpu_mtbf_s / gpus);
  if (f.node_mtbf_s > 0)
    draw_process(f.node_mtbf_s / nodes);
  std::sort(times.begin(), times.end());
  return times;
}

class Job {
 public:
  Job(const scenario::Failures& f, const std::vector<double>& iteration_times_s, JobFailureResult& r)
      : f_(f), times_(iteration_times_s), r_(r), t0_(sg::Engine::get_clock()) {}

  void run(const std::vector<double>& failures) {
    for (double t : failures)
      Timer::set(t0_ + t, [this]() { on_failure(); });
    Timer::set(t0_ + f_.run_time_s, [this]() { on_end(); });
    start_iteration();
    sg::Engine::get_instance()->run();
  }

 private:
  enum class State { iterating, checkpointing, restarting, ended };

  double now() const { return sg::Engine::get_clock() - t0_; }

  void schedule(double duration_s, void (Job::*next)()) {
    phase_start_ = now();
    pending_ = Timer::set(t0_ + phase_start_ + duration_s, [this, next]() {
      pending_ = nullptr;
      (this->*next)();
    });
  }

  void cancel() {
    if (pending_ != nullptr)
      pending_->remove();
    pending_ = nullptr;
  }

  void start_iteration() {
    state_ = State::iterating;
    const double t = times_[static_cast<std::size_t>(iteration_ % static_cast<long long>(times_.size()))];
    schedule(t, &Job::on_iteration_done);
  }

  void on_iteration_done() {
    const double t = times_[static_cast<std::size_t>(iteration_ % static_cast<long long>(times_.size()))];
    ++iteration_;
    ++since_checkpoint_iterations_;
    since_checkpoint_s_ += t;
    if (f_.checkpoint_interval_s > 0 && now() - last_checkpoint_end_ >= f_.checkpoint_interval_s) {
      state_ = State::checkpointing;
      schedule(r_.checkpoint_write_s, &Job::on_checkpoint_done);
      return;
    }
    start_iteration();
  }

  void on_checkpoint_done() {
    ++r_.checkpoints;
    r_.checkpoint_s += r_.checkpoint_write_s;
    keep_progress();
    checkpoint_iteration_ = iteration_;
    last_checkpoint_end_ = now();
    start_iteration();
  }

  void keep_progress() {
    r_.useful_iterations += since_checkpoint_iterations_;
    r_.useful_s += since_checkpoint_s_;
    since_checkpoint_iterations_ = 0;
    since_checkpoint_s_ = 0;
  }

  // Accounts the part of the current phase that ran until now.
  void close_phase(bool failed) {
    const double elapsed = now() - phase_start_;
    switch (state_) {
      case State::iterating:
        (failed ? r_.lost_work_s : r_.unfinished_s) += elapsed;
        break;
      case State::checkpointing:
        r_.checkpoint_s += elapsed;
        break;
      case State::restarting:
        r_.restart_s += elapsed;
        break;
      case State::ended:
        break;
    }
  }

  void on_failure() {
    if (state_ == State::ended)
      return;
    ++r_.failures;
    cancel();
    close_phase(true);
    // Everything since the last checkpoint is lost and will be redone.
    r_.lost_iterations += since_checkpoint_iterations_;
    r_.lost_work_s += since_checkpoint_s_;
    since_checkpoint_iterations_ = 0;
    since_checkpoint_s_ = 0;
    iteration_ = checkpoint_iteration_;
    state_ = State::restarting;
    schedule(f_.restart_delay_s, &Job::on_restarted);
  }

  void on_restarted() {
    r_.restart_s += f_.restart_delay_s;
    // The checkpoint interval counts from the restart.
    last_checkpoint_end_ = now();
    start_iteration();
  }

  void on_end() {
    cancel();
    close_phase(false);
    // The job ends normally: what it completed since the last checkpoint is
    // kept (its final checkpoint is outside the run).
    keep_progress();
    state_ = State::ended;
  }

  const scenario::Failures& f_;
  const std::vector<double>& times_;
  JobFailureResult& r_;
  const double t0_;
  State state_ = State::iterating;
  Timer* pending_ = nullptr;
  double phase_start_ = 0;
  long long iteration_ = 0;
  long long checkpoint_iteration_ = 0;
  long long since_checkpoint_iterations_ = 0;
  double since_checkpoint_s_ = 0;
  double last_checkpoint_end_ = 0;
};

}  // namespace

JobFailureResult simulate_job_failures(const scenario::Failures& failures,
                                       const std::vector<double>& iteration_times_s,
                                       double tokens_per_iteration, double parameters, int gpus, int nodes,
                                       std::uint64_t seed) {
  if (iteration_times_s.empty())
    throw std::logic_error("simulate_job_failures needs at least one iteration time");
  JobFailureResult r;
  r.run_time_s = failures.run_time_s;
  r.tokens_per_iteration = tokens_per_iteration;
  r.checkpoint_bytes = parameters * failures.checkpoint_bytes_per_parameter;
  r.checkpoint_write_s =
      failures.storage_bandwidth_Bps > 0 ? r.checkpoint_bytes / failures.storage_bandwidth_Bps : 0;
  Job job(failures, iteration_times_s, r);
  job.run(failure_times(failures, gpus, nodes, seed));
  const double hours = r.run_time_s / 3600;
  r.goodput_tokens_per_hour =
      hours > 0 ? static_cast<double>(r.useful_iterations) * tokens_per_iteration / hours : 0;
  double mean = 0;
  for (double t : iteration_times_s)
    mean += t / static_cast<double>(iteration_times_s.size());
  r.ideal_tokens_per_hour = mean > 0 ? tokens_per_iteration / mean * 3600 : 0;
  return r;
}

}  // namespace trainsim::sim
