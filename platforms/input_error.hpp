#pragma once
// Bad user input: every problem found, each naming where it is (file:line, or
// the --set option), the key, the bad value and what was expected. The CLI
// prints them (at most kMaxPrintedProblems, platforms/problem_list.hpp) and
// exits with status 1. Each problem is kept with its control characters
// escaped (platforms/printable_text.hpp), so a value quoted from the input
// never reaches a terminal raw.
//
// A list keeps at most kMaxKeptProblems problems and counts the rest: a
// 256 MiB CSV header of a million unknown columns would otherwise hold
// gigabytes of messages.
#include <cstddef>
#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim::platforms {

inline constexpr std::size_t kMaxKeptProblems = 1000;

class InputError : public std::runtime_error {
 public:
  // `unlisted`: problems found beyond those in `problems`, counted only.
  explicit InputError(std::vector<std::string> problems, std::size_t unlisted = 0);
  const std::vector<std::string>& problems() const { return problems_; }
  std::size_t unlisted() const { return unlisted_; }

 private:
  std::vector<std::string> problems_;
  std::size_t unlisted_ = 0;
};

// Collects problems while a whole input is checked, so the user sees every
// error at once rather than one per run.
class ErrorList {
 public:
  void add(std::string problem);
  bool empty() const { return problems_.empty(); }
  // Every problem added, kept or counted (readers compare sizes to see
  // whether a part of the input added any).
  std::size_t size() const { return problems_.size() + unlisted_; }
  // The first kMaxKeptProblems.
  const std::vector<std::string>& problems() const { return problems_; }
  // Throws InputError when anything was collected.
  void throw_if_any() const;

 private:
  std::vector<std::string> problems_;
  std::size_t unlisted_ = 0;
};

}  // namespace trainsim::platforms
