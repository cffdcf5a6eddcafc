// The key tables (sim/scenario/scenario_keys.cpp, sim/study/study_keys.cpp)
// are the one description of the formats: the loader reads through them and
// the JSON Schemas are generated from them. A reader that reads a key the
// table lacks throws at once (std::logic_error); this test pins the other
// direction: every key a table declares is read by some reader, found by
// loading every shipped scenario and study and every fixture. A key added to
// a table and to no reader (the schema would accept what the loader refuses)
// fails here, with its name.
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "platforms/input_error.hpp"
#include "platforms/yaml_reader.hpp"
#include "sim/scenario/scenario.hpp"
#include "sim/scenario/scenario_keys.hpp"
#include "sim/study/study_file.hpp"
#include "sim/study/study_keys.hpp"
#include "sim/study/study_points.hpp"

namespace trainsim::sim {
namespace {

namespace fs = std::filesystem;

std::set<std::pair<const platforms::KeyTable*, std::string>>& read_keys() {
  static std::set<std::pair<const platforms::KeyTable*, std::string>> keys;
  return keys;
}

void record(const platforms::KeyTable& table, std::string_view key) {
  read_keys().emplace(&table, std::string(key));
}

// Every table reachable from `table`, with the dotted path to it.
void collect(const platforms::KeyTable& table, const std::string& path,
             std::vector<std::pair<const platforms::KeyTable*, std::string>>& out,
             std::set<const platforms::KeyTable*>& seen) {
  if (!seen.insert(&table).second)
    return;
  out.emplace_back(&table, path);
  for (const auto& key : table.keys)
    if (key.fields != nullptr)
      collect(*key.fields, path.empty() ? std::string(key.name) : path + "." + std::string(key.name), out,
              seen);
}

// Loads a file as `trainsim sweep` or `run` would; bad files count too (their
// keys are read before the problems are reported).
void load(const fs::path& file) {
  const auto quietly = [](const auto& read) {
    try {
      read();
    } catch (const platforms::InputError&) {
    } catch (const YAML::Exception&) {
    }
  };
  bool study = false;
  quietly([&] {
    const YAML::Node root = YAML::LoadFile(file.string());
    study = root.IsMap() && (root["sweep"] || root["variants"]);
  });
  if (study)  // as `trainsim sweep` reads it
    quietly([&] { prepare_points(read_study_file(file.string()), {}); });
  // As `trainsim run` reads it (a study: refused, naming its sections).
  quietly([&] { scenario::load_scenario(file.string()); });
}

std::vector<fs::path> yaml_files_under(const fs::path& folder) {
  std::vector<fs::path> files;
  for (const auto& entry : fs::recursive_directory_iterator(folder))
    if (entry.is_regular_file() && entry.path().extension() == ".yaml")
      files.push_back(entry.path());
  return files;
}

TEST(KeyTables, EveryDeclaredKeyIsReadBySomeReader) {
  platforms::observe_key_reads(record);
  std::size_t files = 0;
  for (const char* folder : {"scenarios", "tests/fixtures"})
    for (const auto& file : yaml_files_under(fs::path(TRAINSIM_SOURCE_DIR) / folder)) {
      load(file);
      ++files;
    }
  platforms::observe_key_reads(nullptr);
  ASSERT_GT(files, 20u);

  std::vector<std::pair<const platforms::KeyTable*, std::string>> tables;
  std::set<const platforms::KeyTable*> seen;
  collect(scenario::scenario_keys(), "", tables, seen);
  collect(sweep_keys(), "sweep", tables, seen);
  collect(plot_keys(), "sweep.plots.N", tables, seen);
  std::vector<std::string> unread;
  for (const auto& [table, path] : tables)
    for (const auto& key : table->keys)
      if (read_keys().count({table, std::string(key.name)}) == 0)
        unread.push_back(path.empty() ? std::string(key.name) : path + "." + std::string(key.name));
  EXPECT_TRUE(unread.empty()) << "declared in a key table, read by no reader on " << files
                              << " files (a reader lost the key, or no file exercises it: add one to "
                                 "tests/fixtures/schema/good/):\n  "
                              << [&] {
                                   std::string list;
                                   for (const auto& k : unread)
                                     list += k + "\n  ";
                                   return list;
                                 }();
}

}  // namespace
}  // namespace trainsim::sim
