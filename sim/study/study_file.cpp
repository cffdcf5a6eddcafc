#include "sim/study/study_file.hpp"
#include "sim/study/study_keys.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "analysis/studies/result_column_names.hpp"
#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "platforms/names.hpp"
#include "platforms/yaml_document.hpp"
#include "platforms/yaml_reader.hpp"
#include "sim/scenario/document.hpp"

namespace trainsim::sim {
namespace {

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  for (std::size_t start = 0;;) {
    const auto dot = key.find('.', start);
    parts.push_back(key.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  return parts;
}

// Reads the study sections of one document, collecting every problem.
class StudyReader {
 public:
  StudyReader(StudyFile& study, const platforms::InputSource& source, platforms::ErrorList& errors)
      : study_(study), source_(source), errors_(errors) {}

  void read_variants(const YAML::Node& node);
  // `has_variants`: a sweep may then hold `plots` alone, drawn over the
  // variants (a study whose points are named plans, not a product of axes).
  void read_sweep(const YAML::Node& node, bool has_variants);
  void check_overlaps();
  // The columns the plots name (x, y, lines, where) against the study's
  // parameters and the figures trainsim writes (after the axes are read).
  void check_plot_columns(const YAML::Node& plots);

 private:
  void error(const std::string& path, const YAML::Node& node, const std::string& message) {
    errors_.add(fmt::format("{}: {}: {}", source_.where(path, node), path, message));
  }
  bool check_key(const std::string& path, const YAML::Node& key_node);
  // A list of values for `key` at `path`; nullopt (with an error) otherwise.
  std::optional<std::vector<YAML::Node>> value_list(const std::string& path, const YAML::Node& list);
  void read_grid(const YAML::Node& node);
  void read_zip_group(const YAML::Node& node, const std::string& path);
  void read_plots(const YAML::Node& node);

  StudyFile& study_;
  const platforms::InputSource& source_;
  platforms::ErrorList& errors_;
};

bool StudyReader::check_key(const std::string& path, const YAML::Node& key_node) {
  const std::string key = key_node.IsScalar() ? key_node.Scalar() : "";
  bool ok = !key.empty();
  for (const auto& part : split_key(key))
    ok = ok && !part.empty();
  if (!ok) {
    error(path, key_node,
          fmt::format("'{}' is not a dotted scenario key (expected a key such as plan.tp or cluster.nodes)",
                      key));
    return false;
  }
  const auto first = split_key(key).front();
  for (const char* study_key : scenario::kStudySectionKeys)
    if (first == study_key) {
      error(path, key_node, fmt::format("'{}' is a study section, not a scenario key", key));
      return false;
    }
  return true;
}

std::optional<std::vector<YAML::Node>> StudyReader::value_list(const std::string& path,
                                                               const YAML::Node& list) {
  if (!list.IsSequence() || list.size() == 0) {
    error(path, list,
          fmt::format("expected a non-empty list of values, found {}", platforms::describe_yaml_value(list)));
    return std::nullopt;
  }
  std::vector<YAML::Node> values;
  std::set<std::string> seen;
  for (const auto& v : list) {
    if (v.IsScalar() && !seen.insert(v.Scalar()).second) {
      error(path, v, fmt::format("'{}' appears twice in the list (every point would run twice)", v.Scalar()));
      return std::nullopt;
    }
    values.push_back(v);
  }
  return values;
}

void StudyReader::read_grid(const YAML::Node& node) {
  if (!node.IsMap()) {
    error("sweep.grid", node,
          fmt::format("expected a map of dotted keys to lists of values, found {}",
                      platforms::describe_yaml_value(node)));
    return;
  }
  std::set<std::string> seen;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string path = fmt::format("sweep.grid.{}", key);
    if (!check_key(path, kv.first))
      continue;
    if (!seen.insert(key).second) {
      error(path, kv.first, "duplicate key");
      continue;
    }
    auto values = value_list(path, kv.second);
    if (!values)
      continue;
    Axis axis;
    axis.keys = {key};
    for (const auto& v : *values)
      axis.values.push_back(AxisValue{"", {Assignment{key, v}}});
    study_.axes.push_back(std::move(axis));
  }
}

void StudyReader::read_zip_group(const YAML::Node& node, const std::string& path) {
  if (!node.IsMap() || node.size() == 0) {
    error(path, node,
          fmt::format("expected a map of dotted keys to lists of equal length, found {}",
                      platforms::describe_yaml_value(node)));
    return;
  }
  Axis axis;
  std::size_t length = 0;
  std::string first_key;
  bool ok = true;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const std::string key_path = fmt::format("{}.{}", path, key);
    if (!check_key(key_path, kv.first)) {
      ok = false;
      continue;
    }
    auto values = value_list(key_path, kv.second);
    if (!values) {
      ok = false;
      continue;
    }
    if (axis.keys.empty()) {
      length = values->size();
      first_key = key;
      axis.values.resize(length);
    } else if (values->size() != length) {
      error(
          key_path, kv.second,
          fmt::format("has {} values but {} has {}; zipped lists move together, so they need the same length",
                      values->size(), first_key, length));
      ok = false;
      continue;
    }
    axis.keys.push_back(key);
    for (std::size_t i = 0; i < length; ++i)
      axis.values[i].assignments.push_back(Assignment{key, (*values)[i]});
  }
  if (ok)
    study_.axes.push_back(std::move(axis));
}

void StudyReader::read_plots(const YAML::Node& node) {
  if (!node.IsSequence()) {
    error("sweep.plots", node,
          fmt::format("expected a list of plots, found {}", platforms::describe_yaml_value(node)));
    return;
  }
  std::set<std::string> files;
  for (std::size_t i = 0; i < node.size(); ++i) {
    const std::string path = fmt::format("sweep.plots[{}]", i);
    platforms::MapReader p(node[i], path, source_, errors_, &plot_keys());
    const std::size_t before = errors_.size();
    analysis::PlotSpec spec;
    for (const char* required : {"x", "y"})
      if (!p.has(required))
        p.error(required, "missing (expected a results column: a swept key or a summary figure)");
    spec.x = p.text("x").value_or("");
    spec.y = p.text("y").value_or("");
    if (p.has("lines")) {
      p.accept("lines");
      const YAML::Node lines = p.node()["lines"];
      if (lines.IsScalar()) {
        spec.lines = {lines.Scalar()};
      } else if (lines.IsSequence() && lines.size() > 0) {
        for (const auto& l : lines)
          if (l.IsScalar())
            spec.lines.push_back(l.Scalar());
          else
            p.error("lines", "expected a column name or a list of column names");
      } else {
        p.error("lines", fmt::format("expected a column name or a list of column names, found {}",
                                     platforms::describe_yaml_value(lines)));
      }
    }
    if (p.has("where")) {
      p.accept("where");
      const YAML::Node where = p.node()["where"];
      if (!where.IsMap()) {
        p.error("where", fmt::format("expected a map of column names to values, found {}",
                                     platforms::describe_yaml_value(where)));
      } else {
        for (const auto& kv : where) {
          if (!kv.second.IsScalar()) {
            error(
                fmt::format("{}.where.{}", path, kv.first.Scalar()), kv.second,
                fmt::format("expected a single value, found {}", platforms::describe_yaml_value(kv.second)));
            continue;
          }
          spec.where.emplace_back(kv.first.Scalar(), analysis::parameter_value(kv.second.Scalar()));
        }
      }
    }
    spec.log_x = p.boolean("log_x").value_or(false);
    spec.log_y = p.boolean("log_y").value_or(false);
    spec.title = p.text("title").value_or("");
    if (auto file = p.label("file")) {
      if (!file->ends_with(".svg") || file->size() < 5)
        p.error("file",
                fmt::format("'{}' does not end in .svg (expected a file name such as tp.svg)", *file));
      spec.file = *file;
    }
    p.finish();
    if (errors_.size() != before)
      continue;
    if (!files.insert(spec.file_or_default()).second)
      p.error("", fmt::format("another plot is also written to {}; give one of them a `file`",
                              spec.file_or_default()));
    study_.plots.push_back(std::move(spec));
  }
}

void StudyReader::read_sweep(const YAML::Node& node, bool has_variants) {
  platforms::MapReader sweep(node, "sweep", source_, errors_, &sweep_keys());
  if (node.IsMap() && !sweep.has("grid") && !sweep.has("zip") && !(has_variants && sweep.has("plots")))
    sweep.error("", has_variants ? "expected `grid` (a cartesian product) and/or `zip` (parallel lists) of "
                                   "scenario keys, or `plots` (drawn over the variants)"
                                 : "expected `grid` (a cartesian product) and/or `zip` (parallel lists) of "
                                   "scenario keys (`plots` alone needs a `variants` section)");
  if (sweep.has("grid")) {
    sweep.accept("grid");
    read_grid(node["grid"]);
  }
  if (sweep.has("zip")) {
    sweep.accept("zip");
    const YAML::Node zip = node["zip"];
    if (zip.IsSequence()) {
      for (std::size_t i = 0; i < zip.size(); ++i)
        read_zip_group(zip[i], fmt::format("sweep.zip[{}]", i));
    } else {
      read_zip_group(zip, "sweep.zip");
    }
  }
  if (sweep.has("plots")) {
    sweep.accept("plots");
    read_plots(node["plots"]);
  }
  sweep.finish();
}

void StudyReader::read_variants(const YAML::Node& node) {
  if (!node.IsMap() || node.size() == 0) {
    error("variants", node,
          fmt::format("expected a map of variant names to maps of dotted keys and values, found {}",
                      platforms::describe_yaml_value(node)));
    return;
  }
  Axis axis;
  axis.column = "variant";
  std::set<std::string> keys, names;
  for (const auto& kv : node) {
    const std::string name = kv.first.Scalar();
    const std::string path = fmt::format("variants.{}", name);
    // A variant's name is its folder under `compare`'s output and its
    // value in the results' `variant` column and in --only.
    if (const auto message = platforms::invalid_name_message(name); !message.empty()) {
      error(path, kv.first, fmt::format("a variant's {}", message));
      continue;
    }
    if (!names.insert(name).second) {
      error(path, kv.first, "duplicate variant name");
      continue;
    }
    AxisValue value;
    value.label = name;
    if (kv.second.IsMap()) {
      for (const auto& setting : kv.second) {
        const std::string key = setting.first.Scalar();
        if (!check_key(fmt::format("{}.{}", path, key), setting.first))
          continue;
        value.assignments.push_back(Assignment{key, setting.second});
        keys.insert(key);
      }
    } else if (!kv.second.IsNull()) {
      error(
          path, kv.second,
          fmt::format("expected a map of dotted keys to values (or nothing for the base scenario), found {}",
                      platforms::describe_yaml_value(kv.second)));
      continue;
    }
    axis.values.push_back(std::move(value));
  }
  axis.keys.assign(keys.begin(), keys.end());
  // Variants come first: they vary slowest.
  study_.axes.insert(study_.axes.begin(), std::move(axis));
}

void StudyReader::check_plot_columns(const YAML::Node& plots) {
  if (!plots.IsSequence())
    return;  // reported by read_plots
  std::vector<std::string> parameters = parameter_names(study_);
  for (std::size_t i = 0; i < plots.size(); ++i) {
    const YAML::Node plot = plots[i];
    if (!plot.IsMap())
      continue;
    const std::string path = fmt::format("sweep.plots[{}]", i);
    auto check = [&](const std::string& role, const YAML::Node& name_node) {
      if (!name_node.IsScalar())
        return;
      if (const auto problem = analysis::unknown_column_problem(name_node.Scalar(), parameters))
        error(fmt::format("{}.{}", path, role), name_node, *problem);
    };
    for (const char* role : {"x", "y"})
      if (plot[role])
        check(role, plot[role]);
    if (const YAML::Node lines = plot["lines"]; lines && lines.IsScalar())
      check("lines", lines);
    else if (lines && lines.IsSequence())
      for (std::size_t l = 0; l < lines.size(); ++l)
        check(fmt::format("lines[{}]", l), lines[l]);
    if (const YAML::Node where = plot["where"]; where && where.IsMap())
      for (const auto& kv : where)
        check("where", kv.first);
  }
}

void StudyReader::check_overlaps() {
  // Two axes setting the same key, or one key inside another (cluster.nic and
  // cluster.nic.bandwidth), would make a point's value depend on the order.
  std::vector<std::pair<std::string, std::size_t>> keys;
  for (std::size_t a = 0; a < study_.axes.size(); ++a)
    for (const auto& k : study_.axes[a].keys)
      keys.emplace_back(k, a);
  for (std::size_t i = 0; i < keys.size(); ++i)
    for (std::size_t j = i + 1; j < keys.size(); ++j) {
      const auto& [a, axis_a] = keys[i];
      const auto& [b, axis_b] = keys[j];
      if (axis_a == axis_b)
        continue;
      const bool overlap = a == b || b.rfind(a + ".", 0) == 0 || a.rfind(b + ".", 0) == 0;
      if (overlap)
        errors_.add(
            fmt::format("{}: sweep: '{}' and '{}' are both varied; a key may be set by one axis only "
                        "(grid, zip or variants)",
                        source_.file(), a, b));
    }
}

}  // namespace

