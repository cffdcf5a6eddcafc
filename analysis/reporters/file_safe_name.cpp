#include "analysis/reporters/file_safe_name.hpp"

namespace trainsim::analysis {

std::string file_safe_name(const std::string& text) {
  std::string out;
  for (char c : text) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
                    c == '-' || c == '_';
    out += ok ? c : '_';
  }
  return out;
}

}  // namespace trainsim::analysis
