#include "platforms/problem_list.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace trainsim::platforms {

std::string with_thousands(std::size_t n) {
  std::string digits = fmt::format("{}", n);
  std::string out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0)
      out += ',';
    out += digits[i];
  }
  return out;
}

std::vector<std::string> printed_problems(const std::vector<std::string>& problems, std::size_t unlisted) {
  const std::size_t total = problems.size() + unlisted;
  if (total <= kMaxPrintedProblems + 1 && unlisted == 0)
    return problems;
  std::vector<std::string> lines(
      problems.begin(),
      problems.begin() + static_cast<std::ptrdiff_t>(std::min(problems.size(), kMaxPrintedProblems)));
  const std::size_t more = total - lines.size();
  lines.push_back(fmt::format("... and {} more problem{}", with_thousands(more), more == 1 ? "" : "s"));
  return lines;
}

std::vector<std::string> printed_problems(const InputError& error) {
  return printed_problems(error.problems(), error.unlisted());
}

}  // namespace trainsim::platforms
