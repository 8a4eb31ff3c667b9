// The Lisp runtime's side of inline Lisp (core/idle_reader.hpp), as a
// server sees it: app::Lisp's functions, so mcp/ needs no ECL.
#pragma once

#include <functional>

#include "core/idle_reader.hpp"

namespace agentq::mcp {

struct InlineLisp {
  std::function<void(IdleReader*)> set_reader;  // null: none; waits until the worker has left read()
  std::function<bool()> claim;                  // Runtime::claim_inline_job
  std::function<void()> reader_changed;         // the reader's fd() changed
  // The worker is alive and idle: nothing runs, is queued or unwinds.
  std::function<bool()> idle;
};

}  // namespace agentq::mcp
