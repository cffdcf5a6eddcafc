// SIGINT, SIGTERM and SIGHUP at spread instants into `run`, `plan` and
// `sweep` (platforms/interruption.hpp, docs/reliability.md "Signals"):
// each ends with 128 + the signal and the policy's one line (or 0 when it
// had finished), leaves no ".partial" file or folder, no run.complete in an
// unfinished run folder, every file that run.complete lists whole, and no
// process of its own behind; an interrupted sweep then resumes to
// byte-identical results. The instants are counted from the moment the
// process installed its handler (SigCgt in /proc), so none falls before
// main() and the campaign is the same on a fast or a loaded machine.
//
// The instants are stratified, not drawn at random: kInstants equal slices
// of 0 to 1.05 times the measured full command, one seeded instant in each,
// the three signals in turn (so each lands early, in the middle and late).
// Fifty random instants per command (until 2026-12-06) landed in the same
// phases as these twelve, what the tally prints: for `run`, before the run
// folder is opened ("nothing was written": loader, graph, SimGrid's replay,
// the analyses) and while its files are written ("OUT is unfinished"); for
// `plan` and `sweep`, before any simulation ended and with k of n points
// kept, for `plan` also once every plan finished (before its tables); a few
// finish first. At a quarter of the cost (docs/performance.md, "CI's time").
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <map>
#include <random>
#include <thread>

#include "support/cli.hpp"
#include "support/stopped_cli.hpp"

