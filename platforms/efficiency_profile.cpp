#include "platforms/efficiency_profile.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>

#include "platforms/embedded_files.hpp"
#include "platforms/units.hpp"
#include "platforms/yaml_document.hpp"
#include "platforms/yaml_reader.hpp"

namespace trainsim::platforms {

Curve::Curve(std::vector<std::pair<double, double>> points) : points_(std::move(points)) {}

double Curve::at(double x) const {
  if (points_.empty())
    return 1.0;
  if (x <= points_.front().first)
    return points_.front().second;
  if (x >= points_.back().first)
    return points_.back().second;
  // Linear in log2(x) between the two neighbouring points.
  const auto hi = std::upper_bound(points_.begin(), points_.end(), x,
                                   [](double v, const std::pair<double, double>& p) { return v < p.first; });
  const auto lo = hi - 1;
  const double t = std::log2(x / lo->first) / std::log2(hi->first / lo->first);
  return lo->second + t * (hi->second - lo->second);
}

namespace {

// A required value: reported as missing when absent.
template <class T>
T required(MapReader& m, std::string_view key, std::optional<T> value, T fallback = T{}) {
  if (!value && !m.has(key)) {
    m.accept(key);
    m.error(key, "missing");
  }
  return value.value_or(fallback);
}

// The value at `key` as a raw node (marked as known), or nullopt with a
// "missing" error.
std::optional<YAML::Node> required_node(MapReader& m, std::string_view key) {
  m.accept(key);
  for (const auto& kv : m.node())
    if (kv.first.Scalar() == key)
      return kv.second;
  m.error(key, "missing");
  return std::nullopt;
}

// A fraction of a peak, in (0, 1].
double fraction(MapReader& m, std::string_view key) {
  return required(m, key, m.number(key, 1e-9, 1.0));
}

// A list of [x, factor] pairs sorted by x > 0, factors in (0, 1]; x in
// plain numbers or, for `x_is_bytes`, sizes through the unit parser.
Curve read_curve(MapReader& m, std::string_view key, bool x_is_bytes) {
  const auto list = required_node(m, key);
  if (!list)
    return {};
  if (!list->IsSequence() || list->size() == 0) {
    m.error(key, "expected a non-empty list of [x, factor] pairs");
    return {};
  }
  const auto number = [](const YAML::Node& v) -> std::optional<double> {
    if (!v.IsScalar())
      return std::nullopt;
    double x = 0;
    const std::string& text = v.Scalar();
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), x);
    if (ec != std::errc() || ptr != text.data() + text.size() || !std::isfinite(x))
      return std::nullopt;
    return x;
  };
  std::vector<std::pair<double, double>> points;
  for (const auto& item : *list) {
    if (!item.IsSequence() || item.size() != 2) {
      m.error(key, "expected [x, factor] pairs");
      return {};
    }
    std::optional<double> x;
    if (x_is_bytes) {
      try {
        x = item[0].IsScalar() ? std::optional(units::parse_bytes(item[0].Scalar())) : std::nullopt;
      } catch (const units::UnitError& e) {
        m.error(key, e.what());
        return {};
      }
    } else {
      x = number(item[0]);
    }
    const auto f = number(item[1]);
    if (!x || !f) {
      m.error(key, fmt::format("expected [x, factor] pairs of numbers{}",
                               x_is_bytes ? " (x a size such as 1MiB)" : ""));
      return {};
    }
    if (!(*x > 0)) {
      m.error(key, fmt::format("x = {} must be > 0", *x));
      return {};
    }
    if (!(*f > 0 && *f <= 1)) {
      m.error(key, fmt::format("factor {} is out of range (expected (0, 1])", *f));
      return {};
    }
    if (!points.empty() && *x <= points.back().first) {
      m.error(key, fmt::format("x = {} does not increase (expected points sorted by x)", *x));
      return {};
    }
    points.emplace_back(*x, *f);
  }
  return Curve(std::move(points));
}

MatmulEfficiency read_matmul(MapReader m) {
  MatmulEfficiency e;
  e.peak_fraction = fraction(m, "peak_fraction");
  e.output_elements = read_curve(m, "output_elements", false);
  e.reduction_depth = read_curve(m, "reduction_depth", false);
  m.finish();
  return e;
}

