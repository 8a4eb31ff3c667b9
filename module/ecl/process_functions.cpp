#include "ecl/process_functions.hpp"

#include <vector>

#include "core/process_tree.hpp"
#include "ecl/lisp_function.hpp"

namespace agentq::ecl {

namespace {

// Thread-local rather than local: a Lisp error while consing (the heap
// exhausted) unwinds past this C++ code without running destructors.
thread_local std::vector<ProcessStat> t_processes;

cl_object one_value(cl_object value) {
  cl_env_ptr env = ecl_process_env();
  env->nvalues = 1;
  return env->values[0] = value;
}

cl_object lisp_descendants(cl_object pid) {
  t_processes.clear();
  if (ECL_FIXNUMP(pid) && ecl_fixnum(pid) > 0) {
    try {
      t_processes = session_descendants(static_cast<int>(ecl_fixnum(pid)), process_table());
    } catch (...) {  // out of memory, /proc unreadable: nothing found
      t_processes.clear();
    }
  }
  cl_object list = ECL_NIL;
  for (auto p = t_processes.rbegin(); p != t_processes.rend(); ++p)
    list = ecl_cons(ecl_cons(ecl_make_fixnum(p->pid), ecl_make_unsigned_integer(p->start_time)), list);
  return one_value(list);
}

cl_object lisp_end_processes(cl_object processes, cl_object how) {
  t_processes.clear();
  Ending ending = how == ecl_make_keyword("KILL")        ? Ending::Kill
                  : how == ecl_make_keyword("TERMINATE") ? Ending::Terminate
                                                         : Ending::Probe;
  int running = 0;
  try {
    for (cl_object rest = processes; ECL_CONSP(rest); rest = ECL_CONS_CDR(rest)) {
      cl_object entry = ECL_CONS_CAR(rest);
      if (!ECL_CONSP(entry) || !ECL_FIXNUMP(ECL_CONS_CAR(entry)) || !ECL_FIXNUMP(ECL_CONS_CDR(entry))) continue;
      ProcessStat process;
      process.pid = static_cast<int>(ecl_fixnum(ECL_CONS_CAR(entry)));
      process.start_time = static_cast<unsigned long long>(ecl_fixnum(ECL_CONS_CDR(entry)));
      t_processes.push_back(process);
    }
    running = end_processes(t_processes, ending);
  } catch (...) {
  }
  return one_value(ecl_make_fixnum(running));
}

}  // namespace

void define_process_functions() {
  define_lisp_function("%DESCENDANTS", lisp_descendants);
  define_lisp_function("%END-PROCESSES", lisp_end_processes);
}

}  // namespace agentq::ecl
