#pragma once
// What every trainsim command does on SIGINT, SIGTERM, SIGHUP and SIGPIPE
// (docs/reliability.md, "Signals"): it removes its temporary files, stops
// the child processes it started (the same signal, then waits for them),
// says on stderr in one line what was left
//
//   trainsim: interrupted (SIGINT); runs/x is unfinished (no run.complete) ...
//
// and exits with 128 + the signal (130, 143, 129, 141). The handler does only
// async-signal-safe things (unlink, kill, waitpid, write, _exit) on fixed
// arrays and lock-free atomics, so it may run at any instant: inside the
// SimGrid replay, in the middle of a malloc, while a file is half written.
//
// The registries are process-wide by nature (a signal handler can reach
// nothing else); they are filled and emptied by the code that creates the
// things (write_file_atomically, fork_stoppable_child), never by hand.
//
// A child of fork() starts with empty registries and stays silent: its
// handler removes its own temporaries and stops its own children, never its
// parent's files or its siblings, and the parent says the one line.
//
// A signal that trainsim was started with ignored stays ignored (POSIX
// shells ignore SIGINT in the background jobs of a script, nohup ignores
// SIGHUP), also after SimGrid's engine has installed its own SIGINT handler.
//
// No SimGrid here (SimGrid-free, below analysis/ so that the atomic writer
// can use it).
#include <signal.h>
#include <sys/types.h>

#include <array>
#include <string>
#include <string_view>

namespace trainsim::platforms {

// Installs the policy's handler for each of the four signals that is not
// ignored at this moment. Called once by main() before any command runs;
// later calls only put the handler back (restore_interruption_policy).
void install_interruption_policy();
// Puts the policy's dispositions back after a library replaced them (SimGrid
// 3.32's engine constructor sets its own SIGINT handler, which prints the
// actors' status and calls exit(1), or crashes). Does nothing when the
// policy was never installed (unit tests, the Python module).
void restore_interruption_policy();
bool interruption_policy_installed();

// Blocks the four signals in the calling thread, so that they reach the
// main thread only (a helper thread such as the progress ticker must not
// run the handler while the main thread goes on writing files).
void block_interruption_signals_in_this_thread();

// What the one line says after the signal's name: what the command leaves
// behind if it stops now ("runs/x is unfinished (no run.complete) ..."). The
// command (or RunFolder) updates it as it goes; called by the main thread.
// Default: "nothing was written".
void set_interruption_note(std::string_view what_was_left);
// The one line, for the commands that stop cooperatively (the study runner):
// "trainsim: interrupted (SIGINT); <what_was_left>\n".
std::string interruption_message(int signal, std::string_view what_was_left);
// "SIGINT", "SIGTERM", "SIGHUP", "SIGPIPE", else "signal N".
std::string signal_name(int signal);

// A temporary file, registered for the handler to remove, from before it is
// created until after it is renamed or removed (write_file_atomically).
// Thread-safe. A path longer than 4,095 bytes, or more than 64 files at
// once, is not registered (registered() false): the file is still written,
// but an interruption leaves it behind.
class TemporaryFile {
 public:
  explicit TemporaryFile(const std::string& path);
  ~TemporaryFile();
  TemporaryFile(const TemporaryFile&) = delete;
  TemporaryFile& operator=(const TemporaryFile&) = delete;
  bool registered() const { return slot_ >= 0; }

 private:
  int slot_ = -1;
};

// Unlinks every registered temporary file (async-signal-safe; what the
// handler does first). The registrations stay: their owners release them.
void remove_registered_temp_files();

// fork(), with the child registered for the handler to stop before any
// signal can be handled (the signals are blocked around fork and the
// registration). In the child: empty registries, silent handler.
pid_t fork_stoppable_child();
// Waits for a child started by fork_stoppable_child (`pid`, or any child of
// this process with -1) to exit, reaps it and forgets it; returns its pid
// (or -1 with errno, ECHILD when there is none) and its wait status.
pid_t wait_for_stoppable_child(pid_t pid, int& raw_status);
// Sends `signal` to every registered child, waits for each (up to 10 s, then
// SIGKILL) and forgets them (async-signal-safe; the handler's second step).
void stop_registered_children(int signal);
// How many children are registered (tests).
int registered_child_count();

// The study runner stops cooperatively: while one of these exists the
// handler only records the signal, and the runner's polling loop stops its
// workers, removes their unfinished folders and throws. Installs the handler
// for the scope when the policy is not installed (unit tests), and restores
// the previous dispositions at the end.
class DeferredInterruption {
 public:
  DeferredInterruption();
  ~DeferredInterruption();
  DeferredInterruption(const DeferredInterruption&) = delete;
  DeferredInterruption& operator=(const DeferredInterruption&) = delete;
  // The signal received since the scope began, or 0.
  int pending() const;
  // Ends deferral (a signal from now on stops the process at once) and
  // returns the signal received before, or 0. Called once, by the owner,
  // after its workers are reaped; the destructor calls it otherwise.
  int end();

 private:
  bool ended_ = false;
  std::array<struct sigaction, 4> previous_{};
};

}  // namespace trainsim::platforms
