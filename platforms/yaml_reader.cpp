#include "platforms/yaml_reader.hpp"

#include <fmt/format.h>

#include <atomic>
#include <charconv>
#include <cmath>
#include <limits>

#include "platforms/input_file.hpp"
#include "platforms/names.hpp"
#include "platforms/spelling.hpp"
#include "platforms/units.hpp"
#include "platforms/yaml_document.hpp"

namespace trainsim::platforms {
namespace {

std::string join_words(const std::vector<std::string_view>& words) {
  std::string out;
  for (std::size_t i = 0; i < words.size(); ++i) {
    if (i > 0)
      out += i + 1 == words.size() ? " or " : ", ";
    out += fmt::format("'{}'", words[i]);
  }
  return out;
}

}  // namespace

std::string describe_yaml_value(const YAML::Node& node) {
  if (node.IsScalar())
    return fmt::format("'{}'", node.Scalar());
  if (node.IsSequence())
    return "a list";
  if (node.IsMap())
    return "a map";
  return "nothing";
}

std::string InputSource::where(const std::string& path, const YAML::Node& node) const {
  // The longest overridden prefix of the path wins: --set cluster.nvlink.bandwidth=...
  for (std::string prefix = path;;) {
    if (auto it = overrides_.find(prefix); it != overrides_.end())
      return it->second;
    const auto dot = prefix.rfind('.');
    if (dot == std::string::npos)
      break;
    prefix.resize(dot);
  }
  std::string file = file_;
  for (std::string prefix = path;;) {
    if (auto it = origins_.find(prefix); it != origins_.end()) {
      if (!it->second.empty())
        file = it->second;
      break;
    }
    const auto dot = prefix.rfind('.');
    if (dot == std::string::npos)
      break;
    prefix.resize(dot);
  }
  const auto mark = node.Mark();
  if (mark.is_null() || mark.line < 0)
    return file;
  return fmt::format("{}:{}:{}", file, mark.line + 1, mark.column + 1);
}

MapReader::MapReader(YAML::Node node, std::string path, const InputSource& source, ErrorList& errors,
                     const KeyTable* table)
    : node_(std::move(node)), path_(std::move(path)), source_(&source), errors_(&errors), table_(table) {
  if (!node_.IsMap()) {
    errors_->add(fmt::format("{}: {}: expected a map of keys, found {}", source_->where(path_, node_),
                             path_.empty() ? "document" : path_, describe_yaml_value(node_)));
    node_ = YAML::Node(YAML::NodeType::Map);
    return;
  }
  std::set<std::string> seen;
  for (const auto& kv : node_) {
    if (!kv.first.IsScalar()) {
      // YAML allows a list or a map as a key ("? [a, b]"); no trainsim key is one.
      errors_->add(fmt::format("{}: {}: a key must be a plain word, found {} as a key",
                               source_->where(path_, kv.first), path_.empty() ? "document" : path_,
                               describe_yaml_value(kv.first)));
      continue;
    }
    const auto key = kv.first.Scalar();
    if (!seen.insert(key).second)
      errors_->add(
          fmt::format("{}: {}: duplicate key", source_->where(key_path(key), kv.first), key_path(key)));
  }
}

std::string MapReader::key_path(std::string_view key) const {
  if (key.empty())
    return path_;
  return path_.empty() ? std::string(key) : fmt::format("{}.{}", path_, key);
}

namespace {
std::string underscored(std::string_view name) {
  std::string out(name);
  for (char& c : out)
    c = c == '-' ? '_' : c;
  return out;
}
}  // namespace

std::string_view MapReader::canonical(std::string_view written) const {
  if (aliases_ == nullptr)
    return written;
  const std::string name = underscored(written);
  for (const auto& [alias, key] : *aliases_)
    if (alias == name)
      return key;
  return written;
}

std::optional<std::pair<YAML::Node, YAML::Node>> MapReader::entry(std::string_view key) const {
  // A key given in the file and again under another name by --set: the
  // --set one (see set_aliases).
  if (const auto chosen = chosen_.find(key); chosen != chosen_.end()) {
    for (const auto& kv : node_)
      if (kv.first.Scalar() == chosen->second)
        return std::pair{kv.first, kv.second};
  }
  for (const auto& kv : node_)
    if (kv.first.Scalar() == key)
      return std::pair{kv.first, kv.second};
  if (aliases_ != nullptr)
    for (const auto& kv : node_)
      if (canonical(kv.first.Scalar()) == key)
        return std::pair{kv.first, kv.second};
  return std::nullopt;
}

void MapReader::set_aliases(const KeyAliases& aliases) {
  aliases_ = &aliases;
  std::map<std::string, std::string, std::less<>> seen;  // key -> the first name it was written as
  auto from_set = [&](const std::string& written) {
    for (const auto& kv : node_)
      if (kv.first.Scalar() == written)
        return source_->where(key_path(written), kv.second).rfind("--set", 0) == 0;
    return false;
  };
  for (const auto& kv : node_) {
    const std::string written = kv.first.Scalar();
    const std::string key(canonical(written));
    auto [it, fresh] = seen.emplace(key, written);
    if (fresh)
      continue;
    // `--set plan.tensor_model_parallel_size=4` on a file with `tp: 2`
    // overrides it, as a --set of `plan.tp` would.
    const bool first_set = from_set(it->second), this_set = from_set(written);
    if (first_set != this_set) {
      chosen_[key] = this_set ? written : it->second;
      continue;
    }
    errors_->add(fmt::format("{}: {}: '{}' and '{}' both set {} (one is another name of the other); keep one",
                             source_->where(key_path(written), kv.first), key_path(written), it->second,
                             written, key_path(key)));
  }
}

std::string MapReader::written_path(std::string_view key) const {
  if (const auto e = entry(key); e && e->first.Scalar() != key)
    return fmt::format("{} ({})", key_path(e->first.Scalar()), key);
  return key_path(key);
}

std::string MapReader::where(std::string_view key) const {
  if (key.empty())
    return source_->where(path_, node_);
  if (const auto e = entry(key))
    return source_->where(key_path(e->first.Scalar()), e->second.IsNull() ? e->first : e->second);
  return source_->where(path_, node_);
}

void MapReader::error(std::string_view key, const std::string& message) {
  errors_->add(fmt::format("{}: {}: {}", where(key), written_path(key), message));
}

bool MapReader::has(std::string_view key) const {
  return entry(key).has_value();
}

void MapReader::accept(std::string_view key) {
  consult(key, ValueType::any);
  known_.emplace(key);
}

namespace {
std::atomic<KeyReadObserver> key_read_observer{nullptr};
}  // namespace

void observe_key_reads(KeyReadObserver observer) {
  key_read_observer.store(observer);
}

const KeySpec* MapReader::consult(std::string_view key, ValueType type, double min, double max,
                                  const std::vector<std::string_view>* words) const {
  if (table_ == nullptr)
    return nullptr;
  const KeySpec* spec = table_->find(key);
  const auto disagree = [&](const std::string& what) {
    throw std::logic_error(fmt::format("the key table '{}' and the reader of {} disagree on '{}': {}",
                                       table_->name, path_.empty() ? "the document" : path_, key, what));
  };
  if (spec == nullptr)
    disagree("the reader reads it, the table does not have it");
  if (const auto observer = key_read_observer.load())
    observer(*table_, key);
  const auto range = [&](ValueType expected) {
    const bool one_of_list =
        expected == ValueType::integer && spec->type == ValueType::integer_list && spec->one_or_list;
    if (spec->type != expected && !one_of_list)
      disagree(fmt::format("read as {}, declared {}", to_string(type), to_string(spec->type)));
    const bool same = spec->min == min && spec->max == max;
    const bool within = spec->min <= min && max <= spec->max;
    if (!(same || (spec->range_depends_on_other_keys && within)))
      disagree(fmt::format("read in [{}, {}], declared [{}, {}]", min, max, spec->min, spec->max));
  };
  switch (type) {
    case ValueType::any:
      break;
    case ValueType::text:
      if (spec->type != ValueType::text && spec->type != ValueType::choice && spec->words.empty())
        disagree(fmt::format("read as text, declared {}", to_string(spec->type)));
      break;
    case ValueType::choice:
      if (spec->type != ValueType::choice || words == nullptr || *words != spec->words)
        disagree("read as a choice of other words than declared");
      break;
    case ValueType::integer:
    case ValueType::number:
    case ValueType::integer_list:
      range(type);
      break;
    case ValueType::map:
      if (spec->type != ValueType::map && (spec->fields == nullptr || spec->type == ValueType::map_list))
        disagree(fmt::format("read as a map, declared {}", to_string(spec->type)));
      break;
    default:
      if (spec->type != type)
        disagree(fmt::format("read as {}, declared {}", to_string(type), to_string(spec->type)));
  }
  return spec;
}

std::optional<YAML::Node> MapReader::scalar(std::string_view key) {
  known_.emplace(key);
  const auto e = entry(key);
  if (!e)
    return std::nullopt;
  if (!e->second.IsScalar()) {
    error(key, fmt::format("expected a single value, found {}", describe_yaml_value(e->second)));
    return std::nullopt;
  }
  return e->second;
}

std::optional<std::string> MapReader::text(std::string_view key) {
  consult(key, ValueType::text);
  auto node = scalar(key);
  if (!node)
    return std::nullopt;
  return node->Scalar();
}

std::optional<std::string> MapReader::label(std::string_view key) {
  consult(key, ValueType::label);
  auto node = scalar(key);
  if (!node)
    return std::nullopt;
  if (const auto message = invalid_name_message(node->Scalar()); !message.empty()) {
    error(key, message);
    return std::nullopt;
  }
  return node->Scalar();
}

std::optional<long long> MapReader::integer(std::string_view key, long long min, long long max) {
  consult(key, ValueType::integer, static_cast<double>(min), static_cast<double>(max));
  auto node = scalar(key);
  if (!node)
    return std::nullopt;
  const std::string& s = node->Scalar();
  long long value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  const std::string range = max == std::numeric_limits<long long>::max()
                                ? fmt::format(">= {}", min)
                                : fmt::format("between {} and {}", min, max);
  if (ec != std::errc() || ptr != s.data() + s.size()) {
    error(key, fmt::format("'{}' is not a whole number (expected an integer {})", s, range));
    return std::nullopt;
  }
  if (value < min || value > max) {
    error(key, fmt::format("{} is out of range (expected an integer {})", value, range));
    return std::nullopt;
  }
  return value;
}

std::optional<double> MapReader::number(std::string_view key, double min, double max) {
  consult(key, ValueType::number, min, max);
  auto node = scalar(key);
  if (!node)
    return std::nullopt;
  const std::string& s = node->Scalar();
  double value = 0;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(value)) {
    error(key, fmt::format("'{}' is not a number (expected a number between {} and {})", s, min, max));
    return std::nullopt;
  }
  if (value < min || value > max) {
    error(key, fmt::format("{} is out of range (expected a number between {} and {})", s, min, max));
    return std::nullopt;
  }
  return value;
}

