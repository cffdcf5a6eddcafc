#pragma once
// The points of a study: the expansion of its axes, each point's scenario
// resolved and checked by the scenario loader before anything runs. A point
// whose plan cannot run (sim/scenario/infeasible_plan.hpp) is dropped with its reason;
// a point with malformed input stops the study, since that is a mistake in
// the study file rather than a what-if that happens not to work.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis/studies/results_table.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/study/study_file.hpp"

namespace trainsim::sim {

// Mixed-radix position of every point: one value index per axis, first axis
// slowest. Throws InputError for more than kMaxStudyPoints points.
std::vector<std::vector<std::size_t>> expand_axes(const std::vector<Axis>& axes);
inline constexpr std::size_t kMaxStudyPoints = 1'000'000;

struct StudyPoint {
  std::size_t index = 0;
  std::string id;                      // zero-padded index: the folder name under points/
  nlohmann::ordered_json parameters;   // column -> value
  std::string label;                   // "plan.tp=2 plan.pp=4", for progress lines
  std::string scenario_yaml;           // the resolved scenario (empty when dropped)
  std::optional<std::string> dropped;  // "invalid_plan: <the loader's message>"
};

// Expands, resolves and checks every point. `overrides` (--set KEY=VALUE)
// apply to every point and may not touch a swept key. `load` says how each
// point is checked (`check_memory = false`: --allow-oom keeps plans that do
// not fit). Throws InputError.
std::vector<StudyPoint> prepare_points(const StudyFile& study, const std::vector<std::string>& overrides,
                                       const scenario::LoadOptions& load = {});

// Narrows the study to a subset (`trainsim sweep --only COLUMN=V1,V2`): each
// entry keeps, on the axis that defines COLUMN (a swept key, or `variant`),
// only the values listed (compared as written in the study file: `8`,
// `dgx-h100-ndr`, a variant's name); on a zip group the entries whose value
// of that key is listed. Throws InputError naming the option when COLUMN is
// not a parameter of the study or a value is not one of its values.
void narrow_study(StudyFile& study, const std::vector<std::string>& only);

// A fingerprint of the whole study (every point's id, scenario or reason):
// shards of one study share it, so merge can tell them from another study's.
std::string study_fingerprint(const std::vector<StudyPoint>& points);

// Stable shard assignment: point i belongs to shard i mod count.
inline bool in_shard(std::size_t index, const analysis::ShardInfo& shard) {
  return index % static_cast<std::size_t>(shard.count) == static_cast<std::size_t>(shard.index);
}

// Parses "I/N" (0 <= I < N). Throws InputError naming the option.
analysis::ShardInfo parse_shard(const std::string& text);

// A YAML value as a results value: scalars through parameter_value, lists
// and maps as JSON.
nlohmann::ordered_json yaml_to_json(const YAML::Node& node);

}  // namespace trainsim::sim
