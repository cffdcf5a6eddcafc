#pragma once
// Runs the real trainsim binary, as a user would, and captures what it says.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support/files.hpp"

namespace trainsim::testing {

struct CliResult {
  int status = -1;
  std::string out;
  std::string err;
};

inline CliResult run_cli(const std::vector<std::string>& args, const std::string& cwd = TRAINSIM_SOURCE_DIR) {
  const auto dir = fresh_dir("cli-io");
  // Built with append() only: GCC 12 warns falsely (-Wrestrict, bug 105329)
  // on "literal" + std::string temporaries.
  std::string cmd = "cd ";
  cmd.append(shell_quote(cwd)).append(" && ").append(shell_quote(TRAINSIM_EXE));
  for (const auto& a : args)
    cmd.append(" ").append(shell_quote(a));
  cmd.append(" >").append(shell_quote((dir / "out").string()));
  cmd.append(" 2>").append(shell_quote((dir / "err").string())).append(" </dev/null");
  const int raw = std::system(cmd.c_str());
  CliResult r;
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  r.out = read_file(dir / "out");
  r.err = read_file(dir / "err");
  std::filesystem::remove_all(dir);
  return r;
}

inline std::filesystem::path write_temp_file(const std::string& name, const std::string& text) {
  const auto path = fresh_dir("file") / name;
  std::ofstream(path) << text;
  return path;
}

// What every refused input must look like: exit status 1, `detail` in the
// message, no "internal error", no SimGrid backtrace, and nothing raw on
// stderr (a name or value is quoted escaped, docs/reliability.md).
inline void expect_refused(const CliResult& r, const std::string& detail) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_NE(r.err.find(detail), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("internal error"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Backtrace"), std::string::npos) << r.err;
  for (char c : r.err)
    EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << "raw control character in: " << r.err;
}

}  // namespace trainsim::testing
