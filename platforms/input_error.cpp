#include "platforms/input_error.hpp"

namespace trainsim::platforms {
namespace {
std::string join(const std::vector<std::string>& problems) {
  std::string out;
  for (const auto& p : problems)
    out += (out.empty() ? "" : "\n") + p;
  return out;
}
}  // namespace

InputError::InputError(std::vector<std::string> problems, std::size_t unlisted)
    : std::runtime_error(join(problems)), problems_(std::move(problems)), unlisted_(unlisted) {}

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
