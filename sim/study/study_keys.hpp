#pragma once
// The keys of a study file (platforms/key_table.hpp): a scenario's keys plus
// `sweep` (grid, zip, plots) and `variants`. The study reader reads `sweep`
// and each plot through MapReaders that consult these tables, and
// docs/schema/study.schema.json is generated from them (`trainsim schema
// --study`). Grid, zip and variant keys are dotted scenario keys.
#include <nlohmann/json.hpp>

#include "platforms/key_table.hpp"

namespace trainsim::sim {

const platforms::KeyTable& study_keys();
const platforms::KeyTable& sweep_keys();
const platforms::KeyTable& plot_keys();

// The study file's JSON Schema: a scenario with `sweep` and / or `variants`.
nlohmann::ordered_json study_schema();

}  // namespace trainsim::sim
