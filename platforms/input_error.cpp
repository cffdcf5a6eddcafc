#include "platforms/input_error.hpp"

#include "platforms/printable_text.hpp"

namespace trainsim::platforms {
namespace {
// Each problem as it may be printed: a value quoted from the input keeps
// its control characters out of the terminal (platforms/printable_text.hpp).
std::vector<std::string> printable(std::vector<std::string> problems) {
  for (auto& p : problems)
    p = printable_text(p);
  return problems;
}

std::string join(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems)
    out += (out.empty() ? "" : "\n") + p;
  return out;
}
}  // namespace

InputError::InputError(std::vector<std::string> problems, std::size_t unlisted)
    : std::runtime_error(join(printable(problems))),
      problems_(printable(std::move(problems))),
      unlisted_(unlisted) {}

void ErrorList::add(std::string problem) {
  if (problems_.size() < kMaxKeptProblems)
    problems_.push_back(std::move(problem));
  else
    ++unlisted_;
}

void ErrorList::throw_if_any() const {
  if (!problems_.empty())
    throw InputError(problems_, unlisted_);
}

}  // namespace trainsim::platforms
