// What the process may still allocate (sim/scenario/memory_limits.hpp):
// the machine's MemAvailable, the rlimits and the cgroup's limit, from
// given file contents (issue 31, class 7).
#include "sim/scenario/memory_limits.hpp"

#include <gtest/gtest.h>

#include <map>

#include "sim/scenario/run_size.hpp"

namespace trainsim::scenario {
namespace {

constexpr double kGiB = 1024.0 * 1024 * 1024;

MemorySources machine_with(double available_kib) {
  MemorySources s;
  s.meminfo = "MemTotal:       16000000 kB\nMemFree:         1000000 kB\nMemAvailable:   " +
              std::to_string(static_cast<long long>(available_kib)) + " kB\n";
  s.self_status = "Name:\ttrainsim\nVmPeak:\t  300000 kB\nVmSize:\t  262144 kB\nVmData:\t  131072 kB\n";
  return s;
}

MemorySources with_cgroup_files(MemorySources s, std::string self_cgroup,
                                std::map<std::string, std::string> files) {
  s.self_cgroup = std::move(self_cgroup);
  s.read_cgroup_file = [files = std::move(files)](const std::string& path) -> std::optional<std::string> {
    const auto it = files.find(path);
    if (it == files.end())
      return std::nullopt;
    return it->second;
  };
  return s;
}

TEST(MemoryLimits, WithoutLimitsOfItsOwnTheProcessMayTakeWhatTheMachineHasAvailable) {
  const auto l = smallest_memory_limit(machine_with(8 * 1024 * 1024));
  EXPECT_EQ(l.left_bytes, 8 * kGiB);
  EXPECT_EQ(l.short_name, "MemAvailable");
  EXPECT_EQ(l.from, "memory available on this machine");
  EXPECT_FALSE(l.of_the_process);
}

TEST(MemoryLimits, UlimitVIsTheAddressSpaceLimitMinusWhatIsInUse) {
  auto s = machine_with(8 * 1024 * 1024);
  s.rlimit_as_bytes = 1 * kGiB;  // VmSize 256 MiB
  const auto l = smallest_memory_limit(s);
  EXPECT_EQ(l.short_name, "ulimit -v");
  EXPECT_EQ(l.limit_bytes, 1 * kGiB);
  EXPECT_EQ(l.left_bytes, 0.75 * kGiB);
  EXPECT_TRUE(l.of_the_process);
  EXPECT_NE(l.from.find("address space this process may still use (ulimit -v 1GiB, 256MiB in use)"),
            std::string::npos)
      << l.from;
}

TEST(MemoryLimits, UlimitDIsTheDataLimitMinusTheDataInUse) {
  auto s = machine_with(8 * 1024 * 1024);
  s.rlimit_as_bytes = 4 * kGiB;
  s.rlimit_data_bytes = 0.5 * kGiB;  // VmData 128 MiB
  const auto l = smallest_memory_limit(s);
  EXPECT_EQ(l.short_name, "ulimit -d");
  EXPECT_EQ(l.left_bytes, 0.375 * kGiB);
  EXPECT_EQ(memory_limits(s).size(), 3u);
}

TEST(MemoryLimits, CgroupV2TakesTheSmallestLimitFromItsCgroupUpToTheRoot) {
  const auto s = with_cgroup_files(machine_with(8 * 1024 * 1024), "0::/job.slice/step_0\n",
                                   {{"job.slice/step_0/memory.max", "max\n"},
                                    {"job.slice/step_0/memory.current", "1000\n"},
                                    {"job.slice/memory.max", "2147483648\n"},
                                    {"job.slice/memory.current", "1073741824\n"}});
  const auto l = smallest_memory_limit(s);
  EXPECT_EQ(l.short_name, "cgroup memory.max");
  EXPECT_EQ(l.limit_bytes, 2 * kGiB);
  EXPECT_EQ(l.left_bytes, 1 * kGiB);
  EXPECT_NE(l.from.find("/sys/fs/cgroup/job.slice/memory.max"), std::string::npos) << l.from;
}

TEST(MemoryLimits, CgroupV2InsideANamespaceReadsTheMountsRoot) {
  const auto s = with_cgroup_files(machine_with(8 * 1024 * 1024), "0::/\n",
                                   {{"memory.max", "536870912\n"}, {"memory.current", "0\n"}});
  EXPECT_EQ(smallest_memory_limit(s).left_bytes, 0.5 * kGiB);
}

TEST(MemoryLimits, CgroupV1ReadsTheMemoryControllersLimitAndIgnoresItsNoLimitValue) {
  const std::string self = "12:cpu,cpuacct:/docker/abc\n4:memory:/docker/abc\n0::/\n";
  const auto limited = with_cgroup_files(machine_with(8 * 1024 * 1024), self,
                                         {{"memory/docker/abc/memory.limit_in_bytes", "1073741824\n"},
                                          {"memory/docker/abc/memory.usage_in_bytes", "268435456\n"}});
  const auto l = smallest_memory_limit(limited);
  EXPECT_EQ(l.short_name, "cgroup memory.limit_in_bytes");
  EXPECT_EQ(l.left_bytes, 0.75 * kGiB);
  // The host's path is not there in a container without a cgroup
  // namespace: the mount's root is its cgroup.
  const auto at_root = with_cgroup_files(machine_with(8 * 1024 * 1024), self,
                                         {{"memory/memory.limit_in_bytes", "2147483648\n"}});
  EXPECT_EQ(smallest_memory_limit(at_root).left_bytes, 2 * kGiB);
  const auto unlimited =
      with_cgroup_files(machine_with(8 * 1024 * 1024), self,
                        {{"memory/docker/abc/memory.limit_in_bytes", "9223372036854771712\n"}});
  EXPECT_EQ(smallest_memory_limit(unlimited).short_name, "MemAvailable");
}

TEST(MemoryLimits, NothingKnownIsNoLimit) {
  EXPECT_EQ(smallest_memory_limit(MemorySources{}).left_bytes, 0);
}

TEST(MemoryLimits, ThisProcessHasAtLeastTheMachinesLimit) {
  const auto limits = memory_limits(this_process_memory_sources());
  ASSERT_FALSE(limits.empty());
  EXPECT_EQ(limits.front().short_name, "MemAvailable");
  EXPECT_GT(process_memory_limit().left_bytes, 0);
}

TEST(OutOfMemory, TheMessageSaysTheEstimateAndWhatToChange) {
  RunSize size;
  size.records = 1.5e5;
  size.flows = 4.7e5;
  size.memory_bytes = 199 * 1024.0 * 1024;
  size.replay_s = 1;
  const auto message = out_of_memory_message("the run", &size);
  EXPECT_EQ(message.rfind("out of memory: the run needed more ", 0), 0u) << message;
  EXPECT_NE(message.find("; estimate: about 1.5e+05 records, 4.7e+05 flows, 199MiB of memory"),
            std::string::npos)
      << message;
  EXPECT_NE(message.find("make it smaller"), std::string::npos) << message;
  EXPECT_EQ(out_of_memory_message("the command", nullptr).find("estimate"), std::string::npos);
}

}  // namespace
}  // namespace trainsim::scenario
