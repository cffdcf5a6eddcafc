#include "platforms/input_file.hpp"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "platforms/input_error.hpp"

namespace trainsim::platforms {

namespace {

std::string read_file_bytes(const std::string& path, std::string_view what, std::size_t max_bytes) {
  // A path read from YAML may hold a NUL, which open() would take as its
  // end: another file than the one named.
  if (path.find('\0') != std::string::npos)
    throw InputError({fmt::format("{}: a path with a NUL character (expected the {})",
                                  path.substr(0, path.find('\0')), what)});
  // Opened non-blocking so that a FIFO without a writer cannot hang us; a
  // FIFO is refused below anyway.
  const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    throw InputError({fmt::format("{}: cannot open the {}: {}", path, what, std::strerror(errno))});
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    throw InputError({fmt::format("{}: cannot read the {}: {}", path, what, std::strerror(errno))});
  if (S_ISDIR(st.st_mode))
    throw InputError({fmt::format("{}: is a directory (expected the {}, a file)", path, what)});
  if (!S_ISREG(st.st_mode))
    throw InputError({fmt::format("{}: is not a regular file but a {} (expected the {}, a file)", path,
                                  S_ISFIFO(st.st_mode)   ? "pipe"
                                  : S_ISCHR(st.st_mode)  ? "character device"
                                  : S_ISBLK(st.st_mode)  ? "block device"
                                  : S_ISSOCK(st.st_mode) ? "socket"
                                                         : "special file",
                                  what)});
  const auto too_large = [&](std::size_t bytes) {
    return InputError({fmt::format("{}: is {} bytes, larger than trainsim reads for a {} ({} MiB at most)",
                                   path, bytes, what, max_bytes >> 20)});
  };
  if (static_cast<std::size_t>(st.st_size) > max_bytes)
    throw too_large(static_cast<std::size_t>(st.st_size));
  std::string text;
  text.reserve(static_cast<std::size_t>(st.st_size));
  char buffer[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      throw InputError({fmt::format("{}: cannot read the {}: {}", path, what, std::strerror(errno))});
    }
    if (n == 0)
      break;
    text.append(buffer, static_cast<std::size_t>(n));
    if (text.size() > max_bytes)
      throw too_large(text.size());
  }
  return text;
}

}  // namespace

std::string read_input_file(const std::string& path, std::string_view what, std::size_t max_bytes) {
  std::string text = read_file_bytes(path, what, max_bytes);
  check_utf8(text, path);
  return text;
}

std::string read_binary_input_file(const std::string& path, std::string_view what, std::size_t max_bytes) {
  return read_file_bytes(path, what, max_bytes);
}

std::size_t first_invalid_utf8(std::string_view text) {
  const auto* s = reinterpret_cast<const unsigned char*>(text.data());
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const unsigned char c = s[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    std::size_t len = 0;
    unsigned min = 0;
    if ((c & 0xE0) == 0xC0) {
      len = 2;
      min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      len = 3;
      min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      len = 4;
      min = 0x10000;
    } else {
      return i;
    }
    if (i + len > n)
      return i;
    unsigned code = c & (0x7F >> len);
    for (std::size_t k = 1; k < len; ++k) {
      if ((s[i + k] & 0xC0) != 0x80)
        return i;
      code = (code << 6) | (s[i + k] & 0x3F);
    }
    // Overlong forms, UTF-16 surrogates and code points past U+10FFFF.
    if (code < min || (code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF)
      return i;
    i += len;
  }
  return n;
}

void check_utf8(std::string_view text, std::string_view file) {
  const std::size_t bad = first_invalid_utf8(text);
  if (bad == text.size())
    return;
  std::size_t line = 1, column = 1;
  for (std::size_t i = 0; i < bad; ++i) {
    if (text[i] == '\n') {
      ++line;
      column = 1;
    } else if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) {
      ++column;
    }
  }
  throw InputError({fmt::format("{}:{}:{}: not valid UTF-8 (byte 0x{:02x}); save the file as UTF-8", file,
                                line, column, static_cast<unsigned char>(text[bad]))});
}

}  // namespace trainsim::platforms
