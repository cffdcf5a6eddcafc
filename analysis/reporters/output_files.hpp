#pragma once
// Writes every output file of a run into a directory (the list is
// docs/outputs.md): what `trainsim run` and `trainsim report` both produce.
#include <filesystem>
#include <string>
#include <vector>

#include "analysis/report.hpp"
#include "analysis/run_context.hpp"
#include "analysis/timeline.hpp"

namespace trainsim::analysis {

// Returns the names of the files written, in order. `html` adds report.html.
// Throws std::runtime_error when a file cannot be written.
std::vector<std::string> write_output_files(const std::filesystem::path& dir, const RunContext& run,
                                            const Timeline& timeline, const Report& report, bool html);

// `text` with every character other than letters, digits, '.', '-' and '_'
// replaced by '_': a file or folder name on every filesystem.
std::string file_safe_name(const std::string& text);

}  // namespace trainsim::analysis
