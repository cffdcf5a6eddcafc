#pragma once
// Runs the real trainsim binary, as a user would, and captures what it says.
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace trainsim::testing {

struct CliResult {
  int status = -1;
  std::string out;
  std::string err;
};

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

// A fresh, empty directory under the system temp dir.
inline std::filesystem::path fresh_dir(const std::string& name) {
  const auto dir =
      std::filesystem::temp_directory_path() / ("trainsim-test-" + name + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

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

}  // namespace trainsim::testing
