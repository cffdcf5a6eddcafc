#include "sim/study/point_runner.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <ostream>
#include <sstream>
#include <thread>

#include "platforms/interruption.hpp"

namespace trainsim::sim {
namespace fs = std::filesystem;
namespace {

// --keep summary: of a finished point, only what the study needs (its
// summary.json, and scenario.yaml to resume) and run.log stay; every other
// output of `trainsim run` (CSVs, trace, plots, run.trainsim) goes.
void keep_only_summary(const fs::path& dir) {
  std::vector<fs::path> extra;
  for (const auto& entry : fs::directory_iterator(dir)) {
    const auto name = entry.path().filename().string();
    if (name != "summary.json" && name != "scenario.yaml" && name != "run.log")
      extra.push_back(entry.path());
  }
  for (const auto& path : extra)
    fs::remove_all(path);
}

using nlohmann::ordered_json;
using Clock = std::chrono::steady_clock;

std::string read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

void write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out)
    throw std::runtime_error(fmt::format("cannot write {}", path.string()));
}

// summary.json of a complete point folder, or nullopt.
std::optional<ordered_json> read_summary(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "summary.json", ec))
    return std::nullopt;
  try {
    auto j = ordered_json::parse(read_text(dir / "summary.json"));
    if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string() ||
        j["schema"].get<std::string>().rfind("trainsim.summary/", 0) != 0)
      return std::nullopt;
    return j;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

std::optional<ordered_json> finished_summary(const fs::path& dir, const std::string& scenario_yaml) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "scenario.yaml", ec) || read_text(dir / "scenario.yaml") != scenario_yaml)
    return std::nullopt;
  return read_summary(dir);
}

// The child's own error lines ("error: ...", "internal error: ..."), else
// its last line.
std::string child_error(const fs::path& log_file, int exit_status) {
  std::istringstream log(read_text(log_file));
  std::string line, last;
  std::vector<std::string> errors;
  while (std::getline(log, line)) {
    if (line.rfind("error: ", 0) == 0)
      errors.push_back(line.substr(7));
    else if (line.rfind("internal error: ", 0) == 0)
      errors.push_back(line);
    if (!line.empty())
      last = line;
  }
  std::string text;
  for (const auto& e : errors)
    text.append(text.empty() ? "" : "; ").append(e);
  if (text.empty())
    text = last;
  std::string status = exit_status > 128 ? fmt::format("killed by signal {}", exit_status - 128)
                                         : fmt::format("exit status {}", exit_status);
  return text.empty() ? status : fmt::format("{} ({})", text, status);
}

void replace_dir(const fs::path& from, const fs::path& to) {
  fs::remove_all(to);
  fs::rename(from, to);
}

struct Running {
  std::size_t job = 0;
  Clock::time_point start;
};

class Pool {
 public:
  Pool(const std::vector<PointJob>& jobs, const RunnerOptions& options, std::vector<PointOutcome>& outcomes,
       Progress& progress)
      : jobs_(jobs), options_(options), outcomes_(outcomes), progress_(progress) {}

  void launch(std::size_t j);
  // Handles one exited child; `interrupting`: keep what finished, drop the rest.
  void reaped(pid_t pid, int raw_status, bool interrupting);
  // A SIGINT (SIGTERM, SIGHUP, SIGPIPE) received while the pool runs, or 0.
  int interrupted() const { return deferred_.pending(); }
  // Back to the policy's immediate stop; the signal received before, or 0.
  int end_deferral() { return deferred_.end(); }
  std::map<pid_t, Running>& running() { return running_; }

 private:
  fs::path partial(std::size_t j) const { return options_.root / (jobs_[j].id + ".partial"); }
  fs::path final_dir(std::size_t j) const { return options_.root / jobs_[j].id; }

  const std::vector<PointJob>& jobs_;
  const RunnerOptions& options_;
  std::vector<PointOutcome>& outcomes_;
  Progress& progress_;
  std::map<pid_t, Running> running_;
  // While the pool runs, a signal is only recorded (the handler cannot
  // remove the .partial folders nor keep what finished): the polling loop
  // below stops the workers and cleans up (platforms/interruption.hpp).
  platforms::DeferredInterruption deferred_;
};

void Pool::launch(std::size_t j) {
  const fs::path dir = partial(j);
  fs::remove_all(dir);
  fs::create_directories(dir);
  write_text(dir / "scenario.yaml", jobs_[j].scenario_yaml);
  // The point runs inside its folder, so its outputs name their scenario
  // "scenario.yaml" (the file next to them), never the folder's path: a
  // point's bytes do not depend on --out, and do not name the .partial
  // folder that is renamed once it finishes.
  const std::string dir_text = dir.string();
  const std::string log = (dir / "run.log").string();
  std::vector<std::string> args{options_.trainsim_exe, "run", "scenario.yaml", "--out", ".", "--quiet"};
  args.insert(args.end(), options_.run_arguments.begin(), options_.run_arguments.end());
  std::vector<char*> argv;
  for (auto& a : args)
    argv.push_back(a.data());
  argv.push_back(nullptr);

  const pid_t pid = ::fork();
  if (pid < 0)
    throw std::runtime_error(fmt::format("cannot start a worker process: {}", std::strerror(errno)));
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    const int log_fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int null_fd = ::open("/dev/null", O_RDONLY);
    if (log_fd < 0 || null_fd < 0 || ::chdir(dir_text.c_str()) != 0)
      ::_exit(127);
    ::dup2(null_fd, STDIN_FILENO);
    ::dup2(log_fd, STDOUT_FILENO);
    ::dup2(log_fd, STDERR_FILENO);
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  running_[pid] = Running{j, Clock::now()};
  progress_.started();
}

