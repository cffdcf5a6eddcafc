// The signal policy (platforms/interruption.hpp): what the handler removes,
// whom it stops, what it says and with which exit status. Each case runs in
// a child process of its own, which installs the policy and is stopped.
#include "platforms/interruption.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "support/files.hpp"

namespace trainsim::platforms {
namespace {
namespace fs = std::filesystem;
using testing::fresh_dir;

struct Outcome {
  int status = -1;   // exit status, or 1000 + the signal that killed it
  std::string err;   // what it wrote on stderr
  std::string said;  // what it wrote on the report pipe
};

std::string read_all(int fd) {
  std::string text;
  char buffer[512];
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
    text.append(buffer, static_cast<std::size_t>(n));
  ::close(fd);
  return text;
}

// Runs `body` in a child with stderr on a pipe; `report` is a descriptor the
// body may write its findings to.
Outcome in_child(const std::function<void(int report)>& body) {
  int err[2], report[2];
  if (::pipe(err) != 0 || ::pipe(report) != 0)
    return {};
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::close(err[0]);
    ::close(report[0]);
    ::dup2(err[1], STDERR_FILENO);
    body(report[1]);
    ::_exit(0);
  }
  ::close(err[1]);
  ::close(report[1]);
  Outcome outcome;
  outcome.said = read_all(report[0]);
  outcome.err = read_all(err[0]);
  int raw = 0;
  ::waitpid(pid, &raw, 0);
  outcome.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : 1000 + WTERMSIG(raw);
  return outcome;
}

void say(int fd, const std::string& text) {
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    ::_exit(90);
}

bool alive(pid_t pid) {
  return ::kill(pid, 0) == 0;
}

fs::path touch(const fs::path& path) {
  std::ofstream(path) << "part of a file";
  return path;
}

TEST(Interruption, RegisteredTemporaryFilesAreRemovedByTheCleanupAndOthersKept) {
  const auto dir = fresh_dir("interruption-cleanup");
  const auto registered = touch(dir / ".summary.json.1.partial");
  const auto other = touch(dir / "summary.json");
  const auto released = touch(dir / ".trace.json.1.partial");
  {
    const TemporaryFile gone(released.string());
    ASSERT_TRUE(gone.registered());
  }
  const TemporaryFile temporary(registered.string());
  ASSERT_TRUE(temporary.registered());
  remove_registered_temp_files();
  EXPECT_FALSE(fs::exists(registered));
  EXPECT_TRUE(fs::exists(other));
  EXPECT_TRUE(fs::exists(released));  // released before: someone else's now
  fs::remove_all(dir);
}

TEST(Interruption, AnOverlongPathIsNotRegisteredAndRegisteringStillWorksAfterIt) {
  const TemporaryFile overlong(std::string(5000, 'x'));
  EXPECT_FALSE(overlong.registered());
  const TemporaryFile fine("/nonexistent/.a.partial");
  EXPECT_TRUE(fine.registered());
}

TEST(Interruption, EachSignalExitsWith128PlusItsNumberSaysOneLineAndRemovesTheTemporaries) {
  for (const auto& [signal, name] :
       {std::pair{SIGINT, "SIGINT"}, {SIGTERM, "SIGTERM"}, {SIGHUP, "SIGHUP"}, {SIGPIPE, "SIGPIPE"}}) {
    const auto dir = fresh_dir("interruption-exit");
    const auto temp = touch(dir / ".timeline.csv.7.partial");
    const Outcome o = in_child([&](int) {
      install_interruption_policy();
      set_interruption_note("runs/x is unfinished (no run.complete)");
      const TemporaryFile registered(temp.string());
      ::raise(signal);
      ::_exit(99);  // not reached
    });
    EXPECT_EQ(o.status, 128 + signal) << name;
    EXPECT_EQ(o.err, std::string("trainsim: interrupted (")
                         .append(name)
                         .append("); runs/x is unfinished (no run.complete)\n"));
    EXPECT_EQ(o.err, interruption_message(signal, "runs/x is unfinished (no run.complete)")) << name;
    EXPECT_FALSE(fs::exists(temp)) << name;
    fs::remove_all(dir);
  }
}

TEST(Interruption, TheNoteIsOneLineWhateverItHolds) {
  const Outcome o = in_child([](int) {
    install_interruption_policy();
    set_interruption_note("runs/a\nb\033[2J");
    ::raise(SIGTERM);
  });
  EXPECT_EQ(o.status, 143);
  EXPECT_EQ(o.err, "trainsim: interrupted (SIGTERM); runs/a?b?[2J\n");
}

TEST(Interruption, WithoutANoteTheLineSaysNothingWasWritten) {
  const Outcome o = in_child([](int) {
    install_interruption_policy();
    ::raise(SIGINT);
  });
  EXPECT_EQ(o.status, 130);
  EXPECT_EQ(o.err, "trainsim: interrupted (SIGINT); nothing was written\n");
}

TEST(Interruption, TheHandlerForwardsTheSignalToTheChildrenAndReapsThem) {
  const Outcome o = in_child([](int report) {
    install_interruption_policy();
    const pid_t child = fork_stoppable_child();
    if (child == 0) {
      for (;;)
        ::pause();
    }
    say(report, std::to_string(child));
    ::close(report);
    if (registered_child_count() != 1)
      ::_exit(98);
    ::raise(SIGTERM);
  });
  EXPECT_EQ(o.status, 143);
  ASSERT_FALSE(o.said.empty());
  const pid_t child = static_cast<pid_t>(std::stol(o.said));
  EXPECT_FALSE(alive(child)) << "the child was not stopped and reaped";
  EXPECT_EQ(o.err, "trainsim: interrupted (SIGTERM); nothing was written\n");  // the child says nothing
}

// A child of fork() removes its own temporaries and stops its own
// children only: its parent's files and its siblings are left alone.
TEST(Interruption, AForkChildStopsItselfNotItsSiblingsNorItsParentsFiles) {
  const auto dir = fresh_dir("interruption-fork");
  const auto parents = touch(dir / ".parent.partial");
  const auto childs = dir / ".child.partial";
  const Outcome o = in_child([&](int report) {
    install_interruption_policy();
    const TemporaryFile mine(parents.string());
    const pid_t sibling = fork_stoppable_child();
    if (sibling == 0) {
      for (;;)
        ::pause();
    }
    const pid_t child = fork_stoppable_child();
    if (child == 0) {
      if (registered_child_count() != 0)
        ::_exit(97);
      touch(childs);
      const TemporaryFile its(childs.string());
      ::raise(SIGINT);
      ::_exit(96);
    }
    int raw = 0;
    wait_for_stoppable_child(child, raw);
    say(report, WIFEXITED(raw) ? std::to_string(WEXITSTATUS(raw)) : "killed");
    say(report, fs::exists(parents) ? " parent's file kept" : " parent's file removed");
    say(report, fs::exists(childs) ? " child's file kept" : " child's file removed");
    say(report, alive(sibling) ? " sibling alive" : " sibling stopped");
    say(report, std::string(" ").append(std::to_string(registered_child_count())).append(" registered"));
    ::close(report);
    ::raise(SIGTERM);
  });
  EXPECT_EQ(o.said, "130 parent's file kept child's file removed sibling alive 1 registered");
  EXPECT_EQ(o.status, 143);
  EXPECT_EQ(o.err, "trainsim: interrupted (SIGTERM); nothing was written\n");  // one line, the parent's
  EXPECT_FALSE(fs::exists(parents));
  fs::remove_all(dir);
}

TEST(Interruption, WaitingForAChildReapsAndForgetsIt) {
  const Outcome o = in_child([](int report) {
    const pid_t child = fork_stoppable_child();
    if (child == 0)
      ::_exit(7);
    int raw = 0;
    const pid_t got = wait_for_stoppable_child(-1, raw);
    say(report, got == child && WIFEXITED(raw) ? std::to_string(WEXITSTATUS(raw)) : "wrong child");
    say(report, std::string(" ").append(std::to_string(registered_child_count())));
    errno = 0;
    say(report, wait_for_stoppable_child(-1, raw) < 0 && errno == ECHILD ? " none left" : " one more");
  });
  EXPECT_EQ(o.said, "7 0 none left");
  EXPECT_EQ(o.status, 0);
}

// SimGrid's engine sets its own SIGINT handler; restoring puts the policy's
// back.
TEST(Interruption, RestoringReplacesALibrarysHandler) {
  const Outcome o = in_child([](int) {
    install_interruption_policy();
    std::signal(SIGINT, [](int) { ::_exit(1); });
    restore_interruption_policy();
    ::raise(SIGINT);
  });
  EXPECT_EQ(o.status, 130);
}

// POSIX shells ignore SIGINT in a script's background jobs, nohup ignores
// SIGHUP: such a signal stays ignored, also once a library has set a handler.
TEST(Interruption, ASignalIgnoredAtStartStaysIgnoredAfterALibrarySetAHandler) {
  const Outcome o = in_child([](int report) {
    std::signal(SIGHUP, SIG_IGN);
    std::signal(SIGINT, SIG_IGN);
    install_interruption_policy();
    std::signal(SIGINT, [](int) { ::_exit(1); });
    restore_interruption_policy();
    ::raise(SIGHUP);
    ::raise(SIGINT);
    say(report, "still running");
    ::close(report);
    ::raise(SIGTERM);
  });
  EXPECT_EQ(o.said, "still running");
  EXPECT_EQ(o.status, 143);
}

TEST(Interruption, ADeferredSignalIsHandedToItsOwnerAndTheNextOneStopsAtOnce) {
  const Outcome o = in_child([](int report) {
    install_interruption_policy();
    {
      DeferredInterruption deferred;
      ::raise(SIGTERM);
      say(report, deferred.pending() == SIGTERM ? "pending" : "not pending");
      say(report, deferred.end() == SIGTERM ? " handed over" : " lost");
    }
    ::close(report);
    ::raise(SIGHUP);
    ::_exit(95);
  });
  EXPECT_EQ(o.said, "pending handed over");
  EXPECT_EQ(o.status, 129);
}

TEST(Interruption, WithoutThePolicyADeferralRestoresTheDefaultAtItsEnd) {
  const Outcome o = in_child([](int report) {
    {
      DeferredInterruption deferred;
      ::raise(SIGINT);
      say(report, deferred.pending() == SIGINT ? "pending" : "not pending");
    }
    struct sigaction now {};
    ::sigaction(SIGINT, nullptr, &now);
    say(report, now.sa_handler == SIG_DFL ? " default again" : " still handled");
    ::close(report);
  });
  EXPECT_EQ(o.said, "pending default again");
  EXPECT_EQ(o.status, 0);
}

}  // namespace
}  // namespace trainsim::platforms