namespace trainsim::testing {
namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

constexpr int kInstants = 12;  // per command: SIGINT, SIGTERM and SIGHUP in turn
// Per command of CommandsThatFork (10 random ones until 2026-12-06): their
// runs are shorter, and they stop where `run` does (nothing written yet, or
// an unfinished run folder) or finish first.
constexpr int kForkInstants = 6;

int signal_of(int instant) {
  return instant % 3 == 0 ? SIGINT : instant % 3 == 1 ? SIGTERM : SIGHUP;
}

// The instant of slice `i` of `n` over [0, 1.05 x full_s): a seeded point
// inside the slice.
double instant_in_slice(int i, int n, double full_s, std::mt19937_64& random) {
  const double slice = 1.05 * full_s / n;
  return (i + std::uniform_real_distribution<double>(0.0, 1.0)(random)) * slice;
}

std::string name_of(int signal) {
  return signal == SIGINT    ? "SIGINT"
         : signal == SIGTERM ? "SIGTERM"
         : signal == SIGHUP  ? "SIGHUP"
                             : "SIGPIPE";
}

// One command, stopped `at_s` after it installed its handler.
struct Stopped {
  int status = -1;  // exit status; 1000 + N if killed by signal N
  std::string err;  // its stderr
  bool no_process_left = false;
};

Stopped stop_at(const std::vector<std::string>& args, double at_s, int signal, const fs::path& err) {
  const pid_t pid = start_trainsim(args, {.err = err, .out_fd = -1, .err_fd = -1, .ignored = {}});
  Stopped s;
  if (wait_until_policy_installed(pid)) {
    std::this_thread::sleep_for(std::chrono::duration<double>(at_s));
    ::kill(pid, signal);
  }
  s.status = wait_for_exit(pid);
  s.err = read_file(err);
  s.no_process_left = no_process_left(pid);
  return s;
}

double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The full command's wall time, counted like the instants.
double measure(const std::vector<std::string>& args, const fs::path& err) {
  const pid_t pid = start_trainsim(args, {.err = err, .out_fd = -1, .err_fd = -1, .ignored = {}});
  EXPECT_TRUE(wait_until_policy_installed(pid));
  const auto start = Clock::now();
  EXPECT_EQ(wait_for_exit(pid), 0) << read_file(err);
  return seconds_since(start);
}

// 128 + the signal with one line that says what was left (returned), or 0
// (the command had finished: returns ""); never a crash, a SimGrid message
// or a silent exit.
std::string expect_stopped_or_finished(const Stopped& s, int signal, const std::string& when) {
  EXPECT_TRUE(s.no_process_left) << "a child outlived the command " << when;
  EXPECT_EQ(s.err.find("Probable bug"), std::string::npos) << when << ": " << s.err;
  EXPECT_EQ(s.err.find("internal error"), std::string::npos) << when << ": " << s.err;
  if (s.status == 0)
    return "";
  EXPECT_EQ(s.status, 128 + signal) << when << ": " << s.err;
  const std::string head = fmt::format("trainsim: interrupted ({}); ", name_of(signal));
  const auto at = s.err.find(head);
  EXPECT_NE(at, std::string::npos) << when << ": " << s.err;
  if (at == std::string::npos)
    return "?";
  // One line, the last thing said, and said once.
  EXPECT_EQ(s.err.find("trainsim: interrupted", at + 1), std::string::npos) << when << ": " << s.err;
  EXPECT_EQ(s.err.find('\n', at), s.err.size() - 1) << when << ": " << s.err;
  EXPECT_TRUE(at == 0 || s.err[at - 1] == '\n') << when << ": " << s.err;
  return s.err.substr(at + head.size());
}

struct Tally {
  int finished = 0, stopped = 0;
  std::map<std::string, int> by_note;  // what the line said was left, by its first words
  // `folder` is written OUT in the tally.
  void add(std::string note, const fs::path& folder) {
    if (note.empty()) {
      ++finished;
      return;
    }
    ++stopped;
    for (auto at = note.find(folder.string()); at != std::string::npos; at = note.find(folder.string()))
      note.replace(at, folder.string().size(), "OUT");
    ++by_note[note.substr(0, std::min(note.find_first_of(";(\n"), std::size_t{48}))];
  }
  std::string text() const {
    std::string t = fmt::format("{} stopped, {} finished first;", stopped, finished);
    for (const auto& [note, n] : by_note)
      t += fmt::format(" {}x \"{}\"", n, note);
    return t;
  }
};

TEST(Signals, RunStopsAtAnyInstantWithItsStatusAndNoPartialFile) {
  const auto dir = fresh_dir("signals-run");
  const auto out = dir / "run";
  const std::vector<std::string> args{"run", "scenarios/scale-512.yaml", "-q", "--out", out.string()};
  const double full_s = measure(args, dir / "err");
  ASSERT_TRUE(fs::exists(out / "run.complete"));
  std::mt19937_64 random(20261203);
  Tally tally;
  for (int i = 0; i < kInstants; ++i) {
    const int signal = signal_of(i);
    const double at_s = instant_in_slice(i, kInstants, full_s, random);
    const std::string when = fmt::format("{} at {:.3f} s of {:.3f} s", name_of(signal), at_s, full_s);
    const Stopped s = stop_at(args, at_s, signal, dir / "err");
    const std::string note = expect_stopped_or_finished(s, signal, when);
    tally.add(note, out);
    if (s.status == 0) {
      EXPECT_EQ(s.err, "") << when;
    }
    expect_no_partial_files(dir, when);
    expect_consistent(out, when);
    // What the line says is what is there.
    if (note.find("is unfinished") != std::string::npos) {
      EXPECT_FALSE(fs::exists(out / "run.complete")) << when;
    }
    if (note.find("are complete") != std::string::npos || s.status == 0) {
      EXPECT_TRUE(fs::exists(out / "run.complete")) << when;
    }
  }
  std::printf("run: %d instants (%.2f s full run): %s\n", kInstants, full_s, tally.text().c_str());
  EXPECT_GT(tally.stopped, 0);
  ASSERT_EQ(wait_for_exit(start_trainsim(args)), 0);
  expect_consistent(out, "after a run to the end");
  EXPECT_TRUE(fs::exists(out / "run.complete"));
  fs::remove_all(dir);
}

TEST(Signals, PlanStopsAtAnyInstantStopsItsSimulationsAndLeavesNoPartialFolder) {
  const auto dir = fresh_dir("signals-plan");
  auto args_for = [](const fs::path& out) {
    return std::vector<std::string>{
        "plan",           "--model",   "gpt3-350m", "--cluster", "dgx-a100-hdr", "--gpus", "16",
        "--global-batch", "64",        "--top",     "4",         "-j",           "2",      "-q",
        "--out",          out.string()};
  };
  const double full_s = measure(args_for(dir / "full"), dir / "err");
  ASSERT_TRUE(fs::exists(dir / "full" / "plans.csv"));
  std::mt19937_64 random(20261204);
  Tally tally;
  for (int i = 0; i < kInstants; ++i) {
    const int signal = signal_of(i);
    const double at_s = instant_in_slice(i, kInstants, full_s, random);
    const std::string when = fmt::format("{} at {:.3f} s of {:.3f} s", name_of(signal), at_s, full_s);
    const auto out = dir / fmt::format("out-{}", i);
    const Stopped s = stop_at(args_for(out), at_s, signal, dir / "err");
    const std::string note = expect_stopped_or_finished(s, signal, when);
    tally.add(note, out);
    expect_no_partial_files(dir, when);
    // The tables exist only once every plan finished.
    if (s.status != 0 && note.rfind("every plan finished", 0) != 0 &&
        note.rfind("the search is complete", 0) != 0) {
      EXPECT_FALSE(fs::exists(out / "plans.csv")) << when;
    }
    std::error_code ec;
    for (fs::directory_iterator it(out / "points", ec), end; !ec && it != end; it.increment(ec))
      EXPECT_TRUE(nlohmann::json::accept(read_file(it->path() / "summary.json"))) << it->path() << when;
    fs::remove_all(out);
  }
  std::printf("plan: %d instants (%.2f s full search): %s\n", kInstants, full_s, tally.text().c_str());
  EXPECT_GT(tally.stopped, 0);
  fs::remove_all(dir);
}

const std::string kSweepStudy = R"(name: signals
cluster:
  gpu: A100
  nodes: 1
  gpus_per_node: 4
  nvlink: {bandwidth: 300GBps, latency: 2us}
model:
  preset: gpt3-125m
plan:
  dp: auto
  tp: 1
  pp: 1
  micro_batch_size: 1
  global_batch_size: 8
sweep:
  grid:
    plan.tp: [1, 2]
    plan.pp: [1, 2]
    plan.micro_batch_size: [1, 2]
)";

