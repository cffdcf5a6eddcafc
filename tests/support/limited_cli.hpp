#pragma once
// The real trainsim binary under a resource limit the shell sets before it
// execs trainsim: `ulimit -v` (address space, KiB) for the memory tests,
// `ulimit -f` (file size, 512-byte blocks in /bin/sh) with SIGXFSZ ignored
// for a disk that fills up (a write past the limit fails with EFBIG, as a
// full disk fails with ENOSPC, without a filesystem of its own or root).
#include <string>
#include <vector>

#include "support/cli.hpp"

namespace trainsim::testing {

inline CliResult run_cli_limited(const std::string& limits, const std::vector<std::string>& args,
                                 const std::string& cwd = TRAINSIM_SOURCE_DIR) {
  const auto dir = fresh_dir("cli-limited-io");
  std::string inner = limits;
  inner.append("; exec ").append(shell_quote(TRAINSIM_EXE));
  for (const auto& a : args)
    inner.append(" ").append(shell_quote(a));
  std::string cmd = "cd ";
  cmd.append(shell_quote(cwd)).append(" && /bin/sh -c ").append(shell_quote(inner));
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

// A disk with room for files of at most `kib` KiB each.
inline std::string file_size_limit_kib(int kib) {
  return "ulimit -f " + std::to_string(2 * kib) + "; trap '' XFSZ";
}

// An address space of `kib` KiB.
inline std::string address_space_limit_kib(int kib) {
  return "ulimit -v " + std::to_string(kib);
}

}  // namespace trainsim::testing
