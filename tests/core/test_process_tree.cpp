#include <gtest/gtest.h>

#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <map>
#include <thread>

#include "core/process_tree.hpp"

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

TEST(ProcessTree, FindsDescendantsParentsFirst) {
  // 10 → 11 → 12 → 13, 10 → 14; 20 and 21 are someone else's.  The table
  // lists children before their parents, as pid reuse can make /proc do.
  std::vector<ProcessStat> table = {process(13, 12), process(20, 1), process(12, 11), process(11, 10),
                                    process(21, 20), process(14, 10), process(10, 1)};
  auto found = pids(descendants(10, table));
  ASSERT_EQ(found.size(), 4u);
  auto position = [&](int pid) { return std::find(found.begin(), found.end(), pid) - found.begin(); };
  EXPECT_LT(position(11), position(12));
  EXPECT_LT(position(12), position(13));
  EXPECT_LT(position(14), 4);
  EXPECT_TRUE(descendants(13, table).empty());
  EXPECT_TRUE(descendants(99, table).empty());
}

TEST(ProcessTree, DaemonsLeaveTheFamily) {
  // 10 (session 1) → 11 → 12; 11 → 13, which called setsid(), → 14.
  std::vector<ProcessStat> table = {process(10, 1, 1, 1), process(11, 10, 1, 1), process(12, 11, 1, 1),
                                    process(13, 11, 1, 13), process(14, 13, 1, 13)};
  EXPECT_EQ(pids(descendants(10, table)).size(), 4u);
  EXPECT_EQ(pids(session_descendants(10, table)), (std::vector<int>{11, 12}));
  EXPECT_TRUE(session_descendants(99, table).empty()) << "not in the table";
}

TEST(ProcessTree, SignalsOnlyTheSameLivingProcess) {
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
  EXPECT_EQ(end_processes({process(30, 1, 500), process(31, 30, 600), process(32, 1, 700), process(33, 1, 800)},
                          Ending::Probe, read),
            1);
  EXPECT_EQ(end_processes({}, Ending::Probe, read), 0);
}

TEST(ProcessTree, EndsTheChildrenOfARealShell) {
  // /bin/sh starts two sleeps, and a third in a session of its own, and
  // waits for them.
  const char* argv[] = {"/bin/sh", "-c", "sleep 30 & sleep 30 & setsid sleep 30 & wait", nullptr};
  pid_t shell = 0;
  ASSERT_EQ(posix_spawn(&shell, "/bin/sh", nullptr, nullptr, const_cast<char**>(argv), environ), 0);
  std::vector<ProcessStat> all, family;
  // Whatever happens below, nothing outlives the test.
  struct Cleanup {
    pid_t shell;
    std::vector<ProcessStat>& all;
    ~Cleanup() {
      end_processes(all, Ending::Kill);
      if (shell <= 0) return;
      kill(shell, SIGKILL);
      waitpid(shell, nullptr, 0);
    }
  } cleanup{shell, all};
  // Until all three run and the setsid has happened.
  for (auto deadline = std::chrono::steady_clock::now() + 5s;
       (all.size() != 3 || family.size() != 2) && std::chrono::steady_clock::now() < deadline;
       std::this_thread::sleep_for(5ms)) {
    auto table = process_table();
    all = descendants(shell, table);
    family = session_descendants(shell, table);
  }
  ASSERT_EQ(all.size(), 3u);
  ASSERT_EQ(family.size(), 2u);
  for (const ProcessStat& p : all) EXPECT_EQ(p.parent, shell);
  EXPECT_EQ(end_processes(family, Ending::Probe), 2);

  EXPECT_EQ(end_processes(all, Ending::Terminate), 3);
  // The shell's wait ends with its children; it reaps them and exits.
  int status = 0;
  ASSERT_EQ(waitpid(shell, &status, 0), shell);
  cleanup.shell = -1;  // reaped: its pid may be anyone's now
  EXPECT_TRUE(WIFEXITED(status));
  EXPECT_EQ(end_processes(all, Ending::Probe), 0);
}
