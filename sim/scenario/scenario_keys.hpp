#pragma once
// Every key of the scenario format, section by section, as data
// (platforms/key_table.hpp): the section readers read through MapReaders
// that consult these tables, and docs/schema/scenario.schema.json is
// generated from them (sim/scenario/json_schema.hpp, `trainsim schema`).
// A key added to a reader but not here fails every test that reads it.
#include "platforms/key_table.hpp"

namespace trainsim::scenario {

// The document: name, description, seed, cluster, model, plan,
// perturbations, workload (and the study sections `trainsim run` refuses).
const platforms::KeyTable& scenario_keys();

}  // namespace trainsim::scenario
