#include "sys/process_tree.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <set>
#include <string_view>

namespace agentq {

namespace {

template <typename Number>
bool parse_number(std::string_view text, Number& number) {
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
  const std::string_view line(text);
  auto open = line.find(" (");
  auto close = line.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) return std::nullopt;
  ProcessStat stat;
  if (!parse_number(line.substr(0, open), stat.pid)) return std::nullopt;
  // field[0] is stat's 3rd field (state), field[1] its 4th (ppid),
  // field[3] its 6th (session) and field[19] its 22nd (starttime).
  std::string_view field[20];
  std::size_t count = 0;
  for (std::size_t at = close + 1; count < 20;) {
    at = line.find_first_not_of(" \n", at);
    if (at == std::string_view::npos) break;
    std::size_t end = line.find_first_of(" \n", at);
    if (end == std::string_view::npos) end = line.size();
    field[count++] = line.substr(at, end - at);
    at = end;
  }
  if (count < 20 || field[0].size() != 1) return std::nullopt;
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

namespace {

// The processes stop_family stopped and end_processes has not yet
// continued or killed.  Should the process exit in between, they are
// killed at exit rather than left stopped for good.
class StoppedProcesses {
 public:
  void add(const ProcessStat& process) {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!registered_) registered_ = std::atexit([] { instance().kill_all(); }) == 0;
    stopped_[process.pid] = process.start_time;
  }
  void remove(int pid) {
    std::lock_guard<std::mutex> lock(mutex_);
    stopped_.erase(pid);
  }
  void kill_all() {
    std::lock_guard<std::mutex> lock(mutex_);
    for (const auto& [pid, start_time] : stopped_) {
      ProcessStat process;
      process.pid = pid;
      process.start_time = start_time;
      if (still_running(process, read_system_file)) kill(pid, SIGKILL);
    }
    stopped_.clear();
  }
  static StoppedProcesses& instance() {
    // Made before add() registers the handler, so destroyed after it ran.
    static StoppedProcesses stopped;
    return stopped;
  }

 private:
  std::mutex mutex_;
  std::map<int, unsigned long long> stopped_;
  bool registered_ = false;
};

// Stops PROCESS if it is still itself.  A pid read from /proc may have been
// reused since: its start time is read again once it is stopped, and a
// process that is not PROCESS is continued at once.
bool stop(const ProcessStat& process) {
  kill(process.pid, SIGSTOP);
  if (!still_running(process, read_system_file)) {
    kill(process.pid, SIGCONT);
    return false;
  }
  StoppedProcesses::instance().add(process);
  return true;
}

}  // namespace

std::vector<ProcessStat> stop_family(const std::vector<ProcessStat>& family, Clock::time_point give_up) {
  std::vector<ProcessStat> members;
  Family known;
  auto add = [&](const ProcessStat& process) {
    if (known.count(process.pid) || !stop(process)) return;
    members.push_back(process);
    known[process.pid] = process.start_time;
  };
  for (const ProcessStat& process : family)
    if (auto now = still_running(process, read_system_file)) add(*now);
  if (members.empty()) return members;
  const int session = members.front().session;
  // kill() returns before the process stops, and one still running may
  // start another: the table is read again until a reading in which every
  // member is stopped finds no new one.
  for (int look = 0; look < 50 && Clock::now() < give_up; ++look) {
    const std::vector<ProcessStat> table = process_table();
    const bool all_stopped = std::none_of(table.begin(), table.end(), [&](const ProcessStat& process) {
      auto member = known.find(process.pid);
      return member != known.end() && member->second == process.start_time &&
             std::string_view("TtZX").find(process.state) == std::string_view::npos;
    });
    const std::vector<ProcessStat> found = new_descendants(known, session, table);
    for (const ProcessStat& process : found) add(process);
    if (found.empty() && all_stopped) break;
    usleep(1000);
  }
  return members;
}

bool any_running(const std::vector<ProcessStat>& processes, const ReadFile& read) {
  return std::any_of(processes.begin(), processes.end(),
                     [&](const ProcessStat& process) { return still_running(process, read).has_value(); });
}

int end_processes(const std::vector<ProcessStat>& processes, Ending ending) {
  int running = 0;
  std::vector<int> stopped;
  for (const ProcessStat& process : processes) {
    auto now = still_running(process, read_system_file);
    if (!now) {
      StoppedProcesses::instance().remove(process.pid);
      continue;
    }
    ++running;
    if (ending == Ending::Kill) {
      kill(now->pid, SIGKILL);
      StoppedProcesses::instance().remove(now->pid);
    }
    if (ending == Ending::Terminate) {
      kill(now->pid, SIGTERM);
      stopped.push_back(now->pid);
    }
  }
  // Continued only once all have their SIGTERM: a parent that goes on
  // must find its children ending too.
  for (int pid : stopped) {
    kill(pid, SIGCONT);
    StoppedProcesses::instance().remove(pid);
  }
  return running;
}

}  // namespace agentq
