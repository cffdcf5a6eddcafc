#include "platforms/interruption.hpp"

#include <errno.h>
#include <fmt/format.h>
#include <pthread.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>

namespace trainsim::platforms {
namespace {

constexpr std::array<int, 4> kSignals{SIGINT, SIGTERM, SIGHUP, SIGPIPE};

// Everything the handler reads is a fixed array or a lock-free atomic: it
// may interrupt the code that updates them (or a malloc), so it can neither
// allocate nor lock.
static_assert(std::atomic<int>::is_always_lock_free);
static_assert(std::atomic<pid_t>::is_always_lock_free);
static_assert(std::atomic<bool>::is_always_lock_free);

// Temporary files. A slot is taken (free -> filling) by compare-and-swap, so
// threads can register at once; the handler reads only held slots, whose
// path is complete.
constexpr int kTempSlots = 64;
constexpr std::size_t kPathBytes = 4096;
enum SlotState : int { kFree, kFilling, kHeld };
struct TempSlot {
  std::atomic<int> state{kFree};
  char path[kPathBytes];
};
TempSlot g_temps[kTempSlots];

// Child processes (0: a free slot). As many as `-j` allows (4,096).
constexpr int kChildSlots = 4096;
std::atomic<pid_t> g_children[kChildSlots];

// What was left: two buffers, the handler reads the current one while the
// main thread writes the other.
constexpr std::size_t kNoteBytes = 1024;
char g_notes[2][kNoteBytes] = {"nothing was written", ""};
std::atomic<int> g_note{0};

std::atomic<bool> g_installed{false};
std::array<std::atomic<bool>, kSignals.size()> g_ignored{};  // ignored when the policy was installed
std::atomic<bool> g_quiet{false};                            // a child of fork(): its parent speaks
std::atomic<bool> g_stderr_terminal{false};
std::atomic<int> g_deferring{0};
std::atomic<int> g_pending{0};

const char* handler_signal_name(int signal) {
  switch (signal) {
    case SIGINT:
      return "SIGINT";
    case SIGTERM:
      return "SIGTERM";
    case SIGHUP:
      return "SIGHUP";
    case SIGPIPE:
      return "SIGPIPE";
    default:
      return "a signal";
  }
}

// The handler's one line, built without allocating.
class FixedLine {
 public:
  void append(const char* text) {
    while (*text != '\0' && size_ < sizeof text_)
      text_[size_++] = *text++;
  }
  void write_to(int fd) const {
    const char* data = text_;
    std::size_t left = size_;
    while (left > 0) {
      const ssize_t n = ::write(fd, data, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return;
      data += n;
      left -= static_cast<std::size_t>(n);
    }
  }

 private:
  char text_[kNoteBytes + 128];
  std::size_t size_ = 0;
};

void signal_set(sigset_t& set) {
  sigemptyset(&set);
  for (int s : kSignals)
    sigaddset(&set, s);
}

extern "C" void on_interruption(int signal) {
  if (g_deferring.load() > 0) {
    g_pending.store(signal);
    return;
  }
  remove_registered_temp_files();
  stop_registered_children(signal);
  if (!g_quiet.load()) {
    static FixedLine line;  // static: the handler may run on a SimGrid actor's stack
    if (g_stderr_terminal.load())
      line.append("\r\033[K");  // over the progress line and the terminal's ^C
    line.append("trainsim: interrupted (");
    line.append(handler_signal_name(signal));
    line.append("); ");
    line.append(g_notes[g_note.load()]);
    line.append("\n");
    line.write_to(STDERR_FILENO);
  }
  ::_exit(128 + signal);
}

struct sigaction policy_action() {
  struct sigaction action {};
  action.sa_handler = on_interruption;
  signal_set(action.sa_mask);  // a second signal waits until the first is handled
  action.sa_flags = SA_RESTART;
  return action;
}

// In a child of fork(): the parent's temporary files and children are the
// parent's, and the parent says the one line.
extern "C" void forget_the_parents_registries() {
  for (auto& slot : g_temps)
    slot.state.store(kFree);
  for (auto& child : g_children)
    child.store(0);
  g_quiet.store(true);
  g_deferring.store(0);
  g_pending.store(0);
}

void forget_registries_in_fork_children() {
  static std::once_flag once;
  std::call_once(once, [] { ::pthread_atfork(nullptr, nullptr, forget_the_parents_registries); });
}

void add_child(pid_t pid) {
  for (auto& child : g_children) {
    pid_t expected = 0;
    if (child.compare_exchange_strong(expected, pid))
      return;
  }
}

void forget_child(pid_t pid) {
  for (auto& child : g_children) {
    pid_t expected = pid;
    if (child.compare_exchange_strong(expected, 0))
      return;
  }
}

class SignalsBlocked {
 public:
  SignalsBlocked() {
    sigset_t block;
    signal_set(block);
    ::pthread_sigmask(SIG_BLOCK, &block, &previous_);
  }
  ~SignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }
  SignalsBlocked(const SignalsBlocked&) = delete;
  SignalsBlocked& operator=(const SignalsBlocked&) = delete;

