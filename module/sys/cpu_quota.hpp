// How much CPU time the process may use under its cgroup's CPU quota:
// cgroup v2's cpu.max, or v1's cpu.cfs_quota_us / cpu.cfs_period_us, for
// the process's own cgroup and each one above it (the tightest wins).
// A container limited to one CPU still shows every core in its affinity
// mask; two threads spinning there only eat each other's quota.
#pragma once

#include <optional>

#include "sys/system_files.hpp"

namespace agentq {

// The quota in CPUs (0.5 is half of one CPU's time), or nullopt when
// there is none or it cannot be told.  READ gives the files' contents.
std::optional<double> cgroup_cpu_quota(const ReadFile& read);

// The same from this process's /proc and /sys.
std::optional<double> cgroup_cpu_quota();

}  // namespace agentq
