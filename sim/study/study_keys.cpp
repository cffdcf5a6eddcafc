#include "sim/study/study_keys.hpp"

#include "sim/scenario/json_schema.hpp"
#include "sim/scenario/scenario_keys.hpp"

namespace trainsim::sim {
namespace {

using platforms::KeySpec;
using platforms::KeyTable;
using T = platforms::ValueType;

// A study axis: dotted scenario keys, each with its list of values.
constexpr std::string_view kAxisShape =
    R"({"type": "object", "minProperties": 1, "propertyNames": "{dotted_keys}",)"
    R"( "additionalProperties": {"type": "array", "minItems": 1}})";

KeySpec key(std::string_view name, T type, std::string_view doc, std::string_view json_shape = {}) {
  KeySpec k;
  k.name = name;
  k.type = type;
  k.doc = doc;
  k.json_shape = json_shape;
  return k;
}
KeySpec required(KeySpec k) {
  k.required = true;
  return k;
}

struct Tables {
  KeyTable plot, sweep, study;
  Tables() {
    plot = {
        "a plot of the study's results",
        {
            required(key("y", T::text, "a results column with numbers")),
            required(key("x", T::text, "a parameter or figure")),
            key("lines", T::any, "a column, or a list of columns: one line per value",
                R"({"anyOf": [{"type": "string"}, {"type": "array", "items": {"type": "string"}, "minItems": 1}]})"),
            key("where", T::any, "only the points with these values",
                R"({"type": "object", "additionalProperties": {"type": ["string", "number", "boolean"]}})"),
            key("log_x", T::boolean, "logarithmic x axis"),
            key("log_y", T::boolean, "logarithmic y axis"),
            key("title", T::text, "the plot's title"),
            key("file", T::label, "the SVG file name in plots/ (a name ending in .svg)"),
        }};
    KeySpec plots = key("plots", T::map_list, "SVG plots drawn after the sweep");
    plots.fields = &plot;
    sweep = {
        "the sweep: axes and plots",
        {
            key("grid", T::any, "cartesian product over dotted scenario keys", kAxisShape),
            key("zip", T::any, "parallel lists of one length (or a list of such groups)",
                R"({"anyOf": [{"$ref": "#/$defs/axis"}, {"type": "array", "items": {"$ref": "#/$defs/axis"}, "minItems": 1}]})"),
            plots,
        }};
    study = scenario::scenario_keys();
    study.name = "a study";
    for (auto& k : study.keys) {
      if (k.name == "sweep") {
        k.type = T::map;
        k.fields = &sweep;
        k.doc = "the sweep: grid and zip axes, plots";
      } else if (k.name == "variants") {
        k.json_shape =
            R"({"type": "object", "minProperties": 1, "additionalProperties":)"
            R"( {"anyOf": [{"type": "object", "propertyNames": "{dotted_keys}"}, {"type": "null"}]}})";
        k.doc = "named sets of overrides: one more axis, column `variant`";
      }
    }
  }
};

const Tables& tables() {
  static const Tables t;
  return t;
}

}  // namespace

const KeyTable& study_keys() {
  return tables().study;
}
const KeyTable& sweep_keys() {
  return tables().sweep;
}
const KeyTable& plot_keys() {
  return tables().plot;
}

nlohmann::ordered_json study_schema() {
  auto schema = scenario::json_schema(study_keys(), "trainsim study", scenario::scenario_keys());
  schema["$defs"]["axis"] = scenario::json_shape_value(kAxisShape);
  // Rules across keys: something to sweep, a sweep with an axis, and a
  // trace instead of model and plan.
  const auto requires_key = [](std::string_view key) {
    nlohmann::ordered_json rule;
    rule["required"] = nlohmann::ordered_json::array({key});
    return rule;
  };
  schema["anyOf"] = nlohmann::ordered_json::array({requires_key("sweep"), requires_key("variants")});
  schema["properties"]["sweep"]["anyOf"] =
      nlohmann::ordered_json::array({requires_key("grid"), requires_key("zip"), requires_key("plots")});
  // A sweep of plots alone draws over the variants: it needs them.
  nlohmann::ordered_json plots_only;
  plots_only["required"] = nlohmann::ordered_json::array({"sweep"});
  plots_only["properties"]["sweep"]["not"]["anyOf"] =
      nlohmann::ordered_json::array({requires_key("grid"), requires_key("zip")});
  schema["allOf"] = nlohmann::ordered_json::array(
      {nlohmann::ordered_json{{"if", plots_only}, {"then", requires_key("variants")}}});
  scenario::add_trace_rule(schema);
  return schema;
}

}  // namespace trainsim::sim