AttentionKernelEfficiency read_attention(MapReader m) {
  AttentionKernelEfficiency e;
  e.peak_fraction = fraction(m, "peak_fraction");
  e.seq_len = read_curve(m, "seq_len", false);
  e.head_dim = read_curve(m, "head_dim", false);
  m.finish();
  return e;
}

bool iequals(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
         });
}

}  // namespace

namespace {

EfficiencyProfile read_profile(MapReader& top) {
  EfficiencyProfile p;
  p.name = required(top, "name", top.text("name"));
  if (const auto gpus = required_node(top, "gpus")) {
    if (!gpus->IsSequence())
      top.error("gpus", "expected a list of GPU catalogue names (may be empty)");
    else
      for (const auto& g : *gpus) {
        if (g.IsScalar())
          p.gpus.push_back(g.Scalar());
        else
          top.error("gpus", "expected a list of GPU catalogue names (may be empty)");
      }
  }
  p.source = required(top, "source", top.text("source"));
  if (auto m = top.map("matmul"))
    p.matmul = read_matmul(*m);
  else if (!top.has("matmul"))
    top.error("matmul", "missing");
  if (auto m = top.map("batched_matmul"))
    p.batched_matmul = read_matmul(*m);
  else if (!top.has("batched_matmul"))
    top.error("batched_matmul", "missing");
  if (auto m = top.map("matmul_fp8"))  // optional: GPUs without FP8 tensor cores have none
    p.matmul_fp8 = read_matmul(*m);
  if (auto m = top.map("matmul_mxfp8"))  // optional: Blackwell's block-scaled GEMMs, fitted apart
    p.matmul_mxfp8 = read_matmul(*m);
  if (auto attention = top.map("flash_attention")) {
    if (auto f = attention->map("forward"))
      p.flash_forward = read_attention(*f);
    if (auto b = attention->map("backward"))
      p.flash_backward = read_attention(*b);
    attention->finish();
  } else if (!top.has("flash_attention")) {
    top.error("flash_attention", "missing");
  }
  if (auto memory = top.map("memory")) {
    p.memory.peak_fraction = fraction(*memory, "peak_fraction");
    p.memory.bytes = read_curve(*memory, "bytes", true);
    memory->finish();
  } else if (!top.has("memory")) {
    top.error("memory", "missing");
  }
  p.host_overhead_per_kernel_s =
      required(top, "host_overhead_per_kernel", top.duration_s("host_overhead_per_kernel"));
  top.finish();
  return p;
}

}  // namespace

EfficiencyProfile parse_efficiency_profile(std::string_view yaml_text, const std::string& source_name) {
  YAML::Node root;
  try {
    root = load_yaml_document(std::string(yaml_text), source_name);
  } catch (const InputError& e) {
    throw EfficiencyDataError(e.what());
  }
  if (!root.IsMap())
    throw EfficiencyDataError(fmt::format("{}: expected a map of efficiency curves", source_name));
  // The scenario's strict reader (platforms/yaml_reader.hpp): every error
  // with its line, unknown keys refused.
  const InputSource source(source_name);
  ErrorList errors;
  MapReader top(root, "", source, errors);
  EfficiencyProfile profile = read_profile(top);
  if (!errors.empty()) {
    std::string text;
    for (const auto& problem : errors.problems())
      text += (text.empty() ? "" : "\n") + problem;
    throw EfficiencyDataError(text);
  }
  return profile;
}

const std::vector<EfficiencyProfile>& builtin_efficiency_profiles() {
  static const std::vector<EfficiencyProfile> profiles = [] {
    std::vector<EfficiencyProfile> out;
    for (const auto& file : embedded_efficiency_files())
      out.push_back(parse_efficiency_profile(file.text, std::string(file.path)));
    return out;
  }();
  return profiles;
}

const EfficiencyProfile& efficiency_profile_for(std::string_view gpu_name) {
  const EfficiencyProfile* generic = nullptr;
  for (const auto& profile : builtin_efficiency_profiles()) {
    for (const auto& gpu : profile.gpus)
      if (iequals(gpu, gpu_name))
        return profile;
    if (profile.name == "generic")
      generic = &profile;
  }
  if (generic == nullptr)
    throw std::logic_error("no generic efficiency profile built in (platforms/efficiency/generic.yaml)");
  return *generic;
}

const EfficiencyProfile& efficiency_profile_of(const GpuSpec& gpu) {
  return gpu.efficiency_profile ? *gpu.efficiency_profile : efficiency_profile_for(gpu.name);
}

}  // namespace trainsim::platforms
