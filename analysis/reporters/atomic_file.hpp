#pragma once
// Writes a file so that a reader (or a kill -9 at any moment) sees either
// the old file or the complete new one, never a part: the text goes to a
// hidden temporary name in the same folder (".NAME.PID.partial"), is
// flushed, then renamed over NAME (rename(2) is atomic within a
// filesystem). A process killed while writing leaves only the hidden
// temporary file, which remove_partial_files() clears on the next run; a
// SIGINT, SIGTERM, SIGHUP or SIGPIPE removes it at once (the temporary is
// registered with platforms/interruption.hpp while it exists).
// Not a guard against power loss (no fsync): the issue is interruptions.
#include <filesystem>
#include <functional>
#include <iosfwd>

namespace trainsim::analysis {

// Throws platforms::InputError naming the path and the OS's reason when the
// file cannot be written (a full disk, a read-only folder: the user's
// environment, exit status 1).
void write_file_atomically(const std::filesystem::path& path,
                           const std::function<void(std::ostream&)>& write);

// Removes what write_file_atomically() leaves behind when it is killed
// (".*.partial" files directly in `dir`).
void remove_partial_files(const std::filesystem::path& dir);

}  // namespace trainsim::analysis
