#include "platforms/directory_walk.hpp"

#include <fmt/format.h>

#include <cerrno>
#include <string>

#include "platforms/input_error.hpp"

namespace trainsim::platforms {
namespace fs = std::filesystem;

std::string describe_path_error(const std::error_code& error) {
  if (error == std::errc::too_many_symbolic_link_levels)
    return "a symbolic link loop (or a chain of more than 40 links)";
  return error.message();
}

std::vector<fs::path> list_directory(const fs::path& dir, std::string_view what, std::size_t max_entries) {
  std::vector<fs::path> entries;
  std::error_code ec;
  fs::directory_iterator it(dir, ec);
  for (; !ec && it != fs::directory_iterator(); it.increment(ec)) {
    if (entries.size() == max_entries)
      throw InputError({fmt::format("{}: holds more than {} entries, more than trainsim reads in a {}",
                                    dir.string(), max_entries, what)});
    entries.push_back(it->path());
  }
  if (ec)
    throw InputError(
        {fmt::format("{}: cannot read the {}: {}", dir.string(), what, describe_path_error(ec))});
  return entries;
}

PathStatus path_status(const fs::path& path) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (status.type() == fs::file_type::not_found)
    return {PathKind::missing, {}};
  if (ec)
    return {PathKind::unreadable, ec};
  if (status.type() == fs::file_type::regular)
    return {PathKind::regular_file, {}};
  if (status.type() == fs::file_type::directory)
    return {PathKind::directory, {}};
  return {PathKind::other, {}};
}

}  // namespace trainsim::platforms
