#include "platforms/problem_list.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

namespace trainsim::platforms {
namespace {

std::vector<std::string> numbered(std::size_t n) {
  std::vector<std::string> problems;
  for (std::size_t i = 0; i < n; ++i)
    problems.push_back(fmt::format("problem {}", i));
  return problems;
}

TEST(ProblemList, AMillionProblemsPrintTwentyLinesAndHowManyMore) {
  ErrorList errors;
  for (std::size_t i = 0; i < 1'000'000; ++i)
    errors.add(fmt::format("unknown column {}", i));
  EXPECT_EQ(errors.size(), 1'000'000u);
  EXPECT_EQ(errors.problems().size(), kMaxKeptProblems);
  try {
    errors.throw_if_any();
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.unlisted(), 1'000'000u - kMaxKeptProblems);
    const auto lines = printed_problems(e);
    ASSERT_EQ(lines.size(), kMaxPrintedProblems + 1);
    EXPECT_EQ(lines.front(), "unknown column 0");
    EXPECT_EQ(lines[kMaxPrintedProblems - 1], "unknown column 19");
    EXPECT_EQ(lines.back(), "... and 999,980 more problems");
  }
}

TEST(ProblemList, AListOfOneMoreThanTheCapPrintsWhole) {
  EXPECT_EQ(printed_problems(numbered(kMaxPrintedProblems + 1)), numbered(kMaxPrintedProblems + 1));
  EXPECT_EQ(printed_problems(numbered(1)), numbered(1));
  const auto lines = printed_problems(numbered(kMaxPrintedProblems + 2));
  ASSERT_EQ(lines.size(), kMaxPrintedProblems + 1);
  EXPECT_EQ(lines.back(), "... and 2 more problems");
}

TEST(ProblemList, CountsAreWrittenWithThousandsSeparators) {
  EXPECT_EQ(with_thousands(0), "0");
  EXPECT_EQ(with_thousands(999), "999");
  EXPECT_EQ(with_thousands(1000), "1,000");
  EXPECT_EQ(with_thousands(999990), "999,990");
  EXPECT_EQ(with_thousands(1234567890), "1,234,567,890");
}

}  // namespace
}  // namespace trainsim::platforms
