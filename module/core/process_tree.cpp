#include "core/process_tree.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

namespace agentq {

namespace {

template <typename Number>
bool parse_number(const std::string& text, Number& number) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  return error == std::errc() && end == text.data() + text.size();
}

// The process as it is now, when it is still PROCESS and still runs.
std::optional<ProcessStat> still_running(const ProcessStat& process, const ReadFile& read) {
  if (process.pid <= 0 || process.pid == getpid()) return std::nullopt;  // never ourselves
  auto now = find_process(process.pid, read);
  if (!now || now->start_time != process.start_time || now->state == 'Z' || now->state == 'X')
    return std::nullopt;
  return now;
}

}  // namespace

std::optional<ProcessStat> parse_process_stat(const std::string& text) {
  // "PID (COMM) STATE PPID …": COMM may hold spaces and parentheses of its
  // own, so the fields after it are counted from the last ')'.
  auto open = text.find(" (");
  auto close = text.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open) return std::nullopt;
  ProcessStat stat;
  if (!parse_number(text.substr(0, open), stat.pid)) return std::nullopt;
  std::istringstream fields(text.substr(close + 1));
  std::vector<std::string> field;
  for (std::string word; field.size() < 20 && fields >> word;) field.push_back(word);
  // field[0] is stat's 3rd field (state), field[1] its 4th (ppid),
  // field[3] its 6th (session) and field[19] its 22nd (starttime).
  if (field.size() < 20 || field[0].size() != 1) return std::nullopt;
  stat.state = field[0][0];
  if (!parse_number(field[1], stat.parent) || !parse_number(field[3], stat.session) ||
      !parse_number(field[19], stat.start_time))
    return std::nullopt;
  return stat;
}

std::vector<ProcessStat> new_descendants(const Family& family, int session, const std::vector<ProcessStat>& table) {
  std::set<int> parents;  // members that are in TABLE as themselves
  for (const ProcessStat& process : table)
    if (auto member = family.find(process.pid); member != family.end() && member->second == process.start_time)
      parents.insert(process.pid);
  std::vector<ProcessStat> found;
  // Each pass over TABLE adds the children of those found so far, until
  // one adds nothing (a child may be listed before its parent).
  for (bool added = true; added;) {
    added = false;
    for (const ProcessStat& process : table) {
      if (family.count(process.pid) || parents.count(process.pid) || process.pid == getpid() ||
          !parents.count(process.parent) ||
          process.session != session || process.state == 'Z' || process.state == 'X')
        continue;
      found.push_back(process);
      parents.insert(process.pid);
      added = true;
    }
  }
  return found;
}

std::vector<ProcessStat> process_table() {
  std::vector<ProcessStat> table;
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", error)) {
    const std::string name = entry.path().filename().string();
    int pid = 0;
    if (!parse_number(name, pid)) continue;
    auto text = read_system_file("/proc/" + name + "/stat");
    if (!text) continue;  // it ended meanwhile
    if (auto stat = parse_process_stat(*text)) table.push_back(*stat);
  }
  return table;
}

std::optional<ProcessStat> find_process(int pid, const ReadFile& read) {
  if (pid <= 0) return std::nullopt;
  auto text = read("/proc/" + std::to_string(pid) + "/stat");
  if (!text) return std::nullopt;
  auto stat = parse_process_stat(*text);
  if (!stat || stat->pid != pid) return std::nullopt;
  return stat;
}

std::vector<ProcessStat> stop_family(const std::vector<ProcessStat>& family) {
  std::vector<ProcessStat> members;
  Family known;
  auto stop = [&](const ProcessStat& process) {
    kill(process.pid, SIGSTOP);
    members.push_back(process);
    known[process.pid] = process.start_time;
  };
  for (const ProcessStat& process : family)
    if (auto now = still_running(process, read_system_file); now && !known.count(now->pid)) stop(*now);
  if (members.empty()) return members;
  const int session = members.front().session;
  // kill() returns before the process stops, and one still running may
  // start another: the table is read again until a reading in which every
  // member is stopped finds no new one.
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::milliseconds(100);
  for (int look = 0; look < 50 && std::chrono::steady_clock::now() < give_up; ++look) {
    const std::vector<ProcessStat> table = process_table();
    const bool all_stopped = std::none_of(table.begin(), table.end(), [&](const ProcessStat& process) {
      auto member = known.find(process.pid);
      return member != known.end() && member->second == process.start_time &&
             std::string_view("TtZX").find(process.state) == std::string_view::npos;
    });
    const std::vector<ProcessStat> found = new_descendants(known, session, table);
    for (const ProcessStat& process : found) stop(process);
    if (found.empty() && all_stopped) break;
    usleep(1000);
  }
  return members;
}

int end_processes(const std::vector<ProcessStat>& processes, Ending ending, const ReadFile& read) {
  int running = 0;
  std::vector<int> stopped;
  for (const ProcessStat& process : processes) {
    auto now = still_running(process, read);
    if (!now) continue;
    ++running;
    if (ending == Ending::Kill) kill(now->pid, SIGKILL);
    if (ending == Ending::Terminate) {
      kill(now->pid, SIGTERM);
      stopped.push_back(now->pid);
    }
  }
  // Continued only once all have their SIGTERM: a parent that goes on
  // must find its children ending too.
  for (int pid : stopped) kill(pid, SIGCONT);
  return running;
}

}  // namespace agentq