std::optional<bool> MapReader::boolean(std::string_view key) {
  consult(key, ValueType::boolean);
  auto node = scalar(key);
  if (!node)
    return std::nullopt;
  const std::string& s = node->Scalar();
  if (s == "true" || s == "yes" || s == "on")
    return true;
  if (s == "false" || s == "no" || s == "off")
    return false;
  error(key, fmt::format("'{}' is not a boolean (expected true or false)", s));
  return std::nullopt;
}

namespace {
template <class Parse>
std::optional<double> quantity(MapReader& reader, std::optional<YAML::Node> node, std::string_view key,
                               Parse parse) {
  if (!node)
    return std::nullopt;
  try {
    return parse(node->Scalar());
  } catch (const units::UnitError& e) {
    reader.error(key, e.what());
    return std::nullopt;
  }
}
}  // namespace

std::optional<double> MapReader::bytes(std::string_view key) {
  consult(key, ValueType::bytes);
  return quantity(*this, scalar(key), key, units::parse_bytes);
}
std::optional<double> MapReader::bandwidth_Bps(std::string_view key) {
  consult(key, ValueType::bandwidth);
  return quantity(*this, scalar(key), key, units::parse_bandwidth_Bps);
}
std::optional<double> MapReader::duration_s(std::string_view key) {
  consult(key, ValueType::duration);
  return quantity(*this, scalar(key), key, units::parse_duration_s);
}
std::optional<double> MapReader::latency_s(std::string_view key) {
  consult(key, ValueType::duration);
  return quantity(*this, scalar(key), key, units::parse_latency_s);
}

