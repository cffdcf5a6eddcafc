#pragma once
// How much memory this process may still take, and which limit says so.
// The machine's MemAvailable is one bound; the process's own limits are
// others, often smaller: the address-space and data-segment rlimits
// (`ulimit -v`, `ulimit -d`: a Slurm job's or a shell's), and the memory
// limit of its cgroup (a container's, a systemd unit's, a Slurm job's
// cgroup v2 memory.max or v1 memory.limit_in_bytes). The size guard
// (sim/scenario/run_size.hpp) compares its estimate with the smallest of
// them; an allocation that fails anyway says which limit it met.
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace trainsim::scenario {

struct MemoryLimit {
  double left_bytes = 0;   // what the process may still take under it
  double limit_bytes = 0;  // the limit itself
  // For "the {left} of {from}": "memory available on this machine",
  // "address space this process may still use (ulimit -v 2GiB, 120MiB in use)".
  std::string from;
  // The limit in a word, for "the 2GiB the process may use ({short_name})":
  // "ulimit -v", "ulimit -d", "cgroup memory.max", "MemAvailable".
  std::string short_name;
  bool of_the_process = false;  // an rlimit or a cgroup, not the machine's MemAvailable
};

// What the limits are read from, as text (the files' contents), so that
// tests can give their own.
struct MemorySources {
  std::string meminfo;                      // /proc/meminfo
  std::string self_status;                  // /proc/self/status: VmSize and VmData, what the process uses now
  std::optional<double> rlimit_as_bytes;    // RLIMIT_AS's soft limit; nullopt: unlimited
  std::optional<double> rlimit_data_bytes;  // RLIMIT_DATA's
  std::string self_cgroup;                  // /proc/self/cgroup
  // The contents of a file under the cgroup mount (/sys/fs/cgroup), by its
  // path below it ("user.slice/memory.max", "memory/memory.limit_in_bytes");
  // nullopt when it cannot be read.
  std::function<std::optional<std::string>(const std::string& path)> read_cgroup_file;
};

// Every limit the sources give, in the order above (MemAvailable, ulimit
// -v, ulimit -d, the cgroup v2 limits from the process's cgroup up to the
// root, cgroup v1's).
std::vector<MemoryLimit> memory_limits(const MemorySources& sources);
// The one that leaves the least; left_bytes 0 when none is known.
MemoryLimit smallest_memory_limit(const MemorySources& sources);

// This process's sources, read now.
MemorySources this_process_memory_sources();
// smallest_memory_limit(this_process_memory_sources()).
MemoryLimit process_memory_limit();

}  // namespace trainsim::scenario
