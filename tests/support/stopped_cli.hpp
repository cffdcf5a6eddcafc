#pragma once
// Starts the real trainsim binary in the background, for the tests that stop
// it (kill -9, signals), and checks what it leaves behind.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "support/files.hpp"

namespace trainsim::testing {

struct StartOptions {
  // stderr goes here (empty: /dev/null); stdout to /dev/null.
  std::filesystem::path err;
  // Or stdout / stderr on these descriptors (a pipe), when not -1.
  int out_fd = -1;
  int err_fd = -1;
  // Signals the process starts with ignored, as a shell's background job
  // does (SIGINT); every other one of the four at its default, whatever the
  // test was started with.
  std::vector<int> ignored;
};

// `trainsim ARGS` in the source folder, in a process group of its own (so a
// test can tell whether any of its children outlived it: no_process_left).
inline pid_t start_trainsim(const std::vector<std::string>& args, const StartOptions& options = {}) {
  std::vector<std::string> all{TRAINSIM_EXE};
  all.insert(all.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& a : all)
    argv.push_back(a.data());
  argv.push_back(nullptr);
  const std::string err = options.err.empty() ? std::string("/dev/null") : options.err.string();
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setpgid(0, 0);
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGPIPE})
      ::signal(s, SIG_DFL);
    for (int s : options.ignored)
      ::signal(s, SIG_IGN);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    if (::chdir(TRAINSIM_SOURCE_DIR) != 0)
      ::_exit(127);
    const int null_fd = ::open("/dev/null", O_RDWR);
    const int err_fd = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (null_fd < 0 || err_fd < 0)
      ::_exit(127);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(options.out_fd >= 0 ? options.out_fd : null_fd, STDOUT_FILENO);
    ::dup2(options.err_fd >= 0 ? options.err_fd : err_fd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

// The exit status, or 128 + N when killed by signal N.
inline int wait_for(pid_t pid) {
  int raw = 0;
  ::waitpid(pid, &raw, 0);
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
}

// Waits for `pid`; its exit status, or 1000 + N when killed by signal N
// (what trainsim's signal policy must never let happen).
inline int wait_for_exit(pid_t pid) {
  int raw = 0;
  ::waitpid(pid, &raw, 0);
  return WIFEXITED(raw) ? WEXITSTATUS(raw) : 1000 + WTERMSIG(raw);
}

// Whether `pid` has a handler for `signal` yet (/proc/PID/status, SigCgt):
// trainsim's main() installs its policy before anything else, so instants
// counted from then fall inside the command, not in the loader.
inline bool catches(pid_t pid, int signal) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(status, line);)
    if (line.rfind("SigCgt:", 0) == 0)
      return ((std::stoull(line.substr(7), nullptr, 16) >> (signal - 1)) & 1) != 0;
  return false;
}

// Waits (up to a minute) until `pid` has installed its signal policy.
inline bool wait_until_policy_installed(pid_t pid) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!catches(pid, SIGTERM)) {
    int raw = 0;
    if (std::chrono::steady_clock::now() > deadline || ::waitpid(pid, &raw, WNOHANG) != 0)
      return false;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
  return true;
}

// After the process group's leader (start_trainsim) was reaped: whether no
// process of its group remains (its children were stopped and reaped).
inline bool no_process_left(pid_t group) {
  return ::kill(-group, 0) != 0 && errno == ESRCH;
}

// No ".partial" file or folder anywhere under `dir`.
inline void expect_no_partial_files(const std::filesystem::path& dir, const std::string& when) {
  std::error_code ec;
  for (std::filesystem::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
    EXPECT_NE(it->path().extension(), ".partial") << it->path() << " " << when;
}

// Every visible file of a run folder is whole: the JSON ones parse, and a
// complete folder holds what run.complete lists, at the listed sizes.
inline void expect_consistent(const std::filesystem::path& out, const std::string& when,
                              std::size_t min_files = 11) {
  namespace fs = std::filesystem;
  for (const char* name : {"summary.json", "trace.json"})
    if (fs::exists(out / name)) {
      EXPECT_TRUE(nlohmann::json::accept(read_file(out / name))) << out / name << " " << when;
    }
  if (!fs::exists(out / "run.complete"))
    return;  // marked unfinished
  const auto mark = nlohmann::json::parse(read_file(out / "run.complete"));
  ASSERT_GE(mark["files"].size(), min_files) << when;
  for (const auto& [name, bytes] : mark["files"].items()) {
    ASSERT_TRUE(fs::exists(out / name)) << name << " " << when;
    EXPECT_EQ(fs::file_size(out / name), bytes.get<std::uintmax_t>()) << name << " " << when;
  }
}

}  // namespace trainsim::testing
