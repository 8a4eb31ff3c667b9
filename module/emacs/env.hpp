// A thin checked wrapper over emacs_env.  Every call that can leave a
// non-local exit pending is checked; a pending exit becomes a C++
// NonLocalExit exception that unwinds to the module function boundary
// (module.cpp), which returns to Emacs with the exit still pending — so a
// Lisp error or quit propagates exactly as Emacs raised it.
//
// Only the Emacs main thread, inside a module call, may use an Env.
#pragma once

#include <emacs-module.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentq::emacs {

// An Emacs signal or throw is pending on the env.
class NonLocalExit : public std::runtime_error {
 public:
  NonLocalExit() : std::runtime_error("Emacs non-local exit (error or quit)") {}
};

// Symbols and functions used on hot paths, interned once (global refs).
struct Symbols {
  emacs_value nil, t, quit, error;
  emacs_value list, car, cdr, plist_get, proper_list_p, length, vconcat, vector, make_hash_table, puthash, maphash;
  emacs_value symbol_name, string, integer, float_, symbol, cons_type, vector_type, hash_table_type;
  emacs_value test_key, equal, false_kw, null_kw;
  emacs_value id, name, arguments, function, success, content, error_kw, metadata;
  emacs_value execution_time_ms, safety_level, approved;
  emacs_value before, after, error_phase;
  emacs_value approved_kw, denied_kw, modified_kw;
  emacs_value sly_agent_q_error, call_elisp_handler, call_elisp_check, waiting, eval_for_lisp;
  emacs_value symbol_value, call_origin, ui_origin;  // sly-agent-q-call-origin, sly-agent-q-ui-origin
  emacs_value count_not_found, module_call_ended, lisp_used;
  // Keywords that tool calls use all the time, with their names: matched
  // with eq before falling back to symbol-name.
  std::vector<std::pair<emacs_value, std::string>> known_keywords;
};

class Env {
 public:
  explicit Env(emacs_env* raw) : env_(raw) {}

  emacs_env* raw() const { return env_; }
  static const Symbols& sym() { return symbols_; }
  // Interns the global symbols; call once from emacs_module_init.
  static void init_symbols(emacs_env* raw);

  // Throws NonLocalExit when an exit is pending.
  void check() const {
    if (env_->non_local_exit_check(env_) != emacs_funcall_exit_return) throw NonLocalExit();
  }
  bool exit_pending() const { return env_->non_local_exit_check(env_) != emacs_funcall_exit_return; }
  // Clears a pending signal unless it is a quit or a throw; returns true
  // when it cleared one.  For callbacks whose errors must not spread (hooks).
  bool clear_unless_quit() const;
  // Runs CLEANUP (which calls Emacs) with any pending non-local exit set
  // aside, then puts that exit back.  CLEANUP's own errors are dropped; a
  // quit it makes stays pending only when none was.
  template <typename Cleanup>
  void with_exit_set_aside(Cleanup cleanup) const {
    emacs_value symbol = nullptr, data = nullptr;
    auto kind = env_->non_local_exit_get(env_, &symbol, &data);
    env_->non_local_exit_clear(env_);
    try {
      cleanup();
    } catch (const NonLocalExit&) {
      clear_unless_quit();
    }
    if (kind == emacs_funcall_exit_return) return;
    env_->non_local_exit_clear(env_);
    if (kind == emacs_funcall_exit_signal)
      env_->non_local_exit_signal(env_, symbol, data);
    else
      env_->non_local_exit_throw(env_, symbol, data);
  }
  // Signals sly-agent-q-error with MESSAGE (pending; does not throw).
  void signal_error(std::string_view message) const;

  emacs_value intern(const char* name) const {
    emacs_value v = env_->intern(env_, name);
    check();
    return v;
  }
  emacs_value call(emacs_value fn, std::initializer_list<emacs_value> args) const {
    emacs_value v = env_->funcall(env_, fn, static_cast<ptrdiff_t>(args.size()),
                                  const_cast<emacs_value*>(args.begin()));
    check();
    return v;
  }
  emacs_value call(emacs_value fn, ptrdiff_t n, emacs_value* args) const {
    emacs_value v = env_->funcall(env_, fn, n, args);
    check();
    return v;
  }
  emacs_value str(std::string_view s) const;
  std::string to_string(emacs_value v) const;  // UTF-8 of an Emacs string
  emacs_value integer(std::intmax_t i) const {
    emacs_value v = env_->make_integer(env_, i);
    check();
    return v;
  }
  emacs_value real(double d) const {
    emacs_value v = env_->make_float(env_, d);
    check();
    return v;
  }
  std::intmax_t to_integer(emacs_value v) const {
    std::intmax_t i = env_->extract_integer(env_, v);
    check();
    return i;
  }
  double to_real(emacs_value v) const {
    double d = env_->extract_float(env_, v);
    check();
    return d;
  }
  bool is_nil(emacs_value v) const { return !env_->is_not_nil(env_, v); }
  bool eq(emacs_value a, emacs_value b) const { return env_->eq(env_, a, b); }
  emacs_value type_of(emacs_value v) const {
    emacs_value t = env_->type_of(env_, v);
    check();
    return t;
  }
  emacs_value boolean(bool b) const { return b ? symbols_.t : symbols_.nil; }

 private:
  emacs_env* env_;
  static Symbols symbols_;
};

}  // namespace agentq::emacs