 private:
  sigset_t previous_{};
};

}  // namespace

void install_interruption_policy() {
  if (!g_installed.load()) {
    forget_registries_in_fork_children();
    g_stderr_terminal.store(::isatty(STDERR_FILENO) != 0);
    for (std::size_t i = 0; i < kSignals.size(); ++i) {
      struct sigaction now {};
      ::sigaction(kSignals[i], nullptr, &now);
      g_ignored[i].store((now.sa_flags & SA_SIGINFO) == 0 && now.sa_handler == SIG_IGN);
    }
    g_installed.store(true);
  }
  restore_interruption_policy();
}

void restore_interruption_policy() {
  if (!g_installed.load())
    return;
  const struct sigaction ours = policy_action();
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (std::size_t i = 0; i < kSignals.size(); ++i)
    ::sigaction(kSignals[i], g_ignored[i].load() ? &ignore : &ours, nullptr);
}

bool interruption_policy_installed() {
  return g_installed.load();
}

void block_interruption_signals_in_this_thread() {
  sigset_t block;
  signal_set(block);
  ::pthread_sigmask(SIG_BLOCK, &block, nullptr);
}

void set_interruption_note(std::string_view what_was_left) {
  const int next = 1 - g_note.load();
  const std::size_t n = std::min(what_was_left.size(), kNoteBytes - 1);
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(what_was_left[i]);
    g_notes[next][i] = c < 0x20 || c == 0x7f ? '?' : static_cast<char>(c);  // one line, no escapes
  }
  g_notes[next][n] = '\0';
  g_note.store(next);
}

std::string signal_name(int signal) {
  const char* name = handler_signal_name(signal);
  return std::strcmp(name, "a signal") == 0 ? fmt::format("signal {}", signal) : std::string(name);
}

std::string interruption_message(int signal, std::string_view what_was_left) {
  return fmt::format("trainsim: interrupted ({}); {}\n", signal_name(signal), what_was_left);
}

TemporaryFile::TemporaryFile(const std::string& path) {
  if (path.size() >= kPathBytes)
    return;
  for (int i = 0; i < kTempSlots; ++i) {
    int expected = kFree;
    if (g_temps[i].state.compare_exchange_strong(expected, kFilling)) {
      std::memcpy(g_temps[i].path, path.c_str(), path.size() + 1);
      g_temps[i].state.store(kHeld);
      slot_ = i;
      return;
    }
  }
}

TemporaryFile::~TemporaryFile() {
  if (slot_ >= 0)
    g_temps[slot_].state.store(kFree);
}

void remove_registered_temp_files() {
  const int saved = errno;
  for (auto& slot : g_temps)
    if (slot.state.load() == kHeld)
      ::unlink(slot.path);
  errno = saved;
}

pid_t fork_stoppable_child() {
  forget_registries_in_fork_children();
  const SignalsBlocked blocked;
  const pid_t pid = ::fork();
  const int error = errno;
  if (pid > 0)
    add_child(pid);
  errno = error;
  return pid;
}

pid_t wait_for_stoppable_child(pid_t pid, int& raw_status) {
  // Wait without reaping, then reap and forget with the signals blocked: the
  // handler never sees a reaped pid (which the system may give to another
  // process) still registered.
  siginfo_t info{};
  while (::waitid(pid > 0 ? P_PID : P_ALL, pid > 0 ? static_cast<id_t>(pid) : 0, &info, WEXITED | WNOWAIT) !=
         0)
    if (errno != EINTR)
      return -1;
  const SignalsBlocked blocked;
  pid_t reaped = 0;
  do
    reaped = ::waitpid(info.si_pid, &raw_status, 0);
  while (reaped < 0 && errno == EINTR);
  forget_child(info.si_pid);
  return reaped;
}

void stop_registered_children(int signal) {
  const int saved = errno;
  for (auto& child : g_children)
    if (const pid_t pid = child.load(); pid > 0)
      ::kill(pid, signal);
  // A trainsim child stops at once (its own handler); one that does not
  // within 10 s is killed.
  const struct timespec tick { 0, 10'000'000 };
  bool left = true;
  for (int round = 0; round < 1000 && left; ++round) {
    left = false;
    for (auto& child : g_children) {
      const pid_t pid = child.load();
      if (pid <= 0)
        continue;
      const pid_t r = ::waitpid(pid, nullptr, WNOHANG);
      if (r == pid || (r < 0 && errno != EINTR))
        child.store(0);
      else
        left = true;
    }
    if (left)
      ::nanosleep(&tick, nullptr);
  }
  for (auto& child : g_children)
    if (const pid_t pid = child.load(); pid > 0) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {
      }
      child.store(0);
    }
  errno = saved;
}

int registered_child_count() {
  return static_cast<int>(std::count_if(std::begin(g_children), std::end(g_children),
                                        [](const std::atomic<pid_t>& c) { return c.load() > 0; }));
}

DeferredInterruption::DeferredInterruption() {
  forget_registries_in_fork_children();
  g_pending.store(0);
  g_deferring.fetch_add(1);
  const struct sigaction ours = policy_action();
  for (std::size_t i = 0; i < kSignals.size(); ++i) {
    ::sigaction(kSignals[i], nullptr, &previous_[i]);
    if ((previous_[i].sa_flags & SA_SIGINFO) != 0 || previous_[i].sa_handler != SIG_IGN)
      ::sigaction(kSignals[i], &ours, nullptr);
  }
}

DeferredInterruption::~DeferredInterruption() {
  end();
}

int DeferredInterruption::pending() const {
  return g_pending.load();
}

int DeferredInterruption::end() {
  if (ended_)
    return 0;
  ended_ = true;
  g_deferring.fetch_sub(1);
  const int signal = g_pending.exchange(0);
  for (std::size_t i = 0; i < kSignals.size(); ++i)
    ::sigaction(kSignals[i], &previous_[i], nullptr);
  return signal;
}

}  // namespace trainsim::platforms
