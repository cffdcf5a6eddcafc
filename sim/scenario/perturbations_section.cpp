// The `perturbations` section (README "Perturbations", docs/perturbations.md):
//
//   perturbations:
//     slow_gpus:   [{gpus|nodes|stages: [...], speed: 0.8, from: 1.5s, until: 3s}]
//     throttling:  [{gpus|nodes|stages: [...], profile: [{at: 0s, speed: 1}, {at: 2s, speed: 0.7}]}]
//     stragglers:  {probability: 0.01, speed: {distribution: ...}, duration: {distribution: ...},
//                   gpus|nodes|stages: [...]}
//     links:       [{links: [node1-nic0], bandwidth_factor: 0.5, added_latency: 5us, down: false,
//                    uplinks: 4, from: 0s, until: 1s, flap: {period: 100ms, duty: 0.5}}]
//     failures:    {gpu_mtbf: 50000h, node_mtbf: .., at: [2h], restart_delay: 10min,
//                   checkpoint_interval: 30min, storage_bandwidth: 100GBps, run_time: 24h}
//
// Selectors are resolved here (ranks, nodes, pipeline stages, link names), so
// every mistake is reported at its file:line before SimGrid starts.
#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "platforms/fabric_layout.hpp"
#include "platforms/units.hpp"
#include "sim/scenario/sections.hpp"

namespace trainsim::scenario {
namespace {

using platforms::ClusterSpec;

// The names ClusterZone gives its links (sim/platform/cluster_zone.cpp), derived from
// the spec alone so that a wrong name is a loader error.
std::set<std::string> link_names(const ClusterSpec& spec) {
  using platforms::NodeShape;
  std::set<std::string> names;
  const int nodes = spec.node_count();
  for (int node = 0; node < nodes; ++node) {
    const auto& group = spec.groups[static_cast<std::size_t>(spec.group_of_node(node))];
    const int first = spec.first_gpu_of_node(node);
    const double nic_Bps = group.nic.bandwidth_Bps * spec.fabric.efficiency;
    const bool pcie_on_nic_route = group.pcie.effective_Bps() > 0 && (group.shape != NodeShape::nvswitch ||
                                                                      group.pcie.effective_Bps() < nic_Bps);
    for (int local = 0; local < group.gpus_per_node; ++local) {
      if (group.shape == NodeShape::nvswitch)
        names.insert(fmt::format("gpu{}-nvlink", first + local));
      if (pcie_on_nic_route || (group.shape != NodeShape::nvswitch && group.pcie.effective_Bps() > 0))
        names.insert(fmt::format("gpu{}-pcie", first + local));
    }
    for (int k = 0; k < group.nics_per_node; ++k)
      names.insert(fmt::format("node{}-nic{}", node, k));
    if (group.shape == NodeShape::cube_mesh)
      for (int a = 0; a < group.gpus_per_node; ++a)
        for (int b = a + 1; b < group.gpus_per_node; ++b)
          if (platforms::cube_mesh_lanes(a, b) > 0)
            names.insert(fmt::format("node{}-nvlink{}-{}", node, a, b));
    if (group.shape == NodeShape::full_mesh)
      for (int a = 0; a < group.gpus_per_node; ++a)
        for (int b = a + 1; b < group.gpus_per_node; ++b)
          names.insert(fmt::format("node{}-mesh{}-{}", node, a, b));
  }
  // The fabric's links: the same layout ClusterZone creates them from. The layout is
  // held by name: a range-for over a temporary's member would dangle (C++20).
  const auto fabric = platforms::make_fabric_layout(spec);
  for (const auto& link : fabric->links())
    names.insert(link.name);
  return names;
}

class PerturbationReader {
 public:
  explicit PerturbationReader(Scenario& scenario) : scenario_(scenario) {}

