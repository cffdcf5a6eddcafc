#include "sim/scenario/memory_limits.hpp"

#include <fmt/format.h>
#include <sys/resource.h>

#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "platforms/units.hpp"

namespace trainsim::scenario {
namespace fs = std::filesystem;
namespace {

// A cgroup v1 limit this large (the kernel's PAGE_COUNTER_MAX in bytes,
// 2^63 rounded down to a page) means "no limit".
constexpr double kNoCgroupV1Limit = 0x1p62;

// The value of "Key:   123 kB" in /proc/meminfo or /proc/self/status, in bytes.
std::optional<double> kib_field(const std::string& text, std::string_view key) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string name;
    double kib = 0;
    if (fields >> name >> kib && name.size() == key.size() + 1 && name.starts_with(key) && name.back() == ':')
      return kib * 1024;
  }
  return std::nullopt;
}

// A cgroup file holding one number ("max" for none).
std::optional<double> number_in(const std::optional<std::string>& text) {
  if (!text)
    return std::nullopt;
  std::string s = *text;
  while (!s.empty() && (s.back() == '\n' || s.back() == ' '))
    s.pop_back();
  double value = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  if (ec != std::errc() || ptr != s.data() + s.size() || s.empty())
    return std::nullopt;
  return value;
}

std::string bytes(double b) {
  return units::format_bytes(b);
}

MemoryLimit process_limit(double limit, double used, std::string what, std::string short_name) {
  MemoryLimit l;
  l.limit_bytes = limit;
  l.left_bytes = std::max(0.0, limit - used);
  l.from = fmt::format("{} ({} {}, {} in use)", what, short_name, bytes(limit), bytes(used));
  l.short_name = std::move(short_name);
  l.of_the_process = true;
  return l;
}

// The cgroup of a hierarchy in /proc/self/cgroup: "0::/a/b" (v2) or
// "4:memory:/a/b" (v1, `controller` among the comma-separated names).
std::optional<std::string> cgroup_path(const std::string& self_cgroup, std::string_view controller) {
  std::istringstream in(self_cgroup);
  std::string line;
  while (std::getline(in, line)) {
    const auto first = line.find(':');
    const auto second = first == std::string::npos ? first : line.find(':', first + 1);
    if (second == std::string::npos)
      continue;
    const std::string names = line.substr(first + 1, second - first - 1);
    bool match = controller.empty() ? names.empty() : false;
    for (std::size_t start = 0; !controller.empty() && start <= names.size();) {
      const auto comma = std::min(names.find(',', start), names.size());
      match = match || names.substr(start, comma - start) == controller;
      start = comma + 1;
    }
    if (match)
      return line.substr(second + 1);
  }
  return std::nullopt;
}

// "a/b" from "/a/b", "" from "/".
std::string relative(const std::string& path) {
  std::string out = path;
  while (!out.empty() && out.front() == '/')
    out.erase(0, 1);
  while (!out.empty() && out.back() == '/')
    out.pop_back();
  return out;
}

void cgroup_v2_limits(const MemorySources& s, std::vector<MemoryLimit>& out) {
  const auto path = cgroup_path(s.self_cgroup, "");
  if (!path || !s.read_cgroup_file)
    return;
  // Each level up to the root may limit the process: the smallest counts.
  // (Inside a cgroup namespace the process sees its own cgroup as "/".)
  for (std::string dir = relative(*path);;) {
    const std::string prefix = dir.empty() ? "" : dir + "/";
    const auto max = number_in(s.read_cgroup_file(prefix + "memory.max"));
    const auto current = number_in(s.read_cgroup_file(prefix + "memory.current"));
    if (max)
      out.push_back(
          process_limit(*max, current.value_or(0),
                        fmt::format("memory its cgroup may still use (/sys/fs/cgroup/{}memory.max)", prefix),
                        "cgroup memory.max"));
    if (dir.empty())
      break;
    const auto slash = dir.rfind('/');
    dir = slash == std::string::npos ? "" : dir.substr(0, slash);
  }
}

void cgroup_v1_limits(const MemorySources& s, std::vector<MemoryLimit>& out) {
  const auto path = cgroup_path(s.self_cgroup, "memory");
  if (!path || !s.read_cgroup_file)
    return;
  // The path as the host names it, else the mount's root (a container
  // without a cgroup namespace sees the host's path, not its files).
  for (const std::string& dir : {relative(*path), std::string()}) {
    const std::string prefix = dir.empty() ? "memory/" : "memory/" + dir + "/";
    const auto limit = number_in(s.read_cgroup_file(prefix + "memory.limit_in_bytes"));
    if (!limit)
      continue;
    if (*limit < kNoCgroupV1Limit)
      out.push_back(process_limit(
          *limit, number_in(s.read_cgroup_file(prefix + "memory.usage_in_bytes")).value_or(0),
          fmt::format("memory its cgroup may still use (/sys/fs/cgroup/{}memory.limit_in_bytes)", prefix),
          "cgroup memory.limit_in_bytes"));
    return;
  }
}

std::optional<std::string> read_text(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::optional<double> soft_limit(int resource) {
  struct rlimit r {};
  if (::getrlimit(resource, &r) != 0 || r.rlim_cur == RLIM_INFINITY)
    return std::nullopt;
  return static_cast<double>(r.rlim_cur);
}

}  // namespace

std::vector<MemoryLimit> memory_limits(const MemorySources& s) {
  std::vector<MemoryLimit> out;
  if (const auto available = kib_field(s.meminfo, "MemAvailable")) {
    MemoryLimit l;
    l.left_bytes = l.limit_bytes = *available;
    l.from = "memory available on this machine";
    l.short_name = "MemAvailable";
    out.push_back(l);
  }
  if (s.rlimit_as_bytes)
    out.push_back(process_limit(*s.rlimit_as_bytes, kib_field(s.self_status, "VmSize").value_or(0),
                                "address space this process may still use", "ulimit -v"));
  if (s.rlimit_data_bytes)
    out.push_back(process_limit(*s.rlimit_data_bytes, kib_field(s.self_status, "VmData").value_or(0),
                                "data this process may still allocate", "ulimit -d"));
  cgroup_v2_limits(s, out);
  cgroup_v1_limits(s, out);
  return out;
}

MemoryLimit smallest_memory_limit(const MemorySources& sources) {
  const auto limits = memory_limits(sources);
  MemoryLimit smallest;
  for (const auto& l : limits)
    if (smallest.short_name.empty() || l.left_bytes < smallest.left_bytes)
      smallest = l;
  return smallest;
}

MemorySources this_process_memory_sources() {
  MemorySources s;
  s.meminfo = read_text("/proc/meminfo").value_or("");
  s.self_status = read_text("/proc/self/status").value_or("");
  s.rlimit_as_bytes = soft_limit(RLIMIT_AS);
  s.rlimit_data_bytes = soft_limit(RLIMIT_DATA);
  s.self_cgroup = read_text("/proc/self/cgroup").value_or("");
  s.read_cgroup_file = [](const std::string& path) { return read_text(fs::path("/sys/fs/cgroup") / path); };
  return s;
}

MemoryLimit process_memory_limit() {
  return smallest_memory_limit(this_process_memory_sources());
}

}  // namespace trainsim::scenario