std::optional<double> MapReader::flop_rate(std::string_view key) {
  consult(key, ValueType::flop_rate);
  return quantity(*this, scalar(key), key, units::parse_flop_rate);
}
std::optional<double> MapReader::power_W(std::string_view key) {
  consult(key, ValueType::power);
  return quantity(*this, scalar(key), key, units::parse_power_W);
}

std::optional<std::string> MapReader::choice_text(std::string_view key,
                                                  const std::vector<std::string_view>& words) {
  consult(key, ValueType::choice, 0, 0, &words);
  auto node = scalar(key);
  if (!node)
    return std::nullopt;
  for (auto w : words)
    if (w == node->Scalar())
      return node->Scalar();
  error(key, fmt::format("'{}' is not a known value{} (expected {})", node->Scalar(),
                         did_you_mean(node->Scalar(), words), join_words(words)));
  return std::nullopt;
}

std::optional<MapReader> MapReader::map(std::string_view key) {
  const KeySpec* spec = consult(key, ValueType::map);
  known_.emplace(key);
  const auto e = entry(key);
  if (!e)
    return std::nullopt;
  if (!e->second.IsMap()) {
    error(key, fmt::format("expected a map of keys, found {}", describe_yaml_value(e->second)));
    return std::nullopt;
  }
  return MapReader(e->second, key_path(key), *source_, *errors_, spec ? spec->fields : nullptr);
}