  // GPUs chosen by exactly one of `gpus` (ranks), `nodes` or `stages`;
  // `all_by_default` gives every GPU when none is given.
  std::vector<int> gpus(platforms::MapReader& m, bool all_by_default) {
    const int gpu_count = scenario_.cluster.gpu_count();
    const int nodes = scenario_.cluster.node_count();
    const int pp = std::max(1, scenario_.plan.pp);
    int given = 0;
    for (const char* key : {"gpus", "nodes", "stages"})
      given += m.has(key) ? 1 : 0;
    if (given > 1)
      m.error("", "give the GPUs by one of gpus (ranks), nodes or stages, not several");
    std::vector<int> out;
    // A list, or one number (handy in sweeps: perturbations.slow_gpus.0.stages: [0, 1, 2]).
    const auto numbers = [&m](std::string_view key, long long max) -> std::optional<std::vector<long long>> {
      for (const auto& kv : m.node())
        if (kv.first.Scalar() == key && kv.second.IsScalar()) {
          if (auto v = m.integer(key, 0, max))
            return std::vector<long long>{*v};
          return std::nullopt;
        }
      return m.integer_list(key, 0, max);
    };
    if (auto ranks = numbers("gpus", gpu_count - 1))
      for (long long r : *ranks)
        out.push_back(static_cast<int>(r));
    if (auto list = numbers("nodes", nodes - 1))
      for (long long n : *list) {
        const int node = static_cast<int>(n);
        const auto& group =
            scenario_.cluster.groups[static_cast<std::size_t>(scenario_.cluster.group_of_node(node))];
        for (int local = 0; local < group.gpus_per_node; ++local)
          out.push_back(scenario_.cluster.first_gpu_of_node(node) + local);
      }
    if (auto list = numbers("stages", pp - 1)) {
      // Megatron's rank order puts the pipeline stage outermost
      // (ParallelPlan::pp_rank_of): stage s holds ranks [s G/pp, (s+1) G/pp).
      if (gpu_count % pp != 0)
        m.error("stages", fmt::format("plan.pp = {} does not divide the {} GPUs, so stages have no GPUs", pp,
                                      gpu_count));
      else
        for (long long s : *list)
          for (int g = static_cast<int>(s) * (gpu_count / pp);
               g < (static_cast<int>(s) + 1) * (gpu_count / pp); ++g)
            out.push_back(g);
    }
    // `dp_rank` narrows stages to one data-parallel replica: "the slow GPU of
    // stage 3 in replica 0" (Megatron's rank order, ParallelPlan::dp_rank_of).
    if (m.has("dp_rank")) {
      const auto& plan = scenario_.plan;
      const int model_parallel = std::max(1, plan.tp * plan.pp * plan.cp);
      const int dp = plan.dp > 0 ? plan.dp : std::max(1, gpu_count / model_parallel);
      if (!m.has("stages"))
        m.error("dp_rank", "only narrows `stages` (expected stages: [...] with it)");
      if (auto r = m.integer("dp_rank", 0, dp - 1)) {
        std::vector<int> kept;
        for (int g : out)
          if ((g / std::max(1, plan.tp * plan.cp)) % dp == *r)
            kept.push_back(g);
        out = std::move(kept);
      }
    }
    if (given == 0 && all_by_default)
      for (int g = 0; g < gpu_count; ++g)
        out.push_back(g);
    else if (given == 0)
      m.error("",
              "missing the GPUs it applies to (expected gpus: [ranks], nodes: [node indices] or "
              "stages: [pipeline stages])");
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
  }

  double speed(platforms::MapReader& m, std::string_view key, bool required) {
    if (!m.has(key)) {
      if (required)
        m.error(key, "missing (expected the speed as a fraction of nominal, a number in (0, 1], e.g. 0.8)");
      m.accept(key);
      return 1;
    }
    auto v = m.number(key, 0, 1);
    if (v && *v <= 0) {
      m.error(key, "0 is not a speed (expected a number in (0, 1]; a GPU that stops is a failure)");
      return 1;
    }
    return v.value_or(1);
  }

