#include "sim/study/study_points.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <map>

#include "platforms/input_error.hpp"
#include "platforms/printable_text.hpp"
#include "platforms/yaml_reader.hpp"
#include "sim/scenario/document.hpp"
#include "sim/scenario/infeasible_plan.hpp"
#include "sim/scenario/relative_paths.hpp"

namespace trainsim::sim {
namespace {

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts)
    out += (out.empty() ? "" : sep) + p;
  return out;
}

std::string flow_text(const YAML::Node& node) {
  if (node.IsScalar())
    return node.Scalar();
  YAML::Emitter e;
  e << YAML::Flow << node;
  return e.c_str();
}

// FNV-1a, 64 bits: a stable fingerprint, not a security measure.
struct Fnv1a {
  std::uint64_t hash = 14695981039346656037ull;
  void add(const std::string& text) {
    for (unsigned char c : text) {
      hash ^= c;
      hash *= 1099511628211ull;
    }
    hash ^= 0xff;  // separator, so "ab"+"c" differs from "a"+"bc"
    hash *= 1099511628211ull;
  }
};

std::string override_key(const std::string& assignment) {
  return assignment.substr(0, assignment.find('='));
}

bool keys_overlap(const std::string& a, const std::string& b) {
  return a == b || b.rfind(a + ".", 0) == 0 || a.rfind(b + ".", 0) == 0;
}

}  // namespace

std::vector<std::vector<std::size_t>> expand_axes(const std::vector<Axis>& axes) {
  std::size_t total = 1;
  for (const auto& axis : axes) {
    if (axis.values.empty())
      return {};
    if (total > kMaxStudyPoints / axis.values.size())
      throw platforms::InputError(
          {fmt::format("the study has more than {} points; split it into smaller studies", kMaxStudyPoints)});
    total *= axis.values.size();
  }
  std::vector<std::vector<std::size_t>> points;
  points.reserve(total);
  std::vector<std::size_t> position(axes.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    points.push_back(position);
    // Increment the last axis first: the first axis varies slowest.
    for (std::size_t a = axes.size(); a-- > 0;) {
      if (++position[a] < axes[a].values.size())
        break;
      position[a] = 0;
    }
  }
  return points;
}

nlohmann::ordered_json yaml_to_json(const YAML::Node& node) {
  if (node.IsScalar())
    return analysis::parameter_value(node.Scalar());
  if (node.IsSequence()) {
    auto list = nlohmann::ordered_json::array();
    for (const auto& v : node)
      list.push_back(yaml_to_json(v));
    return list;
  }
  if (node.IsMap()) {
    auto map = nlohmann::ordered_json::object();
    for (const auto& kv : node)
      map[kv.first.Scalar()] = yaml_to_json(kv.second);
    return map;
  }
  return nullptr;
}

std::vector<StudyPoint> prepare_points(const StudyFile& study, const std::vector<std::string>& overrides,
                                       const scenario::LoadOptions& load) {
  // --set applies to every point; on a swept key it would silently undo the sweep.
  for (const auto& o : overrides)
    for (const auto& axis : study.axes)
      for (const auto& key : axis.keys)
        if (keys_overlap(override_key(o), key))
          throw platforms::InputError(
              {fmt::format("--set {}: '{}' is varied by the study ({}); change its values in "
                           "{} instead",
                           o, override_key(o), axis.column.empty() ? "sweep" : "variants", study.path)});

  const auto positions = expand_axes(study.axes);
  const std::size_t width = std::max<std::size_t>(4, fmt::format("{}", positions.size() - 1).size());
  std::vector<StudyPoint> points;
  points.reserve(positions.size());
  // Malformed input, with the first point it was found at and how many more.
  std::map<std::string, std::pair<std::string, std::size_t>> bad_input;
  std::vector<std::string> bad_order;

  for (std::size_t i = 0; i < positions.size(); ++i) {
    StudyPoint point;
    point.index = i;
    point.id = fmt::format("{:0{}}", i, width);
    point.parameters = nlohmann::ordered_json::object();
    YAML::Node root = base_document(study);
    std::vector<std::string> label;
    platforms::ErrorList errors;
    platforms::InputSource source(study.path);
    for (std::size_t a = 0; a < study.axes.size(); ++a) {
      const auto& axis = study.axes[a];
      const auto& value = axis.values[positions[i][a]];
      if (!axis.column.empty()) {
        point.parameters[axis.column] = value.label;
        label.push_back(fmt::format("{}={}", axis.column, value.label));
      }
      for (const auto& assignment : value.assignments) {
        if (axis.column.empty()) {
          point.parameters[assignment.key] = yaml_to_json(assignment.value);
          label.push_back(fmt::format("{}={}", assignment.key, flow_text(assignment.value)));
        }
        if (!set_dotted(root, assignment.key, assignment.value))
          errors.add(fmt::format("{}: {}: cannot set it: a value on the way is not a map",
                                 source.where(assignment.key, assignment.value), assignment.key));
      }
    }
    for (const auto& o : overrides)
      platforms::apply_override(root, o, source, errors);
    // The point runs from its own folder: a trace named relative to the
    // study file is named by its absolute path in scenario.yaml.
    scenario::anchor_relative_paths(root, std::filesystem::path(study.path).parent_path());
    // One line of text in a comment and on the terminal, whatever the values hold.
    point.label = platforms::printable_text(join(label, " "));
    try {
      errors.throw_if_any();
      scenario::load_scenario_document(root, source, load);
      YAML::Emitter emitter;
      emitter << root;
      // No path of the study's own in here: resume compares this text, and
      // the same study run from another directory must still find its
      // finished points. (The files a point reads, a trace, are named by
      // their absolute paths: the same from any directory.)
      point.scenario_yaml = fmt::format(
          "# Point {} of study {} ({}).\n"
          "# Simulate it alone with: trainsim run <this file>\n{}\n",
          point.id, study.name, point.label.empty() ? "base scenario" : point.label, emitter.c_str());
    } catch (const scenario::InfeasiblePlan& e) {
      point.dropped = fmt::format("{}: {}", to_string(e.reason()), join(e.problems(), "; "));
    } catch (const platforms::InputError& e) {
      for (const auto& problem : e.problems()) {
        auto [it, fresh] = bad_input.emplace(problem, std::make_pair(point.id, 0));
        if (fresh)
          bad_order.push_back(problem);
        ++it->second.second;
      }
    }
    points.push_back(std::move(point));
  }
  if (!bad_input.empty()) {
    std::vector<std::string> problems;
    for (const auto& problem : bad_order) {
      const auto& [first, count] = bad_input[problem];
      problems.push_back(count == positions.size()
                             ? problem
                             : fmt::format("{} (point {}{})", problem, first,
                                           count > 1 ? fmt::format(" and {} more", count - 1) : ""));
    }
    throw platforms::InputError(problems);
  }
  return points;
}

