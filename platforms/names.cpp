#include "platforms/names.hpp"

#include <fmt/format.h>

#include "platforms/printable_text.hpp"

namespace trainsim::platforms {

bool is_name_character(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
         c == '_';
}

std::string name_problem(std::string_view text) {
  if (text.empty())
    return "it is empty";
  if (text.size() > kMaxNameLength)
    return fmt::format("it is {} characters long", text.size());
  for (char c : text) {
    if (is_name_character(c))
      continue;
    // The first character a name may not hold, as the user would type it.
    if (c == ' ')
      return "it holds a space";
    if (static_cast<unsigned char>(c) >= 0x80)
      return "it holds a character other than an ASCII letter or digit";
    return fmt::format("it holds '{}'", printable_text(std::string_view(&c, 1)));
  }
  if (text.front() == '.' || text.front() == '-')
    return fmt::format("it starts with '{}'", text.front());
  return {};
}

std::string_view name_rule() {
  return "a name is 1 to 128 letters, digits, '.', '-' or '_', not starting with '.' or '-'";
}

std::string_view name_pattern() {
  return "^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$";
}

std::string invalid_name_message(std::string_view text) {
  const std::string problem = name_problem(text);
  if (problem.empty())
    return {};
  return fmt::format("'{}' is not a valid name: {} ({})", printable_text(text), problem, name_rule());
}

std::string name_from_text(std::string_view text, std::string_view fallback) {
  std::string out;
  for (char c : text)
    out += is_name_character(c) ? c : '_';
  const auto first = out.find_first_not_of("._-");
  out.erase(0, first == std::string::npos ? out.size() : first);
  if (out.size() > kMaxNameLength)
    out.resize(kMaxNameLength);
  while (!out.empty() && out.back() == '_')
    out.pop_back();
  return out.empty() ? std::string(fallback) : out;
}

}  // namespace trainsim::platforms
