#pragma once
// The folder of one run's outputs, completed in one last step so that a
// reader can tell a finished run from an interrupted one:
//
//   RunFolder folder(dir);      run.complete removed: the folder is unfinished
//   folder.write("summary.json", ...);   each file written atomically
//   ...
//   folder.complete();          earlier runs' leftovers removed, then
//                               run.complete written, listing every file
//
// A kill -9 at any moment leaves either the previous run's complete folder
// (before the constructor) or a folder without run.complete. Every file in
// it is whole (atomic_file.hpp), but an unfinished folder may mix files of
// both runs. README "Outputs" and docs/outputs.md say what a reader checks.
#include <filesystem>
#include <functional>
#include <iosfwd>
#include <string>
#include <vector>

namespace trainsim::analysis {

// Written last: {"schema": "trainsim.outputs/1", "files": {name: bytes, ...}, "folders": [...]}.
inline constexpr const char* kRunCompleteFile = "run.complete";

class RunFolder {
 public:
  // Creates `dir` if needed and marks it unfinished (removes run.complete
  // and the temporary files of a killed writer). Throws
  // platforms::InputError when the folder cannot be created.
  explicit RunFolder(std::filesystem::path dir);
  RunFolder(const RunFolder&) = delete;
  RunFolder& operator=(const RunFolder&) = delete;

  const std::filesystem::path& dir() const { return dir_; }
  // Writes `name` atomically and adds it to the run's files.
  void write(const std::string& name, const std::function<void(std::ostream&)>& write);
  // Adds a file already in the folder that belongs to this run (the
  // run.trainsim that `trainsim report` read), or a sub-folder another
  // process completed (the even split of `run --balance auto`).
  void keep(const std::string& name);
  // The run's files and folders, in the order written or kept.
  const std::vector<std::string>& entries() const { return entries_; }
  // Removes every trainsim output that an earlier run left and this one did
  // not write (report.html without --html, run.trainsim of another run, an
  // even/ run folder without --balance); other files are left alone and not
  // listed. Then writes run.complete.
  void complete();

 private:
  std::filesystem::path dir_;
  std::vector<std::string> entries_;
};

// Whether `dir` holds a completed run (run.complete is there).
bool run_folder_complete(const std::filesystem::path& dir);

}  // namespace trainsim::analysis