void narrow_study(StudyFile& study, const std::vector<std::string>& only) {
  platforms::ErrorList errors;
  for (const auto& option : only) {
    const auto eq = option.find('=');
    const std::string column = option.substr(0, eq);
    if (eq == std::string::npos || column.empty() || eq + 1 == option.size()) {
      errors.add(
          fmt::format("--only {}: expected COLUMN=VALUE[,VALUE...], for example --only "
                      "cluster.nodes=1,8 or --only variant=fsdp",
                      option));
      continue;
    }
    std::vector<std::string> wanted;
    for (std::size_t start = eq + 1; start <= option.size();) {
      const auto comma = std::min(option.find(',', start), option.size());
      wanted.push_back(option.substr(start, comma - start));
      start = comma + 1;
    }
    Axis* axis = nullptr;
    for (auto& a : study.axes)
      if (a.column == column ||
          (a.column.empty() && std::find(a.keys.begin(), a.keys.end(), column) != a.keys.end()))
        axis = &a;
    if (!axis) {
      errors.add(fmt::format("--only {}: '{}' is not varied by {}; expected one of its parameters: {}",
                             option, column, study.path, join(parameter_names(study), ", ")));
      continue;
    }
    // The text of each of the axis's values for this column.
    const auto text_of = [&](const AxisValue& v) {
      if (!axis->column.empty())
        return v.label;
      for (const auto& assignment : v.assignments)
        if (assignment.key == column)
          return flow_text(assignment.value);
      return std::string();
    };
    std::vector<std::string> available;
    for (const auto& v : axis->values)
      if (std::find(available.begin(), available.end(), text_of(v)) == available.end())
        available.push_back(text_of(v));
    bool ok = true;
    for (const auto& w : wanted)
      if (std::find(available.begin(), available.end(), w) == available.end()) {
        errors.add(fmt::format("--only {}: '{}' is not one of the values of {} in {}; expected one of: {}",
                               option, w, column, study.path, join(available, ", ")));
        ok = false;
      }
    if (!ok)
      continue;
    std::vector<AxisValue> kept;
    for (const auto& v : axis->values)
      if (std::find(wanted.begin(), wanted.end(), text_of(v)) != wanted.end())
        kept.push_back(v);
    axis->values = std::move(kept);
  }
  errors.throw_if_any();
}

std::string study_fingerprint(const std::vector<StudyPoint>& points) {
  Fnv1a h;
  for (const auto& p : points) {
    h.add(p.id);
    h.add(p.scenario_yaml);
    // The kind of reason only: its message names the study file's path, which
    // may differ between shards run from different directories.
    h.add(p.dropped ? p.dropped->substr(0, p.dropped->find(':')) : "");
  }
  return fmt::format("{:016x}", h.hash);
}

analysis::ShardInfo parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  analysis::ShardInfo shard;
  bool ok = slash != std::string::npos;
  if (ok) {
    auto [p1, e1] = std::from_chars(text.data(), text.data() + slash, shard.index);
    auto [p2, e2] = std::from_chars(text.data() + slash + 1, text.data() + text.size(), shard.count);
    ok = e1 == std::errc() && p1 == text.data() + slash && e2 == std::errc() &&
         p2 == text.data() + text.size();
  }
  if (!ok || shard.count < 1 || shard.index < 0 || shard.index >= shard.count)
    throw platforms::InputError(
        {fmt::format("--shard {}: expected I/N with 0 <= I < N, for example --shard 3/16 (shard 3 "
                     "of 16, as Slurm's $SLURM_ARRAY_TASK_ID/16 with --array=0-15)",
                     text)});
  return shard;
}

}  // namespace trainsim::sim
