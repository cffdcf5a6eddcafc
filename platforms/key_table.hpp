#pragma once
// The keys of a YAML input format, as data: each key's name, type, unit,
// range and words. The section readers read through a MapReader that
// consults its table on every access (platforms/yaml_reader.hpp): a reader
// asking for a key the table lacks, or with another type, range or words,
// is an internal error the tests catch at once. So the table is what the
// loader reads, and the JSON Schema generated from it (sim/scenario/
// json_schema.hpp) is what the loader accepts, minus the rules that span
// keys.
#include <limits>
#include <string_view>
#include <vector>

namespace trainsim::platforms {

enum class ValueType {
  text,     // any string
  label,    // a name (platforms/names.hpp): 1 to 128 of [A-Za-z0-9._-], not starting with '.' or '-'
  choice,   // one of `words`
  integer,  // in [min, max]
  number,   // in [min, max]
  boolean,
  bytes,         // quantities, through platforms/units.hpp: "80GiB"
  bandwidth,     // "400Gbps", "900GBps"
  duration,      // "1.5us"
  flop_rate,     // "312TFLOPS"
  power,         // "700W"
  integer_list,  // a list of integers in [min, max]
  map,           // a map of `fields`
  map_list,      // a list of maps of `fields`
  any,           // any YAML value, read by hand (study axes, plot options)
};

struct KeyTable;

struct KeySpec {
  std::string_view name;
  ValueType type = ValueType::text;
  std::string_view doc;  // one line: what the key means
  double min = -std::numeric_limits<double>::infinity();
  double max = std::numeric_limits<double>::infinity();
  // choice: the words. Other types: words also accepted instead of a value
  // ("auto" for plan.dp, "none" for a capacity factor).
  std::vector<std::string_view> words;
  // choice: the words match whatever their case (GPU names).
  bool any_case = false;
  // map, map_list: the keys of the map. For another type, a map of these
  // keys is accepted instead (cluster.gpu: a name, or a map defining a GPU).
  const KeyTable* fields = nullptr;
  bool required = false;
  // any: the JSON Schema of the value, as JSON text, for the keys a reader
  // takes apart by hand (a list of link names); "{dotted_keys}" in it
  // stands for the schema of the format's dotted keys (study axes).
  std::string_view json_shape;
  // integer_list: one number alone also stands for a one-item list
  // (perturbations.slow_gpus.0.stages: 3).
  bool one_or_list = false;
  // The reader's range is narrower and depends on other keys (a perturbation's
  // dp_rank below plan.dp): the table gives the widest range.
  bool range_depends_on_other_keys = false;
  // text: a path, relative to the folder of the file it is written in
  // unless absolute (workload.chakra). A document written elsewhere (a
  // study's points/ID/scenario.yaml) anchors it first
  // (sim/scenario/relative_paths.hpp).
  bool relative_to_file = false;
};

struct KeyTable {
  std::string_view name;  // for messages and the schema's titles
  std::vector<KeySpec> keys;
  const KeySpec* find(std::string_view key) const;
};

std::string_view to_string(ValueType type);

}  // namespace trainsim::platforms
