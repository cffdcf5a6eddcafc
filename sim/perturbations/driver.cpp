#include "sim/perturbations/driver.hpp"

#include <simgrid/s4u/Engine.hpp>
#include <simgrid/s4u/Host.hpp>

#include <algorithm>
#include <cmath>
#include <set>

#include "sim/platform/cluster_zone.hpp"

namespace trainsim::sim {
namespace sg = simgrid::s4u;

double draw(const scenario::Distribution& d, std::mt19937_64& rng) {
  double v = d.a;
  switch (d.kind) {
    case scenario::Distribution::Kind::fixed:
      break;
    case scenario::Distribution::Kind::uniform:
      v = d.a + (d.b - d.a) * uniform01(rng);
      break;
    case scenario::Distribution::Kind::lognormal: {
      // Box-Muller: one standard normal from two uniforms (1 - u avoids log 0).
      const double u1 = 1.0 - uniform01(rng);
      const double u2 = uniform01(rng);
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
      v = d.a * std::exp(d.b * z);
      break;
    }
  }
  return std::clamp(v, d.min, d.max);
}

namespace {

// Speed of the slow windows and throttling profiles over `gpu` at time t.
double step_speed_at(const scenario::Perturbations& p, int gpu, double t) {
  double speed = 1;
  for (const auto& s : p.slow_gpus)
    if (s.window.contains(t) && std::binary_search(s.gpus.begin(), s.gpus.end(), gpu))
      speed *= s.speed;
  for (const auto& th : p.throttling) {
    if (!std::binary_search(th.gpus.begin(), th.gpus.end(), gpu))
      continue;
    for (auto it = th.points.rbegin(); it != th.points.rend(); ++it)
      if (it->at_s <= t) {
        speed *= it->speed;
        break;
      }
  }
  return speed;
}

}  // namespace

GpuSpeedPlan plan_gpu_speeds(const scenario::Perturbations& p, int gpu_count, int iterations,
                             std::uint64_t seed) {
  GpuSpeedPlan plan;
  const auto n = static_cast<std::size_t>(gpu_count);
  plan.steps.resize(n);
  plan.pstate_factors.resize(n);
  std::vector<std::set<double>> times(n);
  for (const auto& s : p.slow_gpus)
    for (int g : s.gpus) {
      times[static_cast<std::size_t>(g)].insert(s.window.from_s);
      if (std::isfinite(s.window.until_s))
        times[static_cast<std::size_t>(g)].insert(s.window.until_s);
    }
  for (const auto& th : p.throttling)
    for (int g : th.gpus)
      for (const auto& point : th.points)
        times[static_cast<std::size_t>(g)].insert(point.at_s);
  for (std::size_t g = 0; g < n; ++g) {
    if (times[g].empty())
      continue;
    times[g].insert(0.0);
    for (double t : times[g])
      plan.steps[g].emplace_back(t, step_speed_at(p, static_cast<int>(g), t));
  }

  if (p.stragglers.enabled) {
    std::mt19937_64 rng(seed);
    for (int it = 0; it < iterations; ++it)
      for (int g : p.stragglers.gpus)
        if (uniform01(rng) < p.stragglers.probability) {
          const double speed = draw(p.stragglers.speed, rng);
          const double duration = draw(p.stragglers.duration_s, rng);
          plan.draws.push_back({it, g, speed, duration});
        }
  }

  // Every speed a GPU can run at: each step level, times each straggler
  // speed it may draw (computed as the driver will, so the values match).
  std::vector<std::set<double>> speeds(n);
  for (std::size_t g = 0; g < n; ++g)
    for (const auto& [t, s] : plan.steps[g])
      speeds[g].insert(s);
  for (const auto& d : plan.draws) {
    auto& set = speeds[static_cast<std::size_t>(d.gpu)];
    std::vector<double> levels(set.begin(), set.end());
    if (levels.empty())
      levels.push_back(1.0);
    for (double level : levels)
      set.insert(level * d.speed);
    set.insert(d.speed);
  }
  for (std::size_t g = 0; g < n; ++g)
    for (double s : speeds[g])
      if (s != 1.0)
        plan.pstate_factors[g].push_back(s);
  return plan;
}

PerturbationDriver::PerturbationDriver(const scenario::Perturbations& perturbations, const GpuSpeedPlan& plan,
                                       const ClusterZone& zone)
    : p_(perturbations),
      plan_(plan),
      zone_(zone),
      step_speed_(static_cast<std::size_t>(zone.gpu_count()), 1.0),
      straggle_speed_(static_cast<std::size_t>(zone.gpu_count()), 1.0),
      straggle_until_s_(static_cast<std::size_t>(zone.gpu_count()), 0.0),
      straggle_from_s_(static_cast<std::size_t>(zone.gpu_count()), 0.0) {
  for (const auto& fault : p_.links)
    for (const auto& name : fault.links) {
      auto& state = links_[name];
      if (state.link == nullptr) {
        state.link = sg::SplitDuplexLink::by_name(name);
        state.nominal_Bps = state.link->get_link_up()->get_bandwidth();
      }
    }
}

void PerturbationDriver::at(double date_s, std::function<void()> action) {
  const std::uint64_t id = next_timer_++;
  timers_[id] = simgrid::kernel::timer::Timer::set(date_s, [this, id, action = std::move(action)]() {
    timers_.erase(id);
    if (!stopped_)
      action();
  });
}

void PerturbationDriver::start() {
  for (int g = 0; g < zone_.gpu_count(); ++g)
    schedule_gpu_steps(g);
  for (int f = 0; f < static_cast<int>(p_.links.size()); ++f)
    schedule_fault(f);
}

void PerturbationDriver::schedule_gpu_steps(int gpu) {
  for (const auto& [t, speed] : plan_.steps[static_cast<std::size_t>(gpu)]) {
    if (t <= 0) {
      step_speed_[static_cast<std::size_t>(gpu)] = speed;
      apply_gpu(gpu);
      continue;
    }
    at(t, [this, gpu, speed = speed]() {
      step_speed_[static_cast<std::size_t>(gpu)] = speed;
      apply_gpu(gpu);
    });
  }
}

void PerturbationDriver::apply_gpu(int gpu) {
  const auto g = static_cast<std::size_t>(gpu);
  const double speed = straggle_speed_[g] == 1.0 ? step_speed_[g] : step_speed_[g] * straggle_speed_[g];
  sg::Host* host = zone_.host(gpu);
  unsigned long pstate = 0;
  if (speed != 1.0) {
    // The nearest planned speed (they are computed the same way, so equal).
    const auto& factors = plan_.pstate_factors[g];
    double best = std::numeric_limits<double>::infinity();
    for (std::size_t i = 0; i < factors.size(); ++i)
      if (std::abs(factors[i] - speed) < best) {
        best = std::abs(factors[i] - speed);
        pstate = i + 1;
      }
  }
  if (host->get_pstate() != pstate)
    host->set_pstate(pstate);
}

void PerturbationDriver::begin_iteration(int iteration) {
  const double now = sg::Engine::get_clock();
  int episodes = 0;
  while (draw_cursor_ < plan_.draws.size() && plan_.draws[draw_cursor_].iteration < iteration)
    ++draw_cursor_;
  for (; draw_cursor_ < plan_.draws.size() && plan_.draws[draw_cursor_].iteration == iteration;
       ++draw_cursor_) {
    const auto& d = plan_.draws[draw_cursor_];
    const auto g = static_cast<std::size_t>(d.gpu);
    if (straggle_until_s_[g] > now)  // already in an episode
      continue;
    ++episodes;
    ++stats_.straggler_episodes;
    straggle_speed_[g] = d.speed;
    straggle_from_s_[g] = now;
    straggle_until_s_[g] = now + d.duration_s;
    apply_gpu(d.gpu);
    at(now + d.duration_s, [this, gpu = d.gpu, g, duration = d.duration_s, until = now + d.duration_s]() {
      if (straggle_until_s_[g] != until)
        return;
      straggle_speed_[g] = 1.0;
      stats_.straggler_gpu_seconds += duration;
      apply_gpu(gpu);
    });
  }
  if (stats_.episodes_per_iteration.size() <= static_cast<std::size_t>(iteration))
    stats_.episodes_per_iteration.resize(static_cast<std::size_t>(iteration) + 1, 0);
  stats_.episodes_per_iteration[static_cast<std::size_t>(iteration)] = episodes;
}

void PerturbationDriver::schedule_fault(int fault) {
  const auto& f = p_.links[static_cast<std::size_t>(fault)];
  const auto begin = [this, fault](double t) {
    if (t <= 0)
      set_fault(fault, true);
    else
      at(t, [this, fault]() { set_fault(fault, true); });
  };
  if (f.period_s <= 0) {
    begin(f.window.from_s);
    if (std::isfinite(f.window.until_s))
      at(f.window.until_s, [this, fault]() { set_fault(fault, false); });
    return;
  }
  // Flapping: on for duty x period at the start of each period of the window;
  // each edge schedules the next one.
  struct Flap {
    static void edge(PerturbationDriver* self, int fault, double period_start, bool on) {
      const auto& f = self->p_.links[static_cast<std::size_t>(fault)];
      const double now = sg::Engine::get_clock();
      if (now >= f.window.until_s) {
        self->set_fault(fault, false);
        return;
      }
      self->set_fault(fault, on);
      const double next = on ? period_start + f.duty * f.period_s : period_start + f.period_s;
      const double next_start = on ? period_start : period_start + f.period_s;
      self->at(std::min(next, f.window.until_s),
               [self, fault, next_start, on]() { edge(self, fault, next_start, !on); });
    }
  };
  if (f.window.from_s <= 0)
    Flap::edge(this, fault, 0.0, true);
  else
    at(f.window.from_s, [this, fault, start = f.window.from_s]() { Flap::edge(this, fault, start, true); });
}

void PerturbationDriver::set_fault(int fault, bool active) {
  const auto& f = p_.links[static_cast<std::size_t>(fault)];
  for (const auto& name : f.links) {
    auto& state = links_[name];
    auto it = std::find(state.active.begin(), state.active.end(), fault);
    if (active == (it != state.active.end()))
      continue;
    if (active)
      state.active.push_back(fault);
    else
      state.active.erase(it);
    if (active && f.down && f.uplinks > 1)
      ++stats_.rerouted_downs;
    ++stats_.link_changes;
    apply_link(state);
  }
}

void PerturbationDriver::apply_link(LinkState& state) {
  double factor = 1;
  double latency_s = 0;
  bool down = false;
  for (int fault : state.active) {
    const auto& f = p_.links[static_cast<std::size_t>(fault)];
    factor *= f.bandwidth_factor;
    latency_s += f.added_latency_s;
    if (f.down && f.uplinks > 1)
      factor *= static_cast<double>(f.uplinks - 1) / f.uplinks;
    else if (f.down)
      down = true;
  }
  zone_.note_link_latency_change();
  for (sg::Link* l : {state.link->get_link_up(), state.link->get_link_down()}) {
    l->set_bandwidth(state.nominal_Bps * factor);
    l->set_latency(latency_s);
  }
  zone_.forget_tuner_choices();  // its estimates read the links
  if (down && !state.down) {
    state.down = true;
    state.link->get_link_up()->turn_off();
    state.link->get_link_down()->turn_off();
  } else if (!down && state.down) {
    state.down = false;
    state.link->get_link_up()->turn_on();
    state.link->get_link_down()->turn_on();
    // Flows that waited for a link: retry them all (each checks its route
    // again and waits once more if another link is still down).
    auto waiting = std::move(waiting_);
    waiting_.clear();
    for (auto& retry : waiting)
      retry();
  }
}

bool PerturbationDriver::route_up(int src, int dst) const {
  bool up = true;
  bool any_down = false;
  for (const auto& [name, state] : links_)
    any_down = any_down || state.down;
  if (!any_down)
    return true;
  zone_.for_each_link(src, dst, [&up](sg::Link* link) { up = up && link->is_on(); });
  return up;
}

void PerturbationDriver::when_link_up(std::function<void()> retry) {
  waiting_.push_back(std::move(retry));
}

void PerturbationDriver::note_stall(double waited_s) {
  ++stats_.stalled_flows;
  stats_.longest_stall_s = std::max(stats_.longest_stall_s, waited_s);
}

void PerturbationDriver::stop() {
  if (stopped_)
    return;
  stopped_ = true;
  const double now = sg::Engine::get_clock();
  for (std::size_t g = 0; g < straggle_speed_.size(); ++g)
    if (straggle_speed_[g] != 1.0)
      stats_.straggler_gpu_seconds += now - straggle_from_s_[g];
  for (auto& [id, timer] : timers_)
    timer->remove();
  timers_.clear();
}

}  // namespace trainsim::sim
