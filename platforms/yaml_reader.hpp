#pragma once
// Strict, typed reading of YAML maps. Every accessor records the key as known;
// finish() reports every key nobody asked for as an error, so a typo never
// passes silently. Errors name the file and line (or the --set option that
// supplied the value), the dotted key, the bad value and what was expected.
#include <yaml-cpp/yaml.h>

#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "platforms/input_error.hpp"
#include "platforms/problem.hpp"

namespace trainsim::platforms {

// Where values came from: the scenario file, plus command-line overrides.
class InputSource {
 public:
  explicit InputSource(std::string file) : file_(std::move(file)) {}
  const std::string& file() const { return file_; }
  // Records that `path` (a dotted key) was set by `--set path=value`.
  void mark_override(const std::string& path, std::string option) { overrides_[path] = std::move(option); }
  // Records that the values at and below `path` were read from another
  // document (a preset); "" means the scenario file itself. The longest
  // recorded prefix of a key decides.
  // Bookkeeping found while reading (hence const): a reader that merges a
  // preset records where its values came from.
  void mark_origin(const std::string& path, std::string file) const { origins_[path] = std::move(file); }
  // "file.yaml:12:3", "platforms/presets/x.yaml:7:3" or "--set plan.pp=4".
  std::string where(const std::string& path, const YAML::Node& node) const;

 private:
  std::string file_;
  std::map<std::string, std::string> overrides_;
  mutable std::map<std::string, std::string> origins_;
};

class MapReader {
 public:
  // `path` is the dotted key of this map ("" for the document root).
  MapReader(YAML::Node node, std::string path, const InputSource& source, ErrorList& errors);

  bool has(std::string_view key) const;
  // Marks a key as known without reading it (read elsewhere).
  void accept(std::string_view key);

  std::optional<std::string> text(std::string_view key);
  // Integers in [min, max].
  std::optional<long long> integer(std::string_view key, long long min, long long max);
  std::optional<double> number(std::string_view key, double min, double max);
  std::optional<bool> boolean(std::string_view key);
  // Physical quantities through the one unit parser (platforms/units.hpp),
  // each within its kind's valid range (README "Units and valid ranges").
  std::optional<double> bytes(std::string_view key);
  std::optional<double> bandwidth_Bps(std::string_view key);
  std::optional<double> duration_s(std::string_view key);
  // A duration of at most units::kMaxLatency_s.
  std::optional<double> latency_s(std::string_view key);
  std::optional<double> flop_rate(std::string_view key);
  std::optional<double> power_W(std::string_view key);
  // One of a fixed set of words.
  template <class E>
  std::optional<E> choice(std::string_view key, const std::vector<std::pair<std::string_view, E>>& words);
  // A nested map (nullopt, with an error, when the value is not a map).
  std::optional<MapReader> map(std::string_view key);
  // A list of maps, each read with its own MapReader keyed "key.0", "key.1"
  // (nullopt, with an error, when the value is not such a list).
  std::optional<std::vector<MapReader>> map_list(std::string_view key);
  // A list of integers in [min, max].
  std::optional<std::vector<long long>> integer_list(std::string_view key, long long min, long long max);
  const InputSource& source() const { return *source_; }
  ErrorList& errors() const { return *errors_; }

  // Reports every key of this map that no accessor asked for.
  void finish();

  // Records an error about `key` of this map (or the map itself when empty).
  void error(std::string_view key, const std::string& message);
  std::string key_path(std::string_view key) const;
  std::string where(std::string_view key) const;
  const YAML::Node& node() const { return node_; }
  std::size_t error_count() const { return errors_->size(); }

 private:
  std::optional<YAML::Node> scalar(std::string_view key);
  std::optional<std::string> choice_text(std::string_view key, const std::vector<std::string_view>& words);

  YAML::Node node_;
  std::string path_;
  const InputSource* source_;
  ErrorList* errors_;
  std::set<std::string, std::less<>> known_;
};

template <class E>
std::optional<E> MapReader::choice(std::string_view key,
                                   const std::vector<std::pair<std::string_view, E>>& words) {
  std::vector<std::string_view> names;
  for (const auto& w : words)
    names.push_back(w.first);
  auto word = choice_text(key, names);
  if (!word)
    return std::nullopt;
  for (const auto& w : words)
    if (w.first == *word)
      return w.second;
  return std::nullopt;
}

// How a value reads in an error message: 'text', "a list", "a map" or
// "nothing".
std::string describe_yaml_value(const YAML::Node& node);

// "where: key: message" for a problem found by a typed check, located as
// MapReader::error would locate it: at the key's value in `root` (or its
// override), else at the nearest enclosing map that exists.
std::string locate_problem(const YAML::Node& root, const InputSource& source, const Problem& problem);

// Applies "a.b.c=value" to the document (value parsed as YAML), recording the
// override in `source`. Errors (no '=', empty key, a scalar in the way) go to
// `errors`.
void apply_override(YAML::Node& root, const std::string& assignment, InputSource& source, ErrorList& errors);

}  // namespace trainsim::platforms
