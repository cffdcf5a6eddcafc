#include "platforms/directory_walk.hpp"

#include <gtest/gtest.h>

#include <fstream>

#include "platforms/input_error.hpp"
#include "support/files.hpp"

namespace trainsim::platforms {
namespace {
namespace fs = std::filesystem;

std::string list_error(const fs::path& dir, std::size_t cap) {
  try {
    list_directory(dir, "Chakra trace folder", cap);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(DirectoryWalk, ListsOneLevelWithoutFollowingLinks) {
  const auto dir = testing::fresh_dir("walk-one-level");
  std::ofstream(dir / "a.0.et") << "x";
  fs::create_directories(dir / "sub");
  std::ofstream(dir / "sub" / "b.0.et") << "x";
  fs::create_directory_symlink(dir, dir / "up");  // a loop, were it followed
  const auto entries = list_directory(dir, "Chakra trace folder");
  EXPECT_EQ(entries.size(), 3u);
}

TEST(DirectoryWalk, RefusesMoreEntriesThanTheCapNamingTheFolder) {
  const auto dir = testing::fresh_dir("walk-cap");
  for (int i = 0; i < 5; ++i)
    std::ofstream(dir / std::to_string(i)) << "x";
  EXPECT_NO_THROW(list_directory(dir, "Chakra trace folder", 5));
  EXPECT_EQ(list_error(dir, 4), dir.string() +
                                    ": holds more than 4 entries, more than trainsim reads in a Chakra "
                                    "trace folder");
}

TEST(DirectoryWalk, AFolderThatCannotBeReadIsAnInputError) {
  const auto dir = testing::fresh_dir("walk-missing");
  EXPECT_NE(list_error(dir / "missing", 10).find("missing: cannot read the Chakra trace folder"),
            std::string::npos);
  fs::create_symlink(dir / "loop", dir / "loop");
  EXPECT_NE(list_error(dir / "loop", 10).find("a symbolic link loop"), std::string::npos);
}

TEST(DirectoryWalk, PathStatusNamesALinkLoopInsteadOfThrowing) {
  const auto dir = testing::fresh_dir("walk-status");
  fs::create_symlink(dir / "loop.0.et", dir / "loop.0.et");
  const auto status = path_status(dir / "loop.0.et");
  EXPECT_EQ(status.kind, PathKind::unreadable);
  EXPECT_EQ(describe_path_error(status.error), "a symbolic link loop (or a chain of more than 40 links)");
  EXPECT_EQ(path_status(dir / "nothing").kind, PathKind::missing);
  EXPECT_EQ(path_status(dir).kind, PathKind::directory);
  EXPECT_EQ(path_status("/dev/null").kind, PathKind::other);
}

}  // namespace
}  // namespace trainsim::platforms
