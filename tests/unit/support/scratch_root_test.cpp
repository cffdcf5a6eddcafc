// The scratch folders of tests (tests/support/scratch_root.hpp): removed
// when their process exits, kept with TRAINSIM_KEEP_TEST_DIRS=1, never
// another process's.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>

#include "support/files.hpp"
#include "support/scratch_root.hpp"

namespace trainsim {
namespace {

namespace fs = std::filesystem;
using testing::fresh_dir;

struct Child {
  pid_t pid = 0;
  std::string said;  // what the child wrote to its pipe
  int status = -1;   // its exit status, -1 when killed
};

// Runs `body` in a child process that writes a line to `report` and then
// leaves as `body` decides (std::exit runs the static destructors, _exit
// does not).
Child in_child(const std::function<void(int report)>& body) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  std::fflush(nullptr);
  Child c;
  c.pid = ::fork();
  if (c.pid == 0) {
    ::close(fds[0]);
    body(fds[1]);
    ::_exit(90);  // body did not leave
  }
  ::close(fds[1]);
  char buffer[512];
  for (ssize_t n; (n = ::read(fds[0], buffer, sizeof buffer)) > 0;)
    c.said.append(buffer, static_cast<std::size_t>(n));
  ::close(fds[0]);
  int raw = 0;
  ::waitpid(c.pid, &raw, 0);
  c.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return c;
}

void say(int fd, const std::string& text) {
  if (::write(fd, text.data(), text.size()) != static_cast<ssize_t>(text.size()))
    ::_exit(91);
}

// A folder with a file in it, its path said to the parent.
void make_and_say(int report) {
  const fs::path dir = fresh_dir("scratch");
  std::ofstream(dir / "out.csv") << "a,b\n1,2\n";
  say(report, dir.string());
}

fs::path root_of(pid_t pid) {
  return fs::temp_directory_path() / ("trainsim-test-" + std::to_string(pid));
}

TEST(ScratchRoot, AFolderAndItsRootAreRemovedWhenTheProcessExits) {
  const Child c = in_child([](int report) {
    ::unsetenv("TRAINSIM_KEEP_TEST_DIRS");
    make_and_say(report);
    std::exit(0);
  });
  ASSERT_EQ(c.status, 0);
  EXPECT_EQ(fs::path(c.said), root_of(c.pid) / "scratch");
  EXPECT_FALSE(fs::exists(c.said)) << c.said << " survived its process";
  EXPECT_FALSE(fs::exists(root_of(c.pid)));
}

TEST(ScratchRoot, TrainsimKeepTestDirsKeepsTheFoldersAndMarksTheRoot) {
  const Child c = in_child([](int report) {
    ::setenv("TRAINSIM_KEEP_TEST_DIRS", "1", 1);
    make_and_say(report);
    std::exit(0);
  });
  ASSERT_EQ(c.status, 0);
  EXPECT_TRUE(fs::exists(fs::path(c.said) / "out.csv"));
  EXPECT_TRUE(fs::exists(root_of(c.pid) / "KEEP"));
  // A later process does not take a kept root for an orphan.
  testing::remove_orphaned_scratch_roots(fs::temp_directory_path());
  EXPECT_TRUE(fs::exists(fs::path(c.said) / "out.csv"));
  fs::remove_all(root_of(c.pid));
}

TEST(ScratchRoot, AForkChildsExitRemovesItsOwnRootNotItsParents) {
  ::unsetenv("TRAINSIM_KEEP_TEST_DIRS");
  const fs::path mine = fresh_dir("parent");
  std::ofstream(mine / "kept") << "x";
  const Child c = in_child([](int report) {
    make_and_say(report);
    std::exit(0);
  });
  ASSERT_EQ(c.status, 0);
  EXPECT_NE(fs::path(c.said).parent_path(), mine.parent_path());
  EXPECT_FALSE(fs::exists(c.said));
  EXPECT_TRUE(fs::exists(mine / "kept")) << "the child removed its parent's folder";
  EXPECT_EQ(mine.parent_path(), root_of(::getpid()));
}

TEST(ScratchRoot, TheRootOfAProcessThatDiedWithoutCleaningUpIsRemovedByTheNextOne) {
  const Child c = in_child([](int report) {
    ::unsetenv("TRAINSIM_KEEP_TEST_DIRS");
    make_and_say(report);
    ::_exit(0);  // as if killed: no static destructors
  });
  ASSERT_EQ(c.status, 0);
  ASSERT_TRUE(fs::exists(c.said));
  const fs::path other = fs::temp_directory_path() / "trainsim-test-notapid";
  fs::create_directories(other);
  testing::remove_orphaned_scratch_roots(fs::temp_directory_path());
  EXPECT_FALSE(fs::exists(root_of(c.pid)));
  EXPECT_TRUE(fs::exists(other)) << "a folder not named for a process was removed";
  fs::remove_all(other);
}

}  // namespace
}  // namespace trainsim
