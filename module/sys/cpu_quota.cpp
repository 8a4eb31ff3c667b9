#include "sys/cpu_quota.hpp"

#include <algorithm>
#include <sstream>
#include <vector>

namespace agentq {

namespace {

std::vector<std::string> split(const std::string& text, char separator) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(text);
  while (std::getline(in, part, separator)) parts.push_back(part);
  return parts;
}

// PATH and each cgroup above it, deepest first: "/a/b", "/a", "".
std::vector<std::string> path_and_parents(std::string path) {
  std::vector<std::string> paths;
  while (!path.empty() && path.back() == '/') path.pop_back();
  for (;;) {
    paths.push_back(path);
    if (path.empty()) return paths;
    path.erase(path.rfind('/'));
  }
}

std::optional<long long> number(const std::string& text) {
  std::istringstream in(text);
  long long value = 0;
  if (!(in >> value)) return std::nullopt;
  return value;
}

std::optional<double> ratio(std::optional<long long> quota, std::optional<long long> period) {
  if (!quota || !period || *quota <= 0 || *period <= 0) return std::nullopt;  // -1: no quota
  return static_cast<double>(*quota) / static_cast<double>(*period);
}

// cgroup v2: "max 100000" or "QUOTA PERIOD".
std::optional<double> v2_quota(const ReadFile& read, const std::string& directory) {
  auto text = read(directory + "/cpu.max");
  if (!text) return std::nullopt;
  std::istringstream in(*text);
  std::string quota, period;
  if (!(in >> quota >> period) || quota == "max") return std::nullopt;
  return ratio(number(quota), number(period));
}

std::optional<double> v1_quota(const ReadFile& read, const std::string& directory) {
  auto quota = read(directory + "/cpu.cfs_quota_us");
  auto period = read(directory + "/cpu.cfs_period_us");
  if (!quota || !period) return std::nullopt;
  return ratio(number(*quota), number(*period));
}

void tighten(std::optional<double>& tightest, std::optional<double> quota) {
  if (quota && (!tightest || *quota < *tightest)) tightest = quota;
}

}  // namespace

std::optional<double> cgroup_cpu_quota(const ReadFile& read) {
  auto cgroups = read("/proc/self/cgroup");
  if (!cgroups) return std::nullopt;
  std::optional<double> tightest;
  // Lines are "ID:CONTROLLERS:PATH"; v2's is "0::PATH".
  for (const std::string& line : split(*cgroups, '\n')) {
    auto first = line.find(':'), second = line.find(':', first + 1);
    if (first == std::string::npos || second == std::string::npos) continue;
    std::string controllers = line.substr(first + 1, second - first - 1);
    std::string path = line.substr(second + 1);
    if (controllers.empty()) {
      for (const std::string& p : path_and_parents(path)) tighten(tightest, v2_quota(read, "/sys/fs/cgroup" + p));
      continue;
    }
    auto names = split(controllers, ',');
    if (std::find(names.begin(), names.end(), "cpu") == names.end()) continue;
    for (const std::string& mount : {"/sys/fs/cgroup/" + controllers, std::string("/sys/fs/cgroup/cpu")})
      for (const std::string& p : path_and_parents(path)) tighten(tightest, v1_quota(read, mount + p));
  }
  return tightest;
}

std::optional<double> cgroup_cpu_quota() { return cgroup_cpu_quota(read_system_file); }

}  // namespace agentq