std::optional<std::vector<MapReader>> MapReader::map_list(std::string_view key) {
  const KeySpec* spec = consult(key, ValueType::map_list);
  known_.emplace(key);
  const auto e = entry(key);
  if (!e)
    return std::nullopt;
  if (!e->second.IsSequence() || e->second.size() == 0) {
    error(key, fmt::format("expected a list of maps, found {}", describe_yaml_value(e->second)));
    return std::nullopt;
  }
  std::vector<MapReader> items;
  for (std::size_t i = 0; i < e->second.size(); ++i)
    items.emplace_back(e->second[i], fmt::format("{}.{}", key_path(key), i), *source_, *errors_,
                       spec ? spec->fields : nullptr);
  return items;
}

std::optional<std::vector<long long>> MapReader::integer_list(std::string_view key, long long min,
                                                              long long max) {
  consult(key, ValueType::integer_list, static_cast<double>(min), static_cast<double>(max));
  known_.emplace(key);
  if (const auto e = entry(key)) {
    const auto& kv = *e;
    const auto expected =
        fmt::format("expected a list of integers between {} and {}, such as [4, 4, 2]", min, max);
    if (!kv.second.IsSequence() || kv.second.size() == 0) {
      error(key, fmt::format("found {} ({})", describe_yaml_value(kv.second), expected));
      return std::nullopt;
    }
    std::vector<long long> values;
    for (const auto& item : kv.second) {
      long long value = 0;
      const std::string text = item.IsScalar() ? item.Scalar() : std::string();
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
      if (!item.IsScalar() || ec != std::errc() || ptr != text.data() + text.size() || value < min ||
          value > max) {
        error(key, fmt::format("{} is not valid ({})", describe_yaml_value(item), expected));
        return std::nullopt;
      }
      values.push_back(value);
    }
    return values;
  }
  return std::nullopt;
}

void MapReader::finish() {
  std::vector<std::string_view> known(known_.begin(), known_.end());
  // A slip may be near a key or near one of its other names.
  std::vector<std::string_view> names = known;
  if (aliases_ != nullptr)
    for (const auto& [alias, key] : *aliases_)
      if (known_.count(key) != 0)
        names.push_back(alias);
  for (const auto& kv : node_) {
    const auto& key = kv.first.Scalar();
    if (!kv.first.IsScalar() || known_.count(canonical(key)) != 0)
      continue;
    errors_->add(fmt::format("{}: {}: unknown key{} (known keys here: {})",
                             source_->where(key_path(key), kv.first), key_path(key), did_you_mean(key, names),
                             join_words(known)));
  }
}