  TimeWindow window(platforms::MapReader& m) {
    TimeWindow w;
    w.from_s = m.duration_s("from").value_or(0);
    if (auto until = m.duration_s("until"))
      w.until_s = *until;
    if (w.until_s <= w.from_s)
      m.error("until",
              fmt::format("the window ends before it starts (from {} s, until {} s; expected until > from)",
                          w.from_s, w.until_s));
    return w;
  }

  Distribution distribution(platforms::MapReader& parent, std::string_view key, bool is_duration) {
    Distribution d;
    auto m = parent.map(key);
    if (!m)
      return d;
    const auto value = [&](std::string_view k) -> std::optional<double> {
      return is_duration ? m->duration_s(k) : m->number(k, 0, 1);
    };
    const std::string what = is_duration ? "a duration such as 30s" : "a speed in (0, 1]";
    auto kind = m->choice<Distribution::Kind>("distribution", {{"fixed", Distribution::Kind::fixed},
                                                               {"uniform", Distribution::Kind::uniform},
                                                               {"lognormal", Distribution::Kind::lognormal}});
    if (!m->has("distribution"))
      m->error("distribution", "missing (expected fixed, uniform or lognormal)");
    if (!kind) {
      m->accept("value"), m->accept("min"), m->accept("max"), m->accept("median"), m->accept("sigma");
      m->finish();
      return d;
    }
    d.kind = *kind;
    const auto need = [&](std::string_view k) {
      auto v = value(k);
      if (!v && !m->has(k))
        m->error(
            k, fmt::format("missing for a {} distribution (expected {})", kind ? to_word(*kind) : "", what));
      if (v && *v <= 0)
        m->error(k, fmt::format("must be positive (expected {})", what));
      return v.value_or(1);
    };
    switch (d.kind) {
      case Distribution::Kind::fixed:
        d.a = need("value");
        break;
      case Distribution::Kind::uniform:
        d.a = need("min");
        d.b = need("max");
        if (d.b < d.a)
          m->error("max", fmt::format("max {} is below min {} (expected max >= min)", d.b, d.a));
        break;
      case Distribution::Kind::lognormal:
        d.a = need("median");
        d.b = m->number("sigma", 0, 10).value_or(0);
        if (!m->has("sigma"))
          m->error("sigma",
                   "missing for a lognormal distribution (expected the standard deviation of the "
                   "underlying normal, a number in [0, 10], e.g. 0.5)");
        break;
    }
    if (!is_duration) {
      d.min = 1e-3;
      d.max = 1;
    }
    if (is_duration)
      d.min = 0;
    m->finish();
    return d;
  }

  static const char* to_word(Distribution::Kind k) {
    switch (k) {
      case Distribution::Kind::fixed:
        return "fixed";
      case Distribution::Kind::uniform:
        return "uniform";
      case Distribution::Kind::lognormal:
        return "lognormal";
    }
    return "";
  }

  void slow_gpus(platforms::MapReader& section) {
    auto items = section.map_list("slow_gpus");
    if (!items)
      return;
    for (auto& m : *items) {
      SlowGpus s;
      s.gpus = gpus(m, false);
      s.speed = speed(m, "speed", true);
      s.window = window(m);
      m.finish();
      scenario_.perturbations.slow_gpus.push_back(std::move(s));
    }
  }

  void throttling(platforms::MapReader& section) {
    auto items = section.map_list("throttling");
    if (!items)
      return;
    for (auto& m : *items) {
      Throttling t;
      t.gpus = gpus(m, false);
      if (!m.has("profile"))
        m.error("profile", "missing (expected a list of {at: TIME, speed: FRACTION} points)");
      if (auto points = m.map_list("profile")) {
        double last = -1;
        for (auto& p : *points) {
          ThrottlePoint point;
          if (!p.has("at"))
            p.error("at", "missing (expected the time the speed applies from, e.g. 2s)");
          point.at_s = p.duration_s("at").value_or(0);
          point.speed = speed(p, "speed", true);
          if (point.at_s <= last)
            p.error("at",
                    fmt::format("{} s is not after the previous point ({} s); expected increasing times",
                                point.at_s, last));
          last = point.at_s;
          p.finish();
          t.points.push_back(point);
        }
      }
      m.finish();
      scenario_.perturbations.throttling.push_back(std::move(t));
    }
  }

