#pragma once
// Reading an input file with the checks every input needs before a parser
// sees it: the path names a regular file (not a directory, a device such as
// /dev/zero, or a FIFO; opened without blocking, so a FIFO cannot hang the
// reader), it is no larger than a cap (read with the cap too, in case it
// grows), and a text file is valid UTF-8 (a stray byte, even in a comment,
// would otherwise surface later as an internal error of the JSON writer).
// Every failure is an InputError naming the file and, for bad UTF-8, the line
// and column.
//
// Every file trainsim reads from a path it was given goes through here:
// scenarios, studies, cluster files, templates, plan-search files and
// datasets (YAML and CSV caps), results.json of merge and the comm groups
// of a Chakra trace (JSON: the table cap), the Chakra .et files and
// run.trainsim (binary: no UTF-8 check, the binary cap). Folders are walked
// by platforms/directory_walk.hpp.
#include <cstddef>
#include <string>
#include <string_view>

namespace trainsim::platforms {

// Caps: scenario and study files are hand-written YAML of a few kB.
inline constexpr std::size_t kMaxYamlInputBytes = std::size_t{16} << 20;    // 16 MiB
inline constexpr std::size_t kMaxTableInputBytes = std::size_t{256} << 20;  // 256 MiB (CSV, JSON)
inline constexpr std::size_t kMaxBinaryInputBytes = std::size_t{1} << 30;   // 1 GiB (.et, run.trainsim)

// `what` names the file's role in messages ("scenario file", "dataset").
std::string read_input_file(const std::string& path, std::string_view what, std::size_t max_bytes);
// The same checks but UTF-8, for binary files (a Chakra trace, run.trainsim).
std::string read_binary_input_file(const std::string& path, std::string_view what, std::size_t max_bytes);

// Throws InputError("FILE:LINE:COLUMN: not valid UTF-8 ...") at the first bad
// byte sequence of `text`; `file` is how the message names it.
void check_utf8(std::string_view text, std::string_view file);
// The offset of the first byte that is not valid UTF-8, or text.size().
std::size_t first_invalid_utf8(std::string_view text);

}  // namespace trainsim::platforms
