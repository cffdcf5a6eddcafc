#pragma once
// Runs the real trainsim binary on a command that writes summary.json and
// reads it back: the CLI tests' common "run, then look at the figures".
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/cli.hpp"

namespace trainsim::testing {

// `trainsim ARGS --quiet --out <fresh dir>` and the summary.json it wrote; an
// empty object (and a failed expectation) when the command did not succeed.
inline nlohmann::json run_summary(std::vector<std::string> args, CliResult* result = nullptr) {
  const auto out = fresh_dir("run-summary");
  args.insert(args.end(), {"--quiet", "--out", out.string()});
  const auto r = run_cli(args);
  if (result != nullptr)
    *result = r;
  EXPECT_EQ(r.status, 0) << r.err;
  nlohmann::json summary = nlohmann::json::object();
  if (r.status == 0)
    summary = nlohmann::json::parse(read_file(out / "summary.json"));
  std::filesystem::remove_all(out);
  return summary;
}

}  // namespace trainsim::testing
