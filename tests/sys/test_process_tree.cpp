#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "sys/process_tree.hpp"

using namespace agentq;
using namespace std::chrono_literals;

extern char** environ;

namespace {

// A /proc/PID/stat line as Linux writes it.
std::string stat_line(int pid, const std::string& name, char state, int parent, unsigned long long start,
                      int session = 1396) {
  return std::to_string(pid) + " (" + name + ") " + state + " " + std::to_string(parent) + " 2448 " +
         std::to_string(session) + " 0 -1 4194304 100 0 0 0 0 0 0 0 20 0 1 0 " + std::to_string(start) +
         " 3133440 413 18446744073709551615 94555086618624 0 0 0 0 17 1 0 0\n";
}

ProcessStat process(int pid, int parent, unsigned long long start = 1, int session = 1) {
  ProcessStat stat;
  stat.pid = pid;
  stat.parent = parent;
  stat.session = session;
  stat.start_time = start;
  stat.state = 'S';
  return stat;
}

std::vector<int> pids(const std::vector<ProcessStat>& processes) {
  std::vector<int> found;
  for (const ProcessStat& p : processes) found.push_back(p.pid);
  return found;
}

// How many of PROCESSES still run.
int running(const std::vector<ProcessStat>& processes, const ReadFile& read = read_system_file) {
  return static_cast<int>(std::count_if(processes.begin(), processes.end(),
                                         [&](const ProcessStat& p) { return any_running({p}, read); }));
}

Family family_of(const std::vector<ProcessStat>& processes) {
  Family family;
  for (const ProcessStat& p : processes) family[p.pid] = p.start_time;
  return family;
}

// Running processes whose command line is exactly ARGV.
int processes_running(const std::vector<std::string>& argv) {
  std::string wanted;
  for (const std::string& arg : argv) wanted += arg + '\0';
  int count = 0;
  for (const ProcessStat& p : process_table()) {
    auto now = find_process(p.pid);
    if (now && now->state != 'Z' && read_system_file("/proc/" + std::to_string(p.pid) + "/cmdline") == wanted)
      ++count;
  }
  return count;
}

pid_t spawn_shell(const char* script) {
  const char* argv[] = {"/bin/sh", "-c", script, nullptr};
  // Only stdin, stdout and stderr: a death test's pipe held open by a
  // stopped process would keep the test waiting instead of failing.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  pid_t shell = 0;
  int error = posix_spawn(&shell, "/bin/sh", &actions, nullptr, const_cast<char**>(argv), environ);
  posix_spawn_file_actions_destroy(&actions);
  return error ? 0 : shell;
}

// Kills and reaps SHELL, and kills FAMILY, whatever the test did.
struct Cleanup {
  pid_t shell;
  std::vector<ProcessStat>& family;
  ~Cleanup() {
    end_processes(family, Ending::Kill);
    if (shell <= 0) return;
    kill(shell, SIGKILL);
    waitpid(shell, nullptr, 0);
  }
};

}  // namespace

TEST(ProcessTree, ParsesProcStat) {
  auto stat = parse_process_stat(stat_line(2450, "cat", 'R', 2448, 2370655, 1396));
  ASSERT_TRUE(stat);
  EXPECT_EQ(stat->pid, 2450);
  EXPECT_EQ(stat->parent, 2448);
  EXPECT_EQ(stat->session, 1396);
  EXPECT_EQ(stat->state, 'R');
  EXPECT_EQ(stat->start_time, 2370655u);
  // A program may name itself anything, parentheses and spaces included.
  auto odd = parse_process_stat(stat_line(7, "a) Z 1 (b", 'S', 3, 99));
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->parent, 3);
  EXPECT_EQ(odd->state, 'S');
  EXPECT_EQ(odd->start_time, 99u);
}

TEST(ProcessTree, RefusesWhatIsNotProcStat) {
  for (const std::string& text : {std::string(), std::string("hello"), std::string("12 (x) S 1 2 3"),
                                  "x" + stat_line(1, "cat", 'R', 1, 1).substr(1),
                                  std::string("5 (cat) RR 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20"),
                                  std::string("5 (cat) R one 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20")})
    EXPECT_FALSE(parse_process_stat(text)) << text;
}