  void stragglers(platforms::MapReader& section) {
    if (!section.has("stragglers"))
      return;
    auto m = section.map("stragglers");
    if (!m)
      return;
    auto& s = scenario_.perturbations.stragglers;
    s.enabled = true;
    if (!m->has("probability"))
      m->error("probability", "missing (expected the chance per GPU per iteration, a number in [0, 1])");
    s.probability = m->number("probability", 0, 1).value_or(0);
    for (const char* key : {"speed", "duration"})
      if (!m->has(key))
        m->error(key, "missing (expected a map {distribution: fixed|uniform|lognormal, ...})");
    if (m->has("speed"))
      s.speed = distribution(*m, "speed", false);
    if (m->has("duration"))
      s.duration_s = distribution(*m, "duration", true);
    s.gpus = gpus(*m, true);
    m->finish();
  }

  void links(platforms::MapReader& section) {
    auto items = section.map_list("links");
    if (!items)
      return;
    const auto names = link_names(scenario_.cluster);
    for (auto& m : *items) {
      LinkFault f;
      if (!m.has("links"))
        m.error("links", "missing (expected a list of link names such as [node0-nic0, leaf1-uplink])");
      m.accept("links");
      for (const auto& kv : m.node())
        if (kv.first.Scalar() == "links") {
          if (!kv.second.IsSequence() || kv.second.size() == 0) {
            m.error("links", fmt::format("expected a list of link names, found {}",
                                         platforms::describe_yaml_value(kv.second)));
            continue;
          }
          for (const auto& item : kv.second) {
            const std::string name = item.IsScalar() ? item.Scalar() : "";
            if (names.count(name) == 0) {
              std::string examples;
              for (const char* example :
                   {"node0-nic0", "gpu0-nvlink", "leaf0-uplink", "pod0-uplink", "gpu0-pcie"})
                if (names.count(example) != 0)
                  examples += (examples.empty() ? "" : ", ") + std::string(example);
              m.errors().add(fmt::format(
                  "{}: {}: {} is not a link of this cluster (expected a name the cluster's network gives, "
                  "such as {}; see docs/perturbations.md)",
                  m.source().where(m.key_path("links"), item), m.key_path("links"),
                  platforms::describe_yaml_value(item), examples));
            } else {
              f.links.push_back(name);
            }
          }
        }
      if (m.has("bandwidth_factor")) {
        f.bandwidth_factor = m.number("bandwidth_factor", 0, 1).value_or(1);
        if (f.bandwidth_factor <= 0)
          m.error("bandwidth_factor", "0 would stop the link (expected a number in (0, 1]; use down: true)");
      }
      f.added_latency_s = m.latency_s("added_latency").value_or(0);
      f.down = m.boolean("down").value_or(false);
      f.uplinks = static_cast<int>(m.integer("uplinks", 1, 1024).value_or(1));
      if (f.uplinks > 1)
        for (const auto& name : f.links)
          if (name.rfind("leaf", 0) != 0 && name.rfind("pod", 0) != 0)
            m.error("uplinks",
                    fmt::format("{} is not a fat-tree uplink (only leafN-uplink and podN-uplink stand "
                                "for several physical links)",
                                name));
      // bandwidth_factor: 1 alone is allowed: the healthy point of a sweep.
      if (!f.down && !m.has("bandwidth_factor") && !m.has("added_latency"))
        m.error("", "changes nothing (expected bandwidth_factor, added_latency or down: true)");
      if (f.down && (m.has("bandwidth_factor") || m.has("added_latency")))
        m.error("down", "a link that is down has no bandwidth or latency (give down alone)");
      f.window = window(m);
      if (m.has("flap")) {
        if (auto flap = m.map("flap")) {
          if (!flap->has("period"))
            flap->error("period", "missing (expected the flapping period, e.g. 200ms)");
          f.period_s = flap->duration_s("period").value_or(0);
          if (flap->has("period") && f.period_s <= 0)
            flap->error("period", "must be positive (e.g. 200ms)");
          if (!flap->has("duty"))
            flap->error("duty", "missing (expected the fraction of each period the fault lasts, in (0, 1))");
          f.duty = flap->number("duty", 0, 1).value_or(0.5);
          if (flap->has("duty") && (f.duty <= 0 || f.duty >= 1))
            flap->error("duty",
                        fmt::format("{} is not strictly between 0 and 1 (expected e.g. 0.5)", f.duty));
          flap->finish();
        }
      }
      m.finish();
      scenario_.perturbations.links.push_back(std::move(f));
    }
  }

