#include <gtest/gtest.h>

#include <map>

#include "sys/cpu_quota.hpp"

using namespace agentq;

namespace {

using Files = std::map<std::string, std::string>;

// The quota cgroup_cpu_quota finds among FILES (path → contents).
std::optional<double> quota_in(Files contents) {
  return cgroup_cpu_quota([contents = std::move(contents)](const std::string& path) -> std::optional<std::string> {
    auto it = contents.find(path);
    if (it == contents.end()) return std::nullopt;
    return it->second;
  });
}

}  // namespace

TEST(CpuQuota, NoQuotaFound) {
  EXPECT_EQ(quota_in({}), std::nullopt) << "no /proc/self/cgroup";
  EXPECT_EQ(quota_in({{"/proc/self/cgroup", "0::/\n"}, {"/sys/fs/cgroup/cpu.max", "max 100000\n"}}), std::nullopt)
      << "cgroup v2, unlimited";
  EXPECT_EQ(quota_in({{"/proc/self/cgroup", "1:cpu:/\n"},
                      {"/sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n"},
                      {"/sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n"}}),
            std::nullopt)
      << "cgroup v1, unlimited";
  EXPECT_EQ(quota_in({{"/proc/self/cgroup", "nonsense\n::\n0::/\n"}, {"/sys/fs/cgroup/cpu.max", "lots of time\n"}}),
            std::nullopt)
      << "garbage";
  EXPECT_EQ(quota_in({{"/proc/self/cgroup", "0::/\n"}, {"/sys/fs/cgroup/cpu.max", "0 100000\n"}}), std::nullopt)
      << "zero";
}

TEST(CpuQuota, CgroupV2) {
  EXPECT_EQ(quota_in({{"/proc/self/cgroup", "0::/\n"}, {"/sys/fs/cgroup/cpu.max", "50000 100000\n"}}), 0.5);
  // The tightest of the process's cgroup and those above it.
  EXPECT_EQ(quota_in({{"/proc/self/cgroup", "0::/user.slice/emacs.scope\n"},
                      {"/sys/fs/cgroup/user.slice/emacs.scope/cpu.max", "max 100000\n"},
                      {"/sys/fs/cgroup/user.slice/cpu.max", "100000 100000\n"},
                      {"/sys/fs/cgroup/cpu.max", "400000 100000\n"}}),
            1.0);
}

TEST(CpuQuota, CgroupV1) {
  EXPECT_EQ(quota_in({{"/proc/self/cgroup", "4:memory:/m\n3:cpu,cpuacct:/docker/abc\n0::/\n"},
                      {"/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "150000\n"},
                      {"/sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n"}}),
            1.5);
}

TEST(CpuQuota, ThisMachineAnswersWithoutThrowing) {
  auto quota = cgroup_cpu_quota();
  if (quota) {
    EXPECT_GT(*quota, 0.0);
  }
}
