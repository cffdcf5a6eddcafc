#include "platforms/input_file.hpp"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>

#include "platforms/input_error.hpp"
#include "support/files.hpp"

namespace trainsim::platforms {
namespace {
namespace fs = std::filesystem;

std::string error_of(const std::string& path, std::size_t cap = kMaxYamlInputBytes) {
  try {
    read_input_file(path, "scenario file", cap);
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(InputFile, ReadsARegularFile) {
  const auto path = testing::fresh_dir("input-file") / "a.yaml";
  std::ofstream(path) << "name: café\n";
  EXPECT_EQ(read_input_file(path.string(), "scenario file", kMaxYamlInputBytes), "name: café\n");
}

TEST(InputFile, RefusesDirectoriesDevicesAndFifos) {
  const auto dir = testing::fresh_dir("input-file-kinds");
  EXPECT_NE(error_of(dir.string()).find("is a directory"), std::string::npos);
  EXPECT_NE(error_of("/dev/zero").find("character device"), std::string::npos);
  const auto fifo = dir / "fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(error_of(fifo.string()).find("pipe"), std::string::npos);
  EXPECT_NE(error_of((dir / "missing.yaml").string()).find("cannot open the scenario file"),
            std::string::npos);
}

TEST(InputFile, RefusesAFileLargerThanTheCap) {
  const auto path = testing::fresh_dir("input-file-big") / "a.yaml";
  std::ofstream(path) << std::string(2048, '#');
  EXPECT_NE(error_of(path.string(), 1024).find("is 2048 bytes, larger than"), std::string::npos);
}

TEST(InputFile, InvalidUtf8IsLocatedByLineAndColumn) {
  EXPECT_NO_THROW(check_utf8("ok: \xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\n", "f"));
  const auto message = [](std::string_view text) {
    try {
      check_utf8(text, "f.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(message("a: 1\n# caf\x81\n"), "f.yaml:2:6: not valid UTF-8 (byte 0x81); save the file as UTF-8");
  EXPECT_NE(message("\xc0\xaf"), "");          // overlong
  EXPECT_NE(message("\xed\xa0\x80"), "");      // a UTF-16 surrogate
  EXPECT_NE(message("\xf4\x90\x80\x80"), "");  // past U+10FFFF
  EXPECT_NE(message("\xe2\x82"), "");          // cut short
}

TEST(InputFile, TheBinaryReaderChecksTheFileButNotItsText) {
  const auto dir = testing::fresh_dir("input-file-binary");
  const auto path = dir / "a.et";
  std::ofstream(path, std::ios::binary) << std::string("\x00\xff\x81", 3);
  EXPECT_EQ(read_binary_input_file(path.string(), "Chakra trace file", kMaxBinaryInputBytes).size(), 3u);
  const auto binary_error = [](const std::string& p, std::size_t cap) {
    try {
      read_binary_input_file(p, "Chakra trace file", cap);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(
      binary_error(path.string(), 2).find("is 3 bytes, larger than trainsim reads for a Chakra trace file"),
      std::string::npos);
  EXPECT_NE(binary_error(dir.string(), kMaxBinaryInputBytes).find("is a directory (expected the Chakra"),
            std::string::npos);
  EXPECT_NE(binary_error("/dev/zero", kMaxBinaryInputBytes)
                .find("/dev/zero: is not a regular file but a character device"),
            std::string::npos);
  const auto fifo = dir / "fifo.et";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(binary_error(fifo.string(), kMaxBinaryInputBytes).find("pipe"), std::string::npos);
}

TEST(InputFile, RefusesAPathWithANulRatherThanOpeningItsPrefix) {
  const auto dir = testing::fresh_dir("input-file-nul");
  std::ofstream(dir / "a") << "name: a\n";
  const std::string path = (dir / "a").string() + std::string(1, '\0') + "b.yaml";
  EXPECT_NE(error_of(path).find("a path with a NUL character"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::platforms