std::string locate_problem(const YAML::Node& root, const InputSource& source, const Problem& problem) {
  // Walk down to the deepest map along the key (without operator[], which
  // would add entries to the document).
  const auto child = [](const YAML::Node& map, std::string_view name) -> std::optional<YAML::Node> {
    if (!map.IsMap())
      return std::nullopt;
    for (const auto& kv : map)
      if (kv.first.Scalar() == name)
        return kv.second;
    return std::nullopt;
  };
  std::vector<std::string> parts;
  for (std::size_t start = 0; start <= problem.key.size();) {
    const std::size_t dot = std::min(problem.key.find('.', start), problem.key.size());
    parts.push_back(problem.key.substr(start, dot - start));
    start = dot + 1;
  }
  if (problem.key.empty())
    parts.clear();
  YAML::Node map;
  map.reset(root);
  std::string path;
  std::size_t depth = 0;
  // The key itself names a map (a section): the problem is about it as a whole.
  const std::size_t last = parts.empty() ? 0 : parts.size() - 1;
  for (; depth < parts.size(); ++depth) {
    const auto next = child(map, parts[depth]);
    if (!next || !next->IsMap() || (depth == last && !next->IsMap()))
      break;
    map.reset(*next);  // rebinds (operator= would overwrite the document)
    path = path.empty() ? parts[depth] : path + "." + parts[depth];
  }
  ErrorList errors;
  MapReader reader(map, path, source, errors);
  std::string key;
  for (std::size_t i = depth; i < parts.size(); ++i)
    key += (key.empty() ? "" : ".") + parts[i];
  reader.error(key, problem.message);
  return errors.problems().back();
}

void apply_override(YAML::Node& root, const std::string& assignment, InputSource& source, ErrorList& errors) {
  const auto option = fmt::format("--set {}", assignment);
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    errors.add(fmt::format("{}: expected KEY=VALUE with a dotted key, for example --set plan.pp=4", option));
    return;
  }
  if (first_invalid_utf8(assignment) != assignment.size()) {
    errors.add(fmt::format("{}: not valid UTF-8", option));
    return;
  }
  const std::string path = assignment.substr(0, eq);
  YAML::Node value;
  try {
    value = load_yaml_value(assignment.substr(eq + 1), option);
  } catch (const InputError& e) {
    for (const auto& problem : e.problems())
      errors.add(problem);
    return;
  }
  std::vector<std::string> keys;
  for (std::size_t start = 0;;) {
    const auto dot = path.find('.', start);
    keys.push_back(path.substr(start, dot - start));
    if (dot == std::string::npos)
      break;
    start = dot + 1;
  }
  YAML::Node current = root;
  std::string prefix;
  for (std::size_t i = 0; i < keys.size(); ++i) {
    if (keys[i].empty()) {
      errors.add(fmt::format("{}: empty key in '{}'", option, path));
      return;
    }
    prefix += (i == 0 ? "" : ".") + keys[i];
    if (current.IsSequence()) {
      // A list item by index: --set cluster.groups.1.nodes=8
      std::size_t index = 0;
      auto [ptr, ec] = std::from_chars(keys[i].data(), keys[i].data() + keys[i].size(), index);
      if (ec != std::errc() || ptr != keys[i].data() + keys[i].size() || index >= current.size()) {
        errors.add(fmt::format(
            "{}: '{}' is a list of {} items, so '{}' is not one of its indices (expected 0 to {})", option,
            prefix.substr(0, prefix.rfind('.')), current.size(), keys[i], current.size() - 1));
        return;
      }
      if (i + 1 == keys.size()) {
        current[index] = value;
      } else {
        YAML::Node child = current[index];
        current.reset(child);
      }
      continue;
    }
    if (!current.IsMap() && !current.IsNull()) {
      errors.add(fmt::format("{}: '{}' is a single value, not a map, so it has no key '{}'", option,
                             prefix.substr(0, prefix.rfind('.')), keys[i]));
      return;
    }
    if (i + 1 == keys.size()) {
      current[keys[i]] = value;
    } else {
      YAML::Node child = current[keys[i]];
      if (!child || child.IsNull()) {
        current[keys[i]] = YAML::Node(YAML::NodeType::Map);
        child.reset(current[keys[i]]);
        // A section this option created: what is wrong with it (an unknown
        // key, a key it lacks) is the option's doing, not the file's.
        source.mark_override(prefix, option);
      }
      current.reset(child);
    }
  }
  source.mark_override(path, option);
}

}  // namespace trainsim::platforms