  void failures(platforms::MapReader& section) {
    if (!section.has("failures"))
      return;
    auto m = section.map("failures");
    if (!m)
      return;
    auto& f = scenario_.perturbations.failures;
    f.enabled = true;
    const std::size_t errors_before = m->error_count();
    const auto positive = [&](std::string_view key, double v) {
      if (m->has(key) && v <= 0 && m->error_count() == errors_before)
        m->error(key, "must be positive");
    };
    f.gpu_mtbf_s = m->duration_s("gpu_mtbf").value_or(0);
    positive("gpu_mtbf", f.gpu_mtbf_s);
    f.node_mtbf_s = m->duration_s("node_mtbf").value_or(0);
    positive("node_mtbf", f.node_mtbf_s);
    m->accept("at");
    for (const auto& kv : m->node())
      if (kv.first.Scalar() == "at") {
        if (!kv.second.IsSequence()) {
          m->error("at", fmt::format("expected a list of times such as [2h, 7h], found {}",
                                     platforms::describe_yaml_value(kv.second)));
          continue;
        }
        for (const auto& item : kv.second) {
          try {
            f.at_s.push_back(units::parse_duration_s(item.IsScalar() ? item.Scalar() : ""));
          } catch (const units::UnitError& e) {
            m->errors().add(fmt::format("{}: {}: {}", m->source().where(m->key_path("at"), item),
                                        m->key_path("at"), e.what()));
          }
        }
        std::sort(f.at_s.begin(), f.at_s.end());
      }
    if (!m->has("gpu_mtbf") && !m->has("node_mtbf") && !m->has("at"))
      m->error("", "no failures (expected gpu_mtbf, node_mtbf or at)");
    if (!m->has("run_time"))
      m->error("run_time", "missing (expected the job's wall-clock length, e.g. 24h)");
    f.run_time_s = m->duration_s("run_time").value_or(0);
    positive("run_time", f.run_time_s);
    f.restart_delay_s = m->duration_s("restart_delay").value_or(0);
    f.checkpoint_interval_s = m->duration_s("checkpoint_interval").value_or(0);
    if (f.checkpoint_interval_s > 0 && !m->has("storage_bandwidth"))
      m->error("storage_bandwidth",
               "missing (checkpoints need the aggregate bandwidth to storage, e.g. 100GBps)");
    f.storage_bandwidth_Bps = m->bandwidth_Bps("storage_bandwidth").value_or(0);
    m->finish();
  }

 private:
  Scenario& scenario_;
};

}  // namespace

bool read_perturbations_section(platforms::MapReader& section, Scenario& scenario) {
  const std::size_t before = section.error_count();
  PerturbationReader reader(scenario);
  reader.slow_gpus(section);
  reader.throttling(section);
  reader.stragglers(section);
  reader.links(section);
  reader.failures(section);
  section.finish();
  return section.error_count() == before;
}

}  // namespace trainsim::scenario
