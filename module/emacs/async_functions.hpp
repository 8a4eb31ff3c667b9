// The module functions of asynchronous calls: each is the body of one
// sly-agent-q--module-… function (see module.cpp, which defines them in
// Emacs, with their docstrings).  Main thread only, inside a module call.
#pragma once

#include <emacs-module.h>

#include <cstddef>

#include "emacs/env.hpp"

namespace agentq::emacs {

emacs_value open_channel(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value submit(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value answer_later(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value later_pending(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value mcp_submit(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value mcp_line(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value open_answer_channel(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value close_answer_channel(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value answer_counts(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value inline_counts(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value open_request_channel(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value allow_direct_requests(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value direct_request_running(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value release(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value cancel(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value break_into(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value withdraw(const Env& env, ptrdiff_t nargs, emacs_value* args);
emacs_value async_serve(const Env& env, ptrdiff_t nargs, emacs_value* args);

}  // namespace agentq::emacs
