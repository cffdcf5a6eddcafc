#pragma once
// Listing a folder trainsim was given (a Chakra trace folder), with the
// limits of platforms/input_file.hpp's reader: std::filesystem with error
// codes (an entry that cannot be examined, a symbolic link loop, never
// escapes as std::filesystem::filesystem_error), at most a number of
// entries, and one level only: trainsim reads no input by recursing into
// folders, so no walk can follow a link back up into itself. Every failure
// is an InputError naming the path.
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace trainsim::platforms {

inline constexpr std::size_t kMaxDirectoryEntries = 100000;

// The entries of `dir` (not followed; in the order the system gives),
// `what` naming the folder's role in messages ("Chakra trace folder").
std::vector<std::filesystem::path> list_directory(const std::filesystem::path& dir, std::string_view what,
                                                  std::size_t max_entries = kMaxDirectoryEntries);

// What `path` is once symbolic links are followed, for the caller to decide:
// a regular file, a folder, missing, or something else, with the error
// (ELOOP for a link loop, EACCES, ...) when it could not be examined.
enum class PathKind { regular_file, directory, missing, other, unreadable };
struct PathStatus {
  PathKind kind = PathKind::missing;
  std::error_code error;  // set for unreadable
};
PathStatus path_status(const std::filesystem::path& path);

// "a symbolic link loop" or the error's text, for messages about an
// unreadable path.
std::string describe_path_error(const std::error_code& error);

}  // namespace trainsim::platforms
