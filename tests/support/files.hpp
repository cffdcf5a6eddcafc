#pragma once
// Files and folders for tests: read a whole file, quote for a shell, a fresh
// temporary folder (in the process's scratch root, removed at exit:
// scratch_root.hpp).
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/scratch_root.hpp"

namespace trainsim::testing {

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

inline std::string shell_quote(const std::string& s) {
  std::string q = "'";
  for (char c : s)
    q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// A fresh, empty directory <temp>/trainsim-test-<pid>/<name>, removed with
// the scratch root when the process exits (TRAINSIM_KEEP_TEST_DIRS=1 keeps it).
inline std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir = scratch_root().path() / name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace trainsim::testing
