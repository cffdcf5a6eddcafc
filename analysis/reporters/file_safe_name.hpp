#pragma once
// Folder and file names made from user text (scenario names, plan keys).
#include <string>

namespace trainsim::analysis {

// `text` with every character other than letters, digits, '.', '-' and '_'
// replaced by '_': a file or folder name on every filesystem.
std::string file_safe_name(const std::string& text);

}  // namespace trainsim::analysis
