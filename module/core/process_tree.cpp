#include "core/process_tree.hpp"

#include <signal.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <set>
#include <sstream>

namespace agentq {

namespace {

template <typename Number>
bool parse_number(const std::string& text, Number& number) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), number);
  return error == std::errc() && end == text.data() + text.size();
}

int signal_of(Ending ending) {
  switch (ending) {
    case Ending::Probe: return 0;
    case Ending::Terminate: return SIGTERM;
    case Ending::Kill: return SIGKILL;
  }
  return 0;
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

std::vector<ProcessStat> descendants(int pid, const std::vector<ProcessStat>& table) {
  std::vector<ProcessStat> found;
  std::set<int> family{pid};
  // Each pass over TABLE adds the children of those found so far, until
  // one adds nothing.
  for (bool added = true; added;) {
    added = false;
    for (const ProcessStat& process : table)
      if (family.count(process.parent) && !family.count(process.pid)) {
        family.insert(process.pid);
        found.push_back(process);
        added = true;
      }
  }
  return found;
}

std::vector<ProcessStat> session_descendants(int pid, const std::vector<ProcessStat>& table) {
  auto self = std::find_if(table.begin(), table.end(), [pid](const ProcessStat& p) { return p.pid == pid; });
  if (self == table.end()) return {};
  std::vector<ProcessStat> found = descendants(pid, table);
  found.erase(std::remove_if(found.begin(), found.end(),
                             [session = self->session](const ProcessStat& p) { return p.session != session; }),
              found.end());
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

int end_processes(const std::vector<ProcessStat>& processes, Ending ending, const ReadFile& read) {
  int running = 0;
  for (const ProcessStat& process : processes) {
    if (process.pid <= 0) continue;
    auto text = read("/proc/" + std::to_string(process.pid) + "/stat");
    auto now = text ? parse_process_stat(*text) : std::nullopt;
    if (!now || now->start_time != process.start_time || now->state == 'Z' || now->state == 'X') continue;
    ++running;
    if (ending != Ending::Probe) kill(process.pid, signal_of(ending));
  }
  return running;
}

}  // namespace agentq
