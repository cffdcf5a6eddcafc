#include "platforms/efficiency_profile.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <set>

#include "platforms/embedded_files.hpp"
#include "platforms/units.hpp"

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

// Strict reading of one YAML map: every key asked for is known; finish()
// rejects the others. Errors carry "source:line:column: key: ...".
class StrictMap {
 public:
  StrictMap(YAML::Node node, std::string path, const std::string& source)
      : node_(std::move(node)), path_(std::move(path)), source_(source) {}

  [[noreturn]] void fail(const YAML::Node& at, std::string_view key, const std::string& message) const {
    const auto mark = at.Mark();
    const std::string where =
        mark.is_null() ? source_ : fmt::format("{}:{}:{}", source_, mark.line + 1, mark.column + 1);
    throw EfficiencyDataError(fmt::format("{}: {}: {}", where, key_path(key), message));
  }
  std::string key_path(std::string_view key) const {
    return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
  }

  YAML::Node required(std::string_view key) {
    known_.insert(std::string(key));
    YAML::Node value = node_[std::string(key)];
    if (!value)
      fail(node_, key, "missing");
    return value;
  }
  YAML::Node optional(std::string_view key) {
    known_.insert(std::string(key));
    return node_[std::string(key)];
  }

  double fraction(std::string_view key) {
    const YAML::Node v = required(key);
    const double x = number(v, key);
    if (!(x > 0 && x <= 1))
      fail(v, key, fmt::format("{} is out of range (expected a fraction in (0, 1])", x));
    return x;
  }

  double number(const YAML::Node& v, std::string_view key) const {
    if (!v.IsScalar())
      fail(v, key, "expected a number");
    try {
      std::size_t used = 0;
      const double x = std::stod(v.Scalar(), &used);
      if (used != v.Scalar().size() || !std::isfinite(x))
        throw std::invalid_argument("junk");
      return x;
    } catch (const std::exception&) {
      fail(v, key, fmt::format("'{}' is not a number", v.Scalar()));
    }
  }

  // A list of [x, factor] pairs; x parsed by `parse_x` (plain numbers, or a
  // unit parser).
  Curve curve(std::string_view key, const std::function<double(const YAML::Node&)>& parse_x) {
    const YAML::Node list = required(key);
    if (!list.IsSequence() || list.size() == 0)
      fail(list, key, "expected a non-empty list of [x, factor] pairs");
    std::vector<std::pair<double, double>> points;
    for (const auto& item : list) {
      if (!item.IsSequence() || item.size() != 2)
        fail(item, key, "expected an [x, factor] pair");
      const double x = parse_x(item[0]);
      const double f = number(item[1], key);
      if (!(x > 0))
        fail(item, key, fmt::format("x = {} must be > 0", x));
      if (!(f > 0 && f <= 1))
        fail(item, key, fmt::format("factor {} is out of range (expected (0, 1])", f));
      if (!points.empty() && x <= points.back().first)
        fail(item, key, fmt::format("x = {} does not increase (expected points sorted by x)", x));
      points.emplace_back(x, f);
    }
    return Curve(std::move(points));
  }

  Curve plain_curve(std::string_view key) {
    return curve(key, [&](const YAML::Node& v) { return number(v, key); });
  }
  Curve bytes_curve(std::string_view key) {
    return curve(key, [&](const YAML::Node& v) {
      if (!v.IsScalar())
        fail(v, key, "expected a size such as 1MiB");
      try {
        return units::parse_bytes(v.Scalar());
      } catch (const units::UnitError& e) {
        fail(v, key, e.what());
      }
    });
  }

  StrictMap map(std::string_view key) {
    const YAML::Node v = required(key);
    if (!v.IsMap())
      fail(v, key, "expected a map");
    return StrictMap(v, key_path(key), source_);
  }

  void finish() const {
    for (const auto& kv : node_) {
      const auto key = kv.first.as<std::string>();
      if (!known_.count(key))
        fail(kv.first, key, "unknown key");
    }
  }

  const YAML::Node& node() const { return node_; }

 private:
  YAML::Node node_;
  std::string path_;
  const std::string& source_;
  std::set<std::string> known_;
};

MatmulEfficiency read_matmul(StrictMap m) {
  MatmulEfficiency e;
  e.peak_fraction = m.fraction("peak_fraction");
  e.output_elements = m.plain_curve("output_elements");
  e.reduction_depth = m.plain_curve("reduction_depth");
  m.finish();
  return e;
}

AttentionKernelEfficiency read_attention(StrictMap m) {
  AttentionKernelEfficiency e;
  e.peak_fraction = m.fraction("peak_fraction");
  e.seq_len = m.plain_curve("seq_len");
  e.head_dim = m.plain_curve("head_dim");
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
EfficiencyProfile read_profile(const YAML::Node& root, const std::string& source_name);
}  // namespace

EfficiencyProfile parse_efficiency_profile(std::string_view yaml_text, const std::string& source_name) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::Exception& e) {
    throw EfficiencyDataError(
        fmt::format("{}:{}:{}: not valid YAML: {}", source_name, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap())
    throw EfficiencyDataError(fmt::format("{}: expected a map of efficiency curves", source_name));
  try {
    return read_profile(root, source_name);
  } catch (const YAML::Exception& e) {  // a value of the wrong shape (a list where text belongs, ...)
    throw EfficiencyDataError(
        fmt::format("{}:{}:{}: {}", source_name, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

namespace {
EfficiencyProfile read_profile(const YAML::Node& root, const std::string& source_name) {
  StrictMap top(root, "", source_name);
  EfficiencyProfile p;
  p.name = top.required("name").as<std::string>();
  const YAML::Node gpus = top.required("gpus");
  if (!gpus.IsSequence())
    top.fail(gpus, "gpus", "expected a list of GPU catalogue names (may be empty)");
  for (const auto& g : gpus)
    p.gpus.push_back(g.as<std::string>());
  p.source = top.required("source").as<std::string>();
  p.matmul = read_matmul(top.map("matmul"));
  p.batched_matmul = read_matmul(top.map("batched_matmul"));
  {
    StrictMap attention = top.map("flash_attention");
    p.flash_forward = read_attention(attention.map("forward"));
    p.flash_backward = read_attention(attention.map("backward"));
    attention.finish();
  }
  {
    StrictMap memory = top.map("memory");
    p.memory.peak_fraction = memory.fraction("peak_fraction");
    p.memory.bytes = memory.bytes_curve("bytes");
    memory.finish();
  }
  {
    const YAML::Node v = top.required("host_overhead_per_kernel");
    try {
      p.host_overhead_per_kernel_s = units::parse_duration_s(v.Scalar());
    } catch (const units::UnitError& e) {
      top.fail(v, "host_overhead_per_kernel", e.what());
    }
  }
  top.finish();
  return p;
}
}  // namespace

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

}  // namespace trainsim::platforms
