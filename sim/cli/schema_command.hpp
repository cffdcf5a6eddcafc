#pragma once
// `trainsim schema [--study]`: the JSON Schema (draft 2020-12) of the
// scenario or study format, generated from the loader's key tables
// (sim/scenario/json_schema.hpp); docs/schema/ ships its output.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace trainsim::cli {

struct SchemaOptions {
  bool study = false;
  // --check FILE...: load each scenario or study file as run / sweep would,
  // without simulating, and report every problem (exit 1 when any).
  std::vector<std::string> check;
};

// Registers the subcommand; `options` must outlive parsing.
CLI::App* add_schema_command(CLI::App& app, SchemaOptions& options);
// Returns the process exit status.
int schema_command(const SchemaOptions& options);

}  // namespace trainsim::cli
