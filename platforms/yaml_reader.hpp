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
#include "platforms/key_table.hpp"
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

// Other names a map accepts for its keys: {alias, key} (Megatron-LM's
// argument names for the model and plan keys, for instance). A key written
// under an alias, or with '-' for '_' in an alias ("num-layers"), reads as
// the key; giving both is an error.
using KeyAliases = std::vector<std::pair<std::string_view, std::string_view>>;
// Called with every key a reader consults in a key table, when set (the
// tests that check every declared key is read by some reader; one at a
// time, nullptr to stop).
using KeyReadObserver = void (*)(const KeyTable& table, std::string_view key);
void observe_key_reads(KeyReadObserver observer);

class MapReader {
 public:
  // `path` is the dotted key of this map ("" for the document root).
  // `table`, when given, is the declared keys of this map
  // (platforms/key_table.hpp): every accessor checks that its key is there
  // with the same type, range and words (std::logic_error otherwise: the
  // table and the reader must never disagree), and the maps it opens get
  // their keys' tables.
  MapReader(YAML::Node node, std::string path, const InputSource& source, ErrorList& errors,
            const KeyTable* table = nullptr);

  // Accepts the aliases of `aliases` (a table that outlives the reader) for
  // this map's keys from now on; reports a key given under two names, unless
  // one of them came from --set, which then overrides the other.
  void set_aliases(const KeyAliases& aliases);

  bool has(std::string_view key) const;
  // Marks a key as known without reading it (read elsewhere).
  void accept(std::string_view key);

  std::optional<std::string> text(std::string_view key);
  // A name (platforms/names.hpp): anything else is an error showing the
  // value escaped and what a name may hold.
  std::optional<std::string> label(std::string_view key);
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
  const KeyTable* table() const { return table_; }

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
  // The entry written for `key`, under its own name or an alias.
  std::optional<std::pair<YAML::Node, YAML::Node>> entry(std::string_view key) const;
  // The key an entry's written name stands for (itself unless an alias).
  std::string_view canonical(std::string_view written) const;
  // As key_path, with the name the file used ("model.num_layers").
  std::string written_path(std::string_view key) const;
  // The table's entry for `key`, checked against how the reader reads it
  // (nullptr without a table).
  const KeySpec* consult(std::string_view key, ValueType type, double min = 0, double max = 0,
                         const std::vector<std::string_view>* words = nullptr) const;

  YAML::Node node_;
  std::string path_;
  const InputSource* source_;
  ErrorList* errors_;
  const KeyTable* table_ = nullptr;
  std::set<std::string, std::less<>> known_;
  const KeyAliases* aliases_ = nullptr;
  // key -> the name it is read under when given twice, once by --set.
  std::map<std::string, std::string, std::less<>> chosen_;
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
