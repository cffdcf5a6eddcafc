#pragma once
// The scratch root of a test process: every folder a test asks for
// (fresh_dir, files.hpp) lives in <temp>/trainsim-test-<pid>/, and the root
// is removed when the process exits normally (return from main, exit()),
// so the folders of a passing or failing test never pile up.
//
//   /tmp/trainsim-test-4242/          removed when process 4242 exits
//     cli-io/  run-summary/ ...        fresh_dir("cli-io"), ...
//
// TRAINSIM_KEEP_TEST_DIRS=1 keeps it (for debugging; the root then holds a
// file KEEP). A process killed by a signal (a ctest timeout) cannot remove
// its root; the next test process that makes one removes the roots of
// processes that no longer exist, KEEP ones aside.
//
// The root belongs to the process that made it: a child of fork() that asks
// for a folder gets its own root, and exiting never removes another
// process's.
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

namespace trainsim::testing {

inline bool keep_test_dirs() {
  const char* keep = std::getenv("TRAINSIM_KEEP_TEST_DIRS");
  return keep != nullptr && std::string(keep) != "" && std::string(keep) != "0";
}

// Removes <temp>/trainsim-test-<pid> folders whose process is gone and that
// hold no KEEP file. Other names (and live processes' roots) are left alone.
inline void remove_orphaned_scratch_roots(const std::filesystem::path& temp) {
  namespace fs = std::filesystem;
  const std::string prefix = "trainsim-test-";
  std::error_code ec;
  for (fs::directory_iterator it(temp, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0 || name.size() == prefix.size() || name.size() > prefix.size() + 9)
      continue;
    const std::string digits = name.substr(prefix.size());
    if (digits.find_first_not_of("0123456789") != std::string::npos)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(digits));
    if (pid <= 0 || pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH)
      continue;  // alive, or not ours to judge (EPERM)
    std::error_code ignored;
    if (!fs::is_directory(it->path(), ignored) || fs::exists(it->path() / "KEEP", ignored))
      continue;
    // Claimed by an atomic rename before it is removed: test processes that
    // start together (ctest -j) all find the same orphans, and two
    // remove_all walking one tree while it vanishes crashed one of them
    // (a SEGFAULT in kineto_cli_tests after a killed run left its roots).
    // Only the process whose rename succeeds removes the folder; the new
    // name does not match the pattern above.
    const fs::path claimed = temp / ("trainsim-reaped-" + std::to_string(::getpid()) + "-" + digits);
    fs::rename(it->path(), claimed, ignored);
    if (!ignored)
      fs::remove_all(claimed, ignored);
  }
}

class ScratchRoot {
 public:
  ScratchRoot() = default;
  ScratchRoot(const ScratchRoot&) = delete;
  ScratchRoot& operator=(const ScratchRoot&) = delete;
  ~ScratchRoot() {
    if (owner_ != ::getpid() || path_.empty() || keep_)
      return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }

  // The root of the calling process, made on first use.
  const std::filesystem::path& path() {
    if (owner_ != ::getpid()) {
      owner_ = ::getpid();
      const auto temp = std::filesystem::temp_directory_path();
      remove_orphaned_scratch_roots(temp);
      path_ = temp / ("trainsim-test-" + std::to_string(owner_));
      keep_ = keep_test_dirs();
      std::filesystem::create_directories(path_);
      if (keep_)
        std::ofstream(path_ / "KEEP") << "TRAINSIM_KEEP_TEST_DIRS was set: this folder is not removed\n";
    }
    return path_;
  }

 private:
  pid_t owner_ = 0;
  std::filesystem::path path_;
  bool keep_ = false;
};

// The one root of this process; destroyed (and removed) at exit.
inline ScratchRoot& scratch_root() {
  static ScratchRoot root;
  return root;
}

}  // namespace trainsim::testing