void Pool::reaped(pid_t pid, int raw_status, bool interrupting) {
  // A Ctrl-C reaches the children too; their deaths are not failures.
  interrupting = interrupting || interrupted() != 0;
  const auto it = running_.find(pid);
  if (it == running_.end())
    return;
  const std::size_t j = it->second.job;
  const double wall_s = std::chrono::duration<double>(Clock::now() - it->second.start).count();
  running_.erase(it);
  const fs::path dir = partial(j);
  const int status = WIFEXITED(raw_status) ? WEXITSTATUS(raw_status) : 128 + WTERMSIG(raw_status);
  auto summary = status == 0 ? read_summary(dir) : std::nullopt;
  PointOutcome& outcome = outcomes_[j];
  outcome.wall_s = wall_s;
  if (summary) {
    if (options_.keep == KeepOutputs::summary)
      keep_only_summary(dir);
    replace_dir(dir, final_dir(j));
    outcome.state = PointState::simulated;
    outcome.summary = std::move(*summary);
    progress_.finished(jobs_[j].id, jobs_[j].label, true, wall_s, "");
    return;
  }
  if (interrupting) {
    // Stopped by us: nothing to keep, the point runs again on resume.
    fs::remove_all(dir);
    return;
  }
  outcome.state = PointState::failed;
  outcome.exit_status = status;
  outcome.error = child_error(dir / "run.log", status);
  if (status == 0)
    outcome.error = "the run ended without a complete summary.json";
  if (outcome.exit_status == 0)
    outcome.exit_status = 2;
  // Keep the folder for its run.log, without a summary.json so resume retries it.
  fs::remove(dir / "summary.json");
  replace_dir(dir, final_dir(j));
  progress_.finished(jobs_[j].id, jobs_[j].label, false, wall_s, outcome.error);
}

}  // namespace

Interrupted::Interrupted(int signal, std::size_t finished, std::size_t total)
    : std::runtime_error(fmt::format("interrupted by signal {}", signal)),
      signal_(signal),
      finished_(finished),
      total_(total) {}

std::size_t count_finished(const std::vector<PointJob>& jobs, const fs::path& root) {
  std::size_t n = 0;
  for (const auto& job : jobs)
    n += finished_summary(root / job.id, job.scenario_yaml).has_value();
  return n;
}

std::string current_executable() {
  std::error_code ec;
  const auto exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec)
    throw std::runtime_error(
        fmt::format("cannot find the trainsim binary (/proc/self/exe): {}", ec.message()));
  return exe.string();
}

std::vector<PointOutcome> run_points(const std::vector<PointJob>& jobs, const RunnerOptions& options,
                                     std::ostream& log) {
  fs::create_directories(options.root);
  std::vector<PointOutcome> outcomes(jobs.size());
  std::vector<std::size_t> to_run;
  for (std::size_t j = 0; j < jobs.size(); ++j) {
    // A leftover of an interrupted run is never trusted.
    fs::remove_all(options.root / (jobs[j].id + ".partial"));
    auto summary =
        options.resume ? finished_summary(options.root / jobs[j].id, jobs[j].scenario_yaml) : std::nullopt;
    if (summary) {
      outcomes[j].state = PointState::reused;
      outcomes[j].summary = std::move(*summary);
    } else {
      to_run.push_back(j);
    }
  }
  if (to_run.empty())
    return outcomes;

  Progress progress(log, options.progress, to_run.size());
  Pool pool(jobs, options, outcomes, progress);
  const std::size_t jobs_at_once = static_cast<std::size_t>(std::max(1, options.jobs));
  std::size_t next = 0;
  while ((next < to_run.size() || !pool.running().empty()) && pool.interrupted() == 0) {
    while (pool.running().size() < jobs_at_once && next < to_run.size() && pool.interrupted() == 0)
      pool.launch(to_run[next++]);
    int raw = 0;
    const pid_t pid = ::waitpid(-1, &raw, WNOHANG);
    if (pid > 0) {
      pool.reaped(pid, raw, false);
      continue;
    }
    progress.tick();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (const int signal = pool.interrupted(); signal != 0) {
    // The workers get the same signal (their own handler removes their
    // temporary files and exits 128 + it); their folders go.
    for (const auto& [pid, running] : pool.running())
      ::kill(pid, signal);
    while (!pool.running().empty()) {
      int raw = 0;
      const pid_t pid = ::waitpid(pool.running().begin()->first, &raw, 0);
      if (pid > 0)
        pool.reaped(pid, raw, true);
      else if (errno != EINTR)
        pool.running().erase(pool.running().begin());
    }
  }
  // Also a signal that came after the loop's last look (every worker is
  // reaped by then).
  if (const int signal = pool.end_deferral(); signal != 0) {
    progress.close();
    std::size_t finished = 0;
    for (const auto& o : outcomes)
      finished += o.state != PointState::failed;
    throw Interrupted(signal, finished, jobs.size());
  }
  progress.close();
  return outcomes;
}

}  // namespace trainsim::sim
