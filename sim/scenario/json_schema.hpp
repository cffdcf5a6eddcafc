#pragma once
// JSON Schema (draft 2020-12) of trainsim's YAML formats, generated from the
// key tables the loader reads through (platforms/key_table.hpp), so that
// editors complete and check what the loader accepts: every key with its
// description, enums for every choice, ranges, quantities as patterns of the
// units platforms/units.hpp parses, no unknown keys. The rules that tie keys
// together (a plan that divides the GPUs) stay the loader's.
// `trainsim schema` prints them; docs/schema/ ships them.
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "platforms/key_table.hpp"

namespace trainsim::scenario {

// The schema of `document`: "{dotted_keys}" in a key's json_shape becomes the
// schema of the dotted keys of `dotted_keys_of` ("plan.tp",
// "cluster.groups.1.nodes": what --set and study axes take). Keys named in
// `leave_out` are left out of the document's properties.
nlohmann::ordered_json json_schema(const platforms::KeyTable& document, std::string_view title,
                                   const platforms::KeyTable& dotted_keys_of,
                                   const std::vector<std::string_view>& leave_out = {});

// A scenario: the scenario keys without the study sections; a `workload`
// excludes `model` and `plan`, which are otherwise required.
nlohmann::ordered_json scenario_schema();

// The one rule across a scenario's top-level keys: a `workload` excludes
// `model` and `plan`, which are otherwise required.
void add_trace_rule(nlohmann::ordered_json& schema);

// A key's json_shape as JSON, "{dotted_keys}" a reference to the schema's
// dotted-key definition.
nlohmann::ordered_json json_shape_value(std::string_view json_shape);

// Every dotted key of a table, maps included ("cluster", "cluster.nic",
// "cluster.nic.bandwidth"); list items as "<key>.N".
std::vector<std::string> dotted_keys(const platforms::KeyTable& table);

}  // namespace trainsim::scenario
