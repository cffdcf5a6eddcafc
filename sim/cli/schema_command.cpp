#include "sim/cli/schema_command.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <iostream>

#include "platforms/input_error.hpp"
#include "sim/scenario/json_schema.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/study/study_file.hpp"
#include "sim/study/study_keys.hpp"
#include "sim/study/study_points.hpp"

namespace trainsim::cli {

CLI::App* add_schema_command(CLI::App& app, SchemaOptions& options) {
  auto* cmd = app.add_subcommand(
      "schema",
      "Print the JSON Schema of the scenario format (or the study format), for editors and validators");
  cmd->add_flag("--study", options.study, "The study format: a scenario with sweep and / or variants");
  cmd->add_option(
      "--check", options.check,
      "Instead: check scenario or study files as run and sweep would (every rule, no simulation)");
  return cmd;
}

namespace {

// A study (sweep or variants at the top) is checked as `trainsim sweep`
// checks it: every point through the loader. Returns the problems.
std::vector<std::string> check_file(const std::string& file) {
  try {
    const YAML::Node root = YAML::LoadFile(file);
    if (root.IsMap() && (root["sweep"] || root["variants"])) {
      auto study = sim::read_study_file(file);
      sim::prepare_points(study, {});
    } else {
      scenario::load_scenario(file);
    }
  } catch (const platforms::InputError& e) {
    return e.problems();
  } catch (const YAML::Exception& e) {
    return {fmt::format("{}:{}:{}: not valid YAML: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg)};
  }
  return {};
}

}  // namespace

int schema_command(const SchemaOptions& options) {
  if (!options.check.empty()) {
    int status = 0;
    for (const auto& file : options.check) {
      const auto problems = check_file(file);
      for (const auto& p : problems)
        std::cerr << "error: " << p << '\n';
      if (problems.empty())
        std::cout << file << ": ok\n";
      else
        status = 1;
    }
    return status;
  }
  const auto schema = options.study ? sim::study_schema() : scenario::scenario_schema();
  std::cout << schema.dump(2) << '\n';
  return 0;
}

}  // namespace trainsim::cli
