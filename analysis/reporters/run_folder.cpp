#include "analysis/reporters/run_folder.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <nlohmann/json.hpp>
#include <ostream>

#include "analysis/reporters/atomic_file.hpp"
#include "platforms/input_error.hpp"
#include "platforms/interruption.hpp"

namespace trainsim::analysis {
namespace fs = std::filesystem;

namespace {

// Every file a run's outputs can hold (docs/outputs.md), and the folder of
// the even split of `run --balance auto`.
constexpr std::array<const char*, 12> kOutputFiles{
    "summary.json", "per_gpu.csv", "per_stage.csv", "links.csv",  "critical_path.csv", "timeline.csv",
    "trace.json",   "gantt.svg",   "bubbles.svg",   "memory.svg", "report.html",       "run.trainsim"};
constexpr const char* kEvenFolder = "even";

bool listed(const std::vector<std::string>& entries, const std::string& name) {
  return std::find(entries.begin(), entries.end(), name) != entries.end();
}

}  // namespace

RunFolder::RunFolder(fs::path dir) : dir_(std::move(dir)) {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec)
    throw platforms::InputError(
        {fmt::format("{}: cannot create the output directory: {}", dir_.string(), ec.message())});
  fs::remove(dir_ / kRunCompleteFile, ec);
  if (ec)
    throw platforms::InputError({fmt::format("{}: cannot remove the completion mark of an earlier run: {}",
                                             (dir_ / kRunCompleteFile).string(), ec.message())});
  remove_partial_files(dir_);
  platforms::set_interruption_note(fmt::format(
      "{} is unfinished (no run.complete; the files in it are whole, some may be an earlier run's): run the "
      "command again",
      dir_.string()));
}

void RunFolder::write(const std::string& name, const std::function<void(std::ostream&)>& write) {
  write_file_atomically(dir_ / name, write);
  entries_.push_back(name);
}

void RunFolder::keep(const std::string& name) {
  entries_.push_back(name);
}

void RunFolder::complete() {
  std::error_code ec;
  for (const char* name : kOutputFiles)
    if (!listed(entries_, name))
      fs::remove(dir_ / name, ec);
  // An even/ folder is removed only when it is a run folder of trainsim's.
  if (!listed(entries_, kEvenFolder) && (fs::exists(dir_ / kEvenFolder / kRunCompleteFile, ec) ||
                                         fs::exists(dir_ / kEvenFolder / "summary.json", ec)))
    fs::remove_all(dir_ / kEvenFolder, ec);

  nlohmann::ordered_json files = nlohmann::ordered_json::object();
  nlohmann::ordered_json folders = nlohmann::ordered_json::array();
  for (const auto& name : entries_) {
    const fs::path path = dir_ / name;
    if (fs::is_directory(path, ec))
      folders.push_back(name);
    else
      files[name] = fs::file_size(path, ec);
  }
  const nlohmann::ordered_json mark = {
      {"schema", "trainsim.outputs/1"}, {"files", files}, {"folders", folders}};
  write_file_atomically(dir_ / kRunCompleteFile, [&](std::ostream& out) { out << mark.dump(2) << '\n'; });
  platforms::set_interruption_note(fmt::format("the outputs in {} are complete", dir_.string()));
}

bool run_folder_complete(const fs::path& dir) {
  std::error_code ec;
  return fs::is_regular_file(dir / kRunCompleteFile, ec);
}

}  // namespace trainsim::analysis
