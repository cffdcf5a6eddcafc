#pragma once
// A study file: a scenario plus a `sweep` section (grid and zip over dotted
// scenario keys, and the plots to draw) and/or a `variants` section (named
// sets of overrides). The study's points are the cartesian product of its
// axes, first axis slowest:
//
//   variants (one axis, column "variant")
//     x grid keys, in file order (one axis each)
//       x zip groups, in file order (one axis each; its lists move together)
//
//   sweep:
//     grid:                       # cartesian product
//       cluster.nodes: [1, 2, 4]
//       plan.tp: [1, 2, 4, 8]
//     zip:                        # parallel lists of equal length (or a list of such maps)
//       plan.micro_batch_size: [1, 2]
//       plan.global_batch_size: [32, 64]
//     plots:
//       - {y: tokens_per_s_per_gpu, x: cluster.gpus, lines: plan.tp, log_x: true}
//   variants:
//     1f1b: {plan.schedule: 1f1b}
//     gpipe: {plan.schedule: gpipe}
#include <yaml-cpp/yaml.h>

#include <string>
#include <vector>

#include "analysis/studies/results_plot.hpp"

namespace trainsim::sim {

// One value of one dotted scenario key. `value` is a node of the study file's
// document, so an error about it names the study file's line.
struct Assignment {
  std::string key;
  YAML::Node value;
};

struct AxisValue {
  std::string label;  // the variant's name; empty on grid and zip axes
  std::vector<Assignment> assignments;
};

struct Axis {
  // The results column of a labelled axis ("variant"); empty when the
  // columns are the swept keys themselves.
  std::string column;
  std::vector<std::string> keys;  // every key the axis sets
  std::vector<AxisValue> values;
};

struct StudyFile {
  std::string path;
  std::string text;  // each point re-parses it, so that its nodes keep their file:line marks
  YAML::Node document;
  std::string name;  // `name`, or the file's stem
  std::string description;
  bool has_sweep = false;
  bool has_variants = false;
  std::vector<Axis> axes;
  std::vector<analysis::PlotSpec> plots;
};

// Reads and checks the study sections (the scenario part is checked per
// point by the scenario loader). Throws InputError listing every problem.
StudyFile read_study_file(const std::string& path);
// The same from text (tests).
StudyFile parse_study_text(const std::string& text, const std::string& path);

// The results columns the axes define, in axis order.
std::vector<std::string> parameter_names(const StudyFile& study);

// The document of a study without its study sections: the scenario a point
// starts from (freshly parsed, so a point may edit it).
YAML::Node base_document(const StudyFile& study);

// Sets a dotted key in a scenario document, creating maps on the way. Fails
// (returns false) when a value on the path is not a map.
bool set_dotted(YAML::Node& root, const std::string& key, const YAML::Node& value);

}  // namespace trainsim::sim