StudyFile parse_study_text(const std::string& text, const std::string& path) {
  StudyFile study;
  study.path = path;
  study.text = text;
  study.document = platforms::load_yaml_document(text, path);
  if (!study.document || study.document.IsNull())
    study.document = YAML::Node(YAML::NodeType::Map);
  platforms::InputSource source(path);
  platforms::ErrorList errors;
  const YAML::Node& root = study.document;
  if (!root.IsMap())
    throw platforms::InputError(
        {fmt::format("{}: expected a map of keys (a scenario with a sweep or variants section), "
                     "found {}",
                     path, platforms::describe_yaml_value(root))});
  // The study's name is its default folder, runs/<name>/ (the point
  // scenarios check the same key again, as a scenario's name).
  study.name = platforms::name_from_text(std::filesystem::path(path).stem().string(), "study");
  if (root["name"] && root["name"].IsScalar()) {
    study.name = root["name"].Scalar();
    if (const auto message = platforms::invalid_name_message(study.name); !message.empty())
      errors.add(fmt::format("{}: name: {}", source.where("name", root["name"]), message));
  }
  if (root["description"] && root["description"].IsScalar())
    study.description = root["description"].Scalar();

  StudyReader reader(study, source, errors);
  if (root["sweep"]) {
    study.has_sweep = true;
    reader.read_sweep(root["sweep"], static_cast<bool>(root["variants"]));
  }
  if (root["variants"]) {
    study.has_variants = true;
    reader.read_variants(root["variants"]);
  }
  reader.check_overlaps();
  if (root["sweep"] && root["sweep"].IsMap() && root["sweep"]["plots"])
    reader.check_plot_columns(root["sweep"]["plots"]);
  errors.throw_if_any();
  return study;
}

