// The one way to include ECL in this project.
#pragma once

// Keep gc.h from turning pthread_create into GC_pthread_create: our own
// threads (the worker) register with ECL through cl_boot, others never
// touch the Lisp heap.
#define GC_NO_THREAD_REDIRECTS 1
#include <ecl/ecl.h>
// ecl/external.h defines `funcall' as a macro, which breaks env->funcall.
#undef funcall
