#include "analysis/reporters/atomic_file.hpp"

#include <fmt/format.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>

#include "platforms/input_error.hpp"
#include "platforms/interruption.hpp"

namespace trainsim::analysis {
namespace fs = std::filesystem;

namespace {

constexpr const char* kPartialSuffix = ".partial";

[[noreturn]] void fail(const fs::path& path, const char* what, int error) {
  throw platforms::InputError(
      {fmt::format("{}: {}: {}", path.string(), what, error ? std::strerror(error) : "unknown error")});
}

}  // namespace

void write_file_atomically(const fs::path& path, const std::function<void(std::ostream&)>& write) {
  const fs::path aside =
      path.parent_path() / fmt::format(".{}.{}{}", path.filename().string(), ::getpid(), kPartialSuffix);
  // Registered before it exists and until it is renamed or removed: a
  // SIGINT / SIGTERM / SIGHUP / SIGPIPE at any instant removes it
  // (platforms/interruption.hpp). By absolute path, whatever the folder.
  std::error_code absolute_error;
  const fs::path absolute = fs::absolute(aside, absolute_error);
  const platforms::TemporaryFile temporary((absolute_error ? aside : absolute).string());
  {
    errno = 0;
    std::ofstream out(aside, std::ios::binary | std::ios::trunc);
    if (!out)
      fail(path, "cannot write", errno);
    try {
      write(out);
    } catch (...) {
      out.close();
      std::error_code ignored;
      fs::remove(aside, ignored);
      throw;
    }
    out.flush();
    if (!out) {
      const int error = errno;
      out.close();
      std::error_code ignored;
      fs::remove(aside, ignored);
      fail(path, "error while writing", error);
    }
  }
  std::error_code ec;
  fs::rename(aside, path, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(aside, ignored);
    throw platforms::InputError({fmt::format("{}: cannot replace: {}", path.string(), ec.message())});
  }
}

void remove_partial_files(const fs::path& dir) {
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() > 1 && name.front() == '.' && name.ends_with(kPartialSuffix)) {
      std::error_code ignored;
      fs::remove(it->path(), ignored);
    }
  }
}

}  // namespace trainsim::analysis