TEST(Signals, SweepStopsAtAnyInstantAndResumesToTheSameResultsBytes) {
  const auto dir = fresh_dir("signals-sweep");
  const auto study = dir / "study.yaml";
  std::ofstream(study) << kSweepStudy;
  auto args_for = [&](const fs::path& out) {
    return std::vector<std::string>{"sweep", study.string(), "--out", out.string(), "-j", "2", "--quiet"};
  };
  const double full_s = measure(args_for(dir / "whole"), dir / "err");
  const std::string whole_csv = read_file(dir / "whole" / "results.csv");
  const std::string whole_json = read_file(dir / "whole" / "results.json");
  ASSERT_FALSE(whole_csv.empty());
  std::mt19937_64 random(20261205);
  Tally tally;
  for (int i = 0; i < kInstants; ++i) {
    const int signal = signal_of(i);
    const double at_s = instant_in_slice(i, kInstants, full_s, random);
    const std::string when = fmt::format("{} at {:.3f} s of {:.3f} s", name_of(signal), at_s, full_s);
    const auto out = dir / fmt::format("out-{}", i);
    const Stopped s = stop_at(args_for(out), at_s, signal, dir / "err");
    const std::string note = expect_stopped_or_finished(s, signal, when);
    tally.add(note, out);
    expect_no_partial_files(dir, when);
    if (s.status != 0 && note.rfind("every point finished", 0) != 0 && note.rfind("the results in", 0) != 0) {
      EXPECT_FALSE(fs::exists(out / "results.csv")) << when;
    }
    std::error_code ec;
    for (fs::directory_iterator it(out / "points", ec), end; !ec && it != end; it.increment(ec))
      expect_consistent(it->path(), fmt::format("{} {}", when, it->path().filename().string()));
    const auto resumed = run_cli(args_for(out));
    ASSERT_EQ(resumed.status, 0) << when << ": " << resumed.err;
    EXPECT_EQ(read_file(out / "results.csv"), whole_csv) << when;
    EXPECT_EQ(read_file(out / "results.json"), whole_json) << when;
    fs::remove_all(out);
  }
  std::printf("sweep: %d instants (%.2f s full sweep): %s\n", kInstants, full_s, tally.text().c_str());
  EXPECT_GT(tally.stopped, 0);
  fs::remove_all(dir);
}

