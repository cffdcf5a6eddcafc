#pragma once
// Reading PyTorch profiler traces from disk: one JSON file per rank,
// optionally gzip-compressed (`.json.gz`: zlib, Debian's zlib1g), through
// platforms' reader of every input (a regular file, not a directory, device
// or FIFO; at most kMaxTraceBytes, as much once decompressed; valid UTF-8).
// Errors name the file and, for a bad event, its position in traceEvents and
// its name.
#include <filesystem>
#include <string>
#include <vector>

#include "workloads/kineto/kernel_classes.hpp"
#include "workloads/kineto/kineto_trace.hpp"

namespace trainsim::kineto {

// 1 GiB of JSON text: a rank's trace of a few steps of a large model is
// tens to hundreds of MB.
inline constexpr std::size_t kMaxTraceBytes = std::size_t{1} << 30;
// Events of one file: a 1 GiB trace holds about 4 million.
inline constexpr std::size_t kMaxTraceEvents = std::size_t{1} << 24;

// Parses one trace's JSON text (already decompressed); `path` names it in
// messages and in RankTrace::path; `position` is its rank when the trace
// records none. Throws platforms::InputError listing every bad event (at
// most the first few dozen, then a count).
RankTrace parse_trace(const std::string& json_text, const std::string& path, int position,
                      const KernelClassTable& classes);

// Reads and parses one file (gzip or not: the content decides).
RankTrace read_trace_file(const std::filesystem::path& path, int position, const KernelClassTable& classes);

// The trace files named by `paths`: each a file, or a folder whose
// `*.json` / `*.json.gz` files (one level deep, platforms::list_directory)
// are the ranks. Throws platforms::InputError for a path that does not
// exist or a folder without trace files.
std::vector<std::filesystem::path> find_trace_files(const std::vector<std::string>& paths);

// Reads every file, one rank each: ranks from each trace's distributedInfo
// (files in the order given where they record none). Throws
// platforms::InputError naming both files when two hold the same rank, and
// listing every file's problems at once.
std::vector<RankTrace> read_traces(const std::vector<std::filesystem::path>& files,
                                   const KernelClassTable& classes);

// The text of a file that may be gzip-compressed, held to `max_bytes` both
// ways; `what` names its role in messages.
std::string read_maybe_gzip_text(const std::filesystem::path& path, const std::string& what,
                                 std::size_t max_bytes);

}  // namespace trainsim::kineto