TEST(ProcessTree, FindsNewDescendantsParentsFirst) {
  // 10 → 11 → 12 → 13, 10 → 14; 20 and 21 are someone else's.  The table
  // lists children before their parents, as pid reuse can make /proc do.
  std::vector<ProcessStat> table = {process(13, 12), process(20, 1), process(12, 11), process(11, 10),
                                    process(21, 20), process(14, 10), process(10, 1)};
  auto found = pids(new_descendants({{10, 1}}, 1, table));
  ASSERT_EQ(found.size(), 4u);
  auto position = [&](int pid) { return std::find(found.begin(), found.end(), pid) - found.begin(); };
  EXPECT_LT(position(11), position(12));
  EXPECT_LT(position(12), position(13));
  EXPECT_LT(position(14), 4);
  // Members are not new; what they started is.
  EXPECT_EQ(pids(new_descendants({{10, 1}, {11, 1}, {12, 1}}, 1, table)), (std::vector<int>{13, 14}));
  EXPECT_TRUE(new_descendants({{13, 1}}, 1, table).empty());
  EXPECT_TRUE(new_descendants({{99, 1}}, 1, table).empty()) << "not in the table";
  EXPECT_TRUE(new_descendants({{10, 2}}, 1, table).empty()) << "pid 10 is another process now";
}

TEST(ProcessTree, DaemonsAndZombiesAreLeftOut) {
  // 10 (session 1) → 11 → 12; 11 → 13, which called setsid(), → 14; 11 → 15,
  // a zombie.
  ProcessStat zombie = process(15, 11, 1, 1);
  zombie.state = 'Z';
  std::vector<ProcessStat> table = {process(10, 1, 1, 1),  process(11, 10, 1, 1),  process(12, 11, 1, 1),
                                    process(13, 11, 1, 13), process(14, 13, 1, 13), zombie};
  EXPECT_EQ(pids(new_descendants({{10, 1}}, 1, table)), (std::vector<int>{11, 12}));
}

TEST(ProcessTree, OnlyTheSameLivingProcessRuns) {
  std::map<std::string, std::string> files = {
      {"/proc/30/stat", stat_line(30, "make", 'S', 1, 500)},
      {"/proc/31/stat", stat_line(31, "cc1", 'Z', 30, 600)},
      {"/proc/32/stat", stat_line(32, "reused", 'S', 1, 9999)},
  };
  ReadFile read = [&](const std::string& path) -> std::optional<std::string> {
    auto it = files.find(path);
    if (it == files.end()) return std::nullopt;
    return it->second;
  };
  // 30 runs; 31 is a zombie; 32 is another process now; 33 is gone.
  EXPECT_EQ(running({process(30, 1, 500), process(31, 30, 600), process(32, 1, 700), process(33, 1, 800)}, read), 1);
  EXPECT_EQ(running({}, read), 0);
  EXPECT_TRUE(any_running({process(33, 1, 800), process(30, 1, 500)}, read));
  EXPECT_FALSE(any_running({process(31, 30, 600), process(32, 1, 700)}, read));
  EXPECT_FALSE(any_running({}, read));
}