// The other commands that fork (seed runs, the even split of --balance,
// validate's rows) or replay in process (collective): fewer instants each,
// the same checks: status, one line, no process and no .partial left.
TEST(Signals, CommandsThatForkStopTheirChildrenAndSayOneLine) {
  const auto dir = fresh_dir("signals-forks");
  const auto rows = dir / "rows.csv";
  std::ofstream(rows)
      << "Parameters (billion),# GPUs,global batch,micro batch,hidden size,attention heads,# layers,"
         "sequence length,tensor parallelism,data parallelism,pipeline parallelism,iteration time (ms),set\n"
         "3.6,64,512,8,3072,32,30,2048,1,64,1,3566.5,fit\n"
         "3.6,64,512,8,3072,32,30,2048,2,32,1,3975.2,check\n"
         "3.6,64,512,4,3072,32,30,2048,1,32,2,4382.1,check\n";
  const auto out = dir / "out";
  const std::vector<std::pair<std::string, std::vector<std::string>>> commands{
      // Random stragglers: one process per seed.
      {"run --seeds",
       {"run", "scenarios/perturb-falcon-stragglers.yaml", "--seeds", "3", "--set",
        "plan.global_batch_size=128", "-q", "--out", out.string()}},
      {"run --balance",
       {"run", "scenarios/hetero-a100-h100.yaml", "--balance", "auto", "-q", "--out", out.string()}},
      {"validate", {"validate", rows.string(), "-j", "2", "--csv", (out / "validate.csv").string()}},
      {"collective", {"collective", "--ranks", "16", "--format", "csv"}},
  };
  std::mt19937_64 random(20261206);
  for (const auto& [label, args] : commands) {
    fs::create_directories(out);
    const double full_s = measure(args, dir / "err");
    Tally tally;
    for (int i = 0; i < kForkInstants; ++i) {
      const int signal = i % 2 == 0 ? SIGINT : SIGTERM;
      const double at_s = instant_in_slice(i, kForkInstants, full_s, random);
      const std::string when =
          fmt::format("{}: {} at {:.3f} s of {:.3f} s", label, name_of(signal), at_s, full_s);
      const Stopped s = stop_at(args, at_s, signal, dir / "err");
      tally.add(expect_stopped_or_finished(s, signal, when), out);
      expect_no_partial_files(dir, when);
      expect_consistent(out, when);
      if (fs::exists(out / "run.complete")) {
        expect_consistent(out / "even", when);
      }
    }
    std::printf("%s: %d instants (%.2f s in full): %s\n", label.c_str(), kForkInstants, full_s,
                tally.text().c_str());
    EXPECT_GT(tally.stopped, 0) << label;
    fs::remove_all(out);
  }
  fs::remove_all(dir);
}

// `trainsim run ... | head -1`: the reader is gone before the summary is
// printed; the run folder is complete (run.complete is written before the
// summary) and nothing is left half written. A sweep whose stderr is a
// closed pipe stops at its first line with its workers.
TEST(Signals, AClosedPipeEndsTheCommandWithoutPartialFilesOrChildren) {
  const auto dir = fresh_dir("signals-pipe");
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  ::close(fds[0]);  // nobody reads
  const auto out = dir / "run";
  const int run_status =
      wait_for_exit(start_trainsim({"run", "scenarios/quickstart.yaml", "--out", out.string()},
                                   {.err = {}, .out_fd = fds[1], .err_fd = -1, .ignored = {}}));
  EXPECT_EQ(run_status, 128 + SIGPIPE);
  expect_no_partial_files(dir, "run into a closed pipe");
  EXPECT_TRUE(fs::exists(out / "run.complete"));
  expect_consistent(out, "run into a closed pipe");

  const auto study = dir / "study.yaml";
  std::ofstream(study) << kSweepStudy;
  const pid_t sweep = start_trainsim({"sweep", study.string(), "--out", (dir / "sweep").string(), "-j", "2"},
                                     {.err = {}, .out_fd = -1, .err_fd = fds[1], .ignored = {}});
  ::close(fds[1]);
  EXPECT_EQ(wait_for_exit(sweep), 128 + SIGPIPE);
  EXPECT_TRUE(no_process_left(sweep));
  expect_no_partial_files(dir, "sweep into a closed pipe");
  EXPECT_FALSE(fs::exists(dir / "sweep" / "results.csv"));
  fs::remove_all(dir);
}

// A shell's background job starts with SIGINT ignored; trainsim leaves it
// ignored, also once SimGrid's engine (which sets its own SIGINT handler)
// exists: the run goes on to the end. SIGTERM still stops it.
TEST(Signals, ASigintIgnoredAtStartStaysIgnoredThroughTheReplay) {
  const auto dir = fresh_dir("signals-ignored");
  const auto out = dir / "run";
  const pid_t pid = start_trainsim({"run", "scenarios/scale-512.yaml", "-q", "--out", out.string()},
                                   {.err = dir / "err", .out_fd = -1, .err_fd = -1, .ignored = {SIGINT}});
  ASSERT_TRUE(wait_until_policy_installed(pid));
  // Until it exits: a SIGINT every 50 ms, through the loader, the replay and the outputs.
  int raw = 0;
  while (::waitpid(pid, &raw, WNOHANG) == 0) {
    ::kill(pid, SIGINT);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(WIFEXITED(raw) && WEXITSTATUS(raw) == 0) << raw << " " << read_file(dir / "err");
  EXPECT_TRUE(fs::exists(out / "run.complete"));
  const Stopped s =
      stop_at({"run", "scenarios/scale-512.yaml", "-q", "--out", out.string()}, 0.2, SIGTERM, dir / "err");
  expect_stopped_or_finished(s, SIGTERM, "SIGTERM with SIGINT ignored");
  fs::remove_all(dir);
}

}  // namespace
}  // namespace trainsim::testing
