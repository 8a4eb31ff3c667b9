// The processes a child process started, so that they end with it.
// Ending /bin/sh when C-g interrupts `(ext:system "make")` leaves make and
// its compilers running; they are found here, from /proc, before anything
// is signalled (once their parent is gone they belong to init).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/system_files.hpp"

namespace agentq {

// What /proc/PID/stat says about a process.  A pid with its start time
// names one process: a pid alone may be reused once the process is gone.
struct ProcessStat {
  int pid = 0;
  int parent = 0;
  int session = 0;                    // setsid() starts a new one (daemons)
  unsigned long long start_time = 0;  // clock ticks after boot
  char state = '?';                   // 'Z': a zombie, ended but not reaped
};

// The process /proc/PID/stat's TEXT describes, or nullopt.
std::optional<ProcessStat> parse_process_stat(const std::string& text);

// The processes of TABLE descended from PID, not PID itself; parents come
// before their children.
std::vector<ProcessStat> descendants(int pid, const std::vector<ProcessStat>& table);

// The descendants of PID that are still in its session: what a terminal's
// interrupt would reach.  A daemon that left with setsid(), and what it
// started, is not ended with the program that started it.
std::vector<ProcessStat> session_descendants(int pid, const std::vector<ProcessStat>& table);

// The running system's processes.
std::vector<ProcessStat> process_table();

// What a process is sent: nothing (to see whether it still runs),
// SIGTERM, SIGKILL.
enum class Ending { Probe, Terminate, Kill };

// Sends each of PROCESSES that still runs (same pid, same start time, not
// a zombie) the signal of ENDING.  Returns how many still ran.  READ gives
// /proc's files.
int end_processes(const std::vector<ProcessStat>& processes, Ending ending,
                  const ReadFile& read = read_system_file);

}  // namespace agentq
