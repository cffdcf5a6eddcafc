#pragma once
// Bad user input: every problem found, each naming where it is (file:line, or
// the --set option), the key, the bad value and what was expected. The CLI
// prints them all and exits with status 1. Each problem is kept with its
// control characters escaped (platforms/printable_text.hpp), so a value
// quoted from the input never reaches a terminal raw.
#include <stdexcept>
#include <string>
#include <vector>

namespace trainsim::platforms {

class InputError : public std::runtime_error {
 public:
  explicit InputError(std::vector<std::string> problems);
  const std::vector<std::string>& problems() const { return problems_; }

 private:
  std::vector<std::string> problems_;
};

// Collects problems while a whole input is checked, so the user sees every
// error at once rather than one per run.
class ErrorList {
 public:
  void add(std::string problem) { problems_.push_back(std::move(problem)); }
  bool empty() const { return problems_.empty(); }
  std::size_t size() const { return problems_.size(); }
  const std::vector<std::string>& problems() const { return problems_; }
  // Throws InputError when anything was collected.
  void throw_if_any() const;

 private:
  std::vector<std::string> problems_;
};

}  // namespace trainsim::platforms
