#pragma once
// How a list of problems is shown: every command prints an InputError's
// problems through this, so that a million unknown CSV columns print 20
// lines and "... and 999,980 more problems", not a million lines.
#include <cstddef>
#include <string>
#include <vector>

#include "platforms/input_error.hpp"

namespace trainsim::platforms {

inline constexpr std::size_t kMaxPrintedProblems = 20;

// The lines to print: `problems` whole when they are at most
// kMaxPrintedProblems + 1 (a line "1 more" would save nothing), else the
// first kMaxPrintedProblems and "... and N more problems", N counting the
// `unlisted` ones too.
std::vector<std::string> printed_problems(const std::vector<std::string>& problems, std::size_t unlisted = 0);
std::vector<std::string> printed_problems(const InputError& error);

// 999990 -> "999,990".
std::string with_thousands(std::size_t n);

}  // namespace trainsim::platforms
