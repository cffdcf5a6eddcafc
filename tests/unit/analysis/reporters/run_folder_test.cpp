#include "analysis/reporters/run_folder.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "analysis/reporters/atomic_file.hpp"
#include "support/files.hpp"

namespace trainsim::analysis {
namespace {
namespace fs = std::filesystem;

TEST(RunFolder, IsUnfinishedFromItsStartUntilComplete) {
  const auto dir = testing::fresh_dir("run-folder-mark");
  {
    RunFolder first(dir);
    first.write("summary.json", [](std::ostream& o) { o << "{}\n"; });
    first.complete();
  }
  ASSERT_TRUE(run_folder_complete(dir));
  RunFolder second(dir);
  EXPECT_FALSE(run_folder_complete(dir));  // the earlier run's mark is gone first
  second.write("summary.json", [](std::ostream& o) { o << "{\"a\": 1}\n"; });
  EXPECT_FALSE(run_folder_complete(dir));
  second.complete();
  EXPECT_TRUE(run_folder_complete(dir));
  const auto mark = nlohmann::json::parse(testing::read_file(dir / kRunCompleteFile));
  EXPECT_EQ(mark["files"]["summary.json"], 9);
}

TEST(RunFolder, CompletingRemovesOnlyTrainsimOutputsThisRunDidNotWrite) {
  const auto dir = testing::fresh_dir("run-folder-stale");
  for (const char* name : {"report.html", "trace.json", "notes.txt"})
    std::ofstream(dir / name) << "old\n";
  fs::create_directories(dir / "even");
  std::ofstream(dir / "even" / "summary.json") << "{}\n";
  fs::create_directories(dir / "mine");
  RunFolder folder(dir);
  folder.write("trace.json", [](std::ostream& o) { o << "[]\n"; });
  folder.complete();
  EXPECT_FALSE(fs::exists(dir / "report.html"));
  EXPECT_FALSE(fs::exists(dir / "even"));
  EXPECT_EQ(testing::read_file(dir / "trace.json"), "[]\n");
  EXPECT_TRUE(fs::exists(dir / "notes.txt"));
  EXPECT_TRUE(fs::exists(dir / "mine"));
}

TEST(AtomicFile, AFailedWriterLeavesTheOldFileAndNoTemporary) {
  const auto dir = testing::fresh_dir("atomic-file");
  write_file_atomically(dir / "a.csv", [](std::ostream& o) { o << "old\n"; });
  EXPECT_THROW(write_file_atomically(dir / "a.csv",
                                     [](std::ostream& o) {
                                       o << "half";
                                       throw std::runtime_error("writer died");
                                     }),
               std::runtime_error);
  EXPECT_EQ(testing::read_file(dir / "a.csv"), "old\n");
  // A killed writer's temporary is hidden, and cleared by the next run.
  std::ofstream(dir / ".a.csv.99.partial") << "half";
  remove_partial_files(dir);
  std::size_t entries = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator(dir))
    ++entries;
  EXPECT_EQ(entries, 1u);  // a.csv alone
}

}  // namespace
}  // namespace trainsim::analysis
