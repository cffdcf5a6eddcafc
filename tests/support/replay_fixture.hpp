#pragma once
// Replays a `trainsim validate` fixture that names its own command (a
// `# replay: --template ... --set ...` line), keeping the rows of at most a
// GPU count, and checks its MAPE against a pinned figure
// (tests/fixtures/llm_foundry_h100/, tests/fixtures/torchtitan_h100/).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "support/cli.hpp"
#include "support/files.hpp"

namespace trainsim::testing {

struct ReplayedFile {
  int rows = 0;
  double mape = -1;
  std::string out;
};

// Replays the rows of `fixture` (relative to the source tree) of at most
// `max_gpus` GPUs with the arguments of its `# replay:` line.
inline ReplayedFile replay_fixture(const std::string& fixture, int max_gpus) {
  std::ifstream in(std::string(TRAINSIM_SOURCE_DIR) + "/" + fixture);
  std::stringstream kept;
  std::vector<std::string> args;
  std::string line;
  bool header_seen = false;
  ReplayedFile result;
  while (std::getline(in, line)) {
    if (line.rfind("# replay: ", 0) == 0) {
      std::istringstream words(line.substr(10));
      for (std::string word; words >> word;)
        args.push_back(word);
    } else if (!line.empty() && line[0] != '#') {
      if (!header_seen) {
        header_seen = true;
      } else {
        const int gpus = std::stoi(line.substr(line.find(',') + 1));
        if (gpus > max_gpus)
          continue;
        ++result.rows;
      }
    }
    kept << line << '\n';
  }
  const auto path = fresh_dir("torchtitan-foundry") / "rows.csv";
  std::ofstream(path) << kept.str();
  std::vector<std::string> command{"validate", path.string(), "-j", "2", "--allow-oom"};
  command.insert(command.end(), args.begin(), args.end());
  const auto r = run_cli(command);
  std::filesystem::remove_all(path.parent_path());
  result.out = r.out + r.err;
  if (r.status != 0 || args.empty())
    return result;
  const std::regex mape(R"(MAPE check\s+([0-9.]+)% over )" + std::to_string(result.rows) + " rows");
  std::smatch m;
  if (std::regex_search(r.out, m, mape))
    result.mape = std::stod(m[1]);
  return result;
}

struct PinnedFile {
  const char* fixture;
  int rows;
  double mape;  // percent, measured 2026-12-05
};

inline void expect_pinned(const PinnedFile& pinned, int max_gpus) {
  const auto replayed = replay_fixture(pinned.fixture, max_gpus);
  EXPECT_EQ(replayed.rows, pinned.rows) << pinned.fixture;
  ASSERT_GE(replayed.mape, 0) << pinned.fixture << "\n" << replayed.out;
  // Half a point either way: platform-dependent floating point moves the
  // figures by hundredths; a model change by more.
  EXPECT_NEAR(replayed.mape, pinned.mape, 0.5) << pinned.fixture << "\n" << replayed.out;
}

}  // namespace trainsim::testing