TEST(ProcessTree, WhatIsLeftStoppedIsKilledAtExit) {
  // A process that exits between stopping a family and ending it (Emacs
  // killed meanwhile) does not leave the family stopped for good.
  char path[] = "/tmp/agentq-stopped-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_EXIT(
      {
        pid_t sleeper = spawn_shell("exec sleep 30.4243");
        std::this_thread::sleep_for(20ms);
        auto stopped = stop_family({*find_process(sleeper)});
        FILE* out = fopen(path, "w");
        fprintf(out, "%d %llu %zu\n", sleeper, find_process(sleeper)->start_time, stopped.size());
        fclose(out);
        std::exit(find_process(sleeper)->state == 'T' ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
  FILE* in = fopen(path, "r");
  ASSERT_TRUE(in);
  ProcessStat sleeper;
  std::size_t members = 0;
  ASSERT_EQ(fscanf(in, "%d %llu %zu", &sleeper.pid, &sleeper.start_time, &members), 3);
  fclose(in);
  unlink(path);
  EXPECT_EQ(members, 1u);
  for (auto deadline = std::chrono::steady_clock::now() + 5s;
       any_running({sleeper}) && std::chrono::steady_clock::now() < deadline; std::this_thread::sleep_for(5ms)) {
  }
  EXPECT_FALSE(any_running({sleeper})) << "killed by the exiting process";
  end_processes({sleeper}, Ending::Kill);
}

TEST(ProcessTree, StopsAndEndsARealShellsFamily) {
  // /bin/sh starts two sleeps, and a third in a session of its own.
  pid_t shell = spawn_shell("sleep 30.4241 & sleep 30.4241 & setsid sleep 30.4241 & wait");
  ASSERT_GT(shell, 0);
  std::vector<ProcessStat> children, family;
  Cleanup cleanup{shell, children};
  auto root = find_process(shell);
  ASSERT_TRUE(root);
  // Until all three run and the setsid has happened.
  for (auto deadline = std::chrono::steady_clock::now() + 5s; std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(5ms)) {
    children.clear();
    int others = 0;
    for (const ProcessStat& p : process_table())
      if (p.parent == shell) {
        children.push_back(p);
        others += p.session != root->session;
      }
    if (children.size() == 3 && others == 1) break;
  }
  ASSERT_EQ(children.size(), 3u);

  family = stop_family({*root});
  ASSERT_EQ(family.size(), 3u) << "the shell and the two sleeps in its session";
  EXPECT_EQ(family.front().pid, shell);
  for (const ProcessStat& p : family) {
    auto now = find_process(p.pid);
    ASSERT_TRUE(now);
    EXPECT_EQ(now->state, 'T') << p.pid;
  }
  EXPECT_EQ(running(family), 3);
  EXPECT_EQ(processes_running({"sleep", "30.4241"}), 3);

  EXPECT_EQ(end_processes(family, Ending::Terminate), 3);
  int status = 0;
  ASSERT_EQ(waitpid(shell, &status, 0), shell);
  cleanup.shell = -1;  // reaped: its pid may be anyone's now
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
  for (auto deadline = std::chrono::steady_clock::now() + 5s;
       running(family) && std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(5ms)) {
  }
  EXPECT_EQ(running(family), 0);
  EXPECT_EQ(processes_running({"sleep", "30.4241"}), 1) << "the daemon runs on";
}

TEST(ProcessTree, NothingEscapesAShellStartingProcessesInALoop) {
  pid_t shell = spawn_shell("while :; do sleep 30.4242 & done");
  ASSERT_GT(shell, 0);
  std::vector<ProcessStat> family;
  Cleanup cleanup{shell, family};
  std::this_thread::sleep_for(50ms);
  auto root = find_process(shell);
  ASSERT_TRUE(root);
  // With the budget END-CHILD gives it (400 ms): the default 100 ms ran out
  // under a loaded ctest -j2 with some 500 sleeps started, and one escaped.
  family = stop_family({*root}, std::chrono::steady_clock::now() + std::chrono::milliseconds(400));
  ASSERT_GT(family.size(), 1u);
  // Stopped, the family starts no one more.
  EXPECT_TRUE(new_descendants(family_of(family), root->session, process_table()).empty());
  // The shell, each sleep, and any child caught between fork and exec.
  const int running = processes_running({"sleep", "30.4242"});
  EXPECT_GE(end_processes(family, Ending::Kill), running + 1);
  ASSERT_EQ(waitpid(shell, nullptr, 0), shell);
  cleanup.shell = -1;
  for (auto deadline = std::chrono::steady_clock::now() + 5s;
       processes_running({"sleep", "30.4242"}) && std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(5ms)) {
  }
  EXPECT_EQ(processes_running({"sleep", "30.4242"}), 0);
}
