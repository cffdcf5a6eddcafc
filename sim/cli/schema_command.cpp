#include "sim/cli/schema_command.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <iostream>

#include "platforms/input_error.hpp"
#include "platforms/input_file.hpp"
#include "platforms/problem_list.hpp"
#include "platforms/yaml_document.hpp"
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
    // Read once, by the reader every command uses (a folder or a FIFO is
    // refused, not opened), then checked as the text that was read.
    const std::string text =
        platforms::read_input_file(file, "scenario or study file", platforms::kMaxYamlInputBytes);
    const YAML::Node root = platforms::load_yaml_document(text, file);
    if (root.IsMap() && (root["sweep"] || root["variants"])) {
      auto study = sim::parse_study_text(text, file);
      sim::prepare_points(study, {});
    } else {
      scenario::parse_scenario_text(text, file);
    }
  } catch (const platforms::InputError& e) {
    return platforms::printed_problems(e);
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
