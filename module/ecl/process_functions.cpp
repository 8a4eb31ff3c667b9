#include "ecl/process_functions.hpp"

#include <chrono>
#include <vector>

#include "sys/process_tree.hpp"
#include "ecl/lisp_function.hpp"

namespace agentq::ecl {

namespace {

// Thread-local rather than local: nothing of ours with a destructor may be
// on the stack when Lisp unwinds (a pending interrupt, the heap exhausted
// while consing the result).
thread_local std::vector<ProcessStat> t_processes;

// t_processes as a Lisp list of (PID . START-TIME).
cl_object processes_as_list() {
  cl_object list = ECL_NIL;
  for (auto p = t_processes.rbegin(); p != t_processes.rend(); ++p)
    list = ecl_cons(ecl_cons(ecl_make_fixnum(p->pid), ecl_make_unsigned_integer(p->start_time)), list);
  return list;
}

// Fills t_processes from a list of (PID . START-TIME); other entries are
// skipped.  Does not allocate on the Lisp heap.
void processes_from_list(cl_object list) {
  t_processes.clear();
  for (cl_object rest = list; ECL_CONSP(rest); rest = ECL_CONS_CDR(rest)) {
    cl_object entry = ECL_CONS_CAR(rest);
    if (!ECL_CONSP(entry) || !ECL_FIXNUMP(ECL_CONS_CAR(entry)) || !ECL_FIXNUMP(ECL_CONS_CDR(entry))) continue;
    ProcessStat process;
    process.pid = static_cast<int>(ecl_fixnum(ECL_CONS_CAR(entry)));
    process.start_time = static_cast<unsigned long long>(ecl_fixnum(ECL_CONS_CDR(entry)));
    if (process.pid > 0) t_processes.push_back(process);
  }
}

cl_object lisp_stop_family(cl_object pid_or_family, cl_object milliseconds) {
  const bool one = ECL_FIXNUMP(pid_or_family);
  const int pid = one ? static_cast<int>(ecl_fixnum(pid_or_family)) : 0;
  const auto give_up =
      Clock::now() + std::chrono::milliseconds(ECL_FIXNUMP(milliseconds) ? ecl_fixnum(milliseconds) : 100);
  if (!one) processes_from_list(pid_or_family);
  const bool done = outside_lisp([&] {
    if (one) {
      t_processes.clear();
      if (auto process = find_process(pid)) t_processes.push_back(*process);
    }
    t_processes = stop_family(t_processes, give_up);
  });
  if (!done) t_processes.clear();  // out of memory: nothing found
  return one_value(processes_as_list());
}

cl_object lisp_any_running_p(cl_object family) {
  processes_from_list(family);
  bool running = false;
  outside_lisp([&] { running = any_running(t_processes); });
  return one_value(running ? ECL_T : ECL_NIL);
}

cl_object lisp_end_processes(cl_object family, cl_object how) {
  const Ending ending = how == ecl_make_keyword("KILL") ? Ending::Kill : Ending::Terminate;
  processes_from_list(family);
  outside_lisp([&] { end_processes(t_processes, ending); });
  return one_value(ECL_NIL);
}

}  // namespace

void define_process_functions() {
  define_lisp_function("%STOP-FAMILY", lisp_stop_family);
  define_lisp_function("%ANY-RUNNING-P", lisp_any_running_p);
  define_lisp_function("%END-PROCESSES", lisp_end_processes);
}

}  // namespace agentq::ecl
