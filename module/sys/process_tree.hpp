// The processes a child process started, so that they end with it.
// Ending /bin/sh when C-g interrupts `(ext:system "make")` leaves make and
// its compilers running.  They are found in /proc and stopped (SIGSTOP)
// before anything else is sent: a stopped process starts no more, and
// once its parent is gone a process belongs to init and can no longer be
// told apart.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "sys/system_files.hpp"

namespace agentq {

// What /proc/PID/stat says about a process.  A pid with its start time
// names one process: a pid alone may be reused once the process is gone.
struct ProcessStat {
  int pid = 0;
  int parent = 0;
  int session = 0;                    // setsid() starts a new one (daemons)
  unsigned long long start_time = 0;  // clock ticks after boot
  char state = '?';                   // 'T': stopped; 'Z': ended, not reaped
};

// The process /proc/PID/stat's TEXT describes, or nullopt.
std::optional<ProcessStat> parse_process_stat(const std::string& text);

// Members of a family of processes: pid → start time.
using Family = std::map<int, unsigned long long>;

// The processes of TABLE descended from FAMILY's members (found in TABLE
// as themselves: same pid, same start time) that are not members yet,
// still run and are in SESSION: what a terminal's interrupt would reach (a
// daemon that left with setsid(), and what it started, is not ended with
// the program that started it).  Parents come before their children.
std::vector<ProcessStat> new_descendants(const Family& family, int session, const std::vector<ProcessStat>& table);

// The running system's processes.
std::vector<ProcessStat> process_table();

// Process PID as /proc has it now.
std::optional<ProcessStat> find_process(int pid, const ReadFile& read = read_system_file);

// The calling process is never taken for a member, nor signalled.

using Clock = std::chrono::steady_clock;

// Stops the members of FAMILY that still run (same pid, same start time,
// not a zombie) and every process descended from them in the first one's
// session, looking again until a look finds no new one and all are
// stopped, or until GIVE_UP.  Returns the members found, parents before
// children.  They stay stopped until end_processes continues or kills
// them; should the process exit first, they are killed then.
std::vector<ProcessStat> stop_family(const std::vector<ProcessStat>& family,
                                     Clock::time_point give_up = Clock::now() + std::chrono::milliseconds(100));

// Whether any of PROCESSES still runs: stops at the first that does.
bool any_running(const std::vector<ProcessStat>& processes, const ReadFile& read = read_system_file);

// What end_processes does to each process that still runs.
enum class Ending {
  Terminate,  // SIGTERM, then SIGCONT (once all have their SIGTERM)
  Kill,       // SIGKILL
};

// Applies ENDING to each of PROCESSES that still runs.  Returns how many
// still ran.
int end_processes(const std::vector<ProcessStat>& processes, Ending ending);

}  // namespace agentq
