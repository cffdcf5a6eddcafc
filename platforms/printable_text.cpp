#include "platforms/printable_text.hpp"

#include <fmt/format.h>

#include "platforms/input_file.hpp"

namespace trainsim::platforms {
namespace {

// The length of the UTF-8 sequence starting at `at`, or 0 when none does.
std::size_t sequence_length(std::string_view text, std::size_t at) {
  const auto lead = static_cast<unsigned char>(text[at]);
  const std::size_t len = (lead & 0xE0) == 0xC0   ? 2
                          : (lead & 0xF0) == 0xE0 ? 3
                          : (lead & 0xF8) == 0xF0 ? 4
                                                  : 0;
  if (len == 0 || at + len > text.size())
    return 0;
  const auto sequence = text.substr(at, len);
  return first_invalid_utf8(sequence) == len ? len : 0;
}

unsigned code_point(std::string_view sequence) {
  unsigned code = static_cast<unsigned char>(sequence[0]) & (0x7F >> sequence.size());
  for (std::size_t k = 1; k < sequence.size(); ++k)
    code = (code << 6) | (static_cast<unsigned char>(sequence[k]) & 0x3F);
  return code;
}

bool hidden(unsigned code) {
  return (code >= 0x80 && code <= 0x9F) || (code >= 0x202A && code <= 0x202E) ||
         (code >= 0x2066 && code <= 0x2069);
}

void escape_bytes(std::string& out, std::string_view bytes) {
  for (char c : bytes)
    out += fmt::format("\\x{:02x}", static_cast<unsigned char>(c));
}

}  // namespace

std::string printable_text(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c == 0) {
      out += "\\0";
      ++i;
    } else if (c < 0x20 || c == 0x7F) {
      escape_bytes(out, text.substr(i, 1));
      ++i;
    } else if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
    } else if (const std::size_t len = sequence_length(text, i); len == 0) {
      escape_bytes(out, text.substr(i, 1));
      ++i;
    } else {
      const auto sequence = text.substr(i, len);
      if (hidden(code_point(sequence)))
        escape_bytes(out, sequence);
      else
        out += sequence;
      i += len;
    }
  }
  return out;
}

}  // namespace trainsim::platforms