StudyFile read_study_file(const std::string& path) {
  return parse_study_text(platforms::read_input_file(path, "study file", platforms::kMaxYamlInputBytes),
                          path);
}

std::vector<std::string> parameter_names(const StudyFile& study) {
  std::vector<std::string> names;
  for (const auto& axis : study.axes) {
    if (!axis.column.empty())
      names.push_back(axis.column);
    else
      names.insert(names.end(), axis.keys.begin(), axis.keys.end());
  }
  return names;
}

YAML::Node base_document(const StudyFile& study) {
  YAML::Node root = YAML::Load(study.text);
  if (!root || root.IsNull())
    return YAML::Node(YAML::NodeType::Map);
  for (const char* key : scenario::kStudySectionKeys)
    root.remove(key);
  return root;
}

bool set_dotted(YAML::Node& root, const std::string& key, const YAML::Node& value) {
  const auto parts = split_key(key);
  YAML::Node current = root;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    if (!current.IsMap() && !current.IsNull())
      return false;
    if (i + 1 == parts.size()) {
      current[parts[i]] = value;
      return true;
    }
    YAML::Node child = current[parts[i]];
    if (!child || child.IsNull()) {
      current[parts[i]] = YAML::Node(YAML::NodeType::Map);
      child.reset(current[parts[i]]);
    }
    current.reset(child);
  }
  return true;
}

}  // namespace trainsim::sim
