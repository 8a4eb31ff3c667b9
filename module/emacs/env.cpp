#include "emacs/env.hpp"

#include <vector>

#include "core/utf8.hpp"

namespace agentq::emacs {

Symbols Env::symbols_;

namespace {

emacs_value global(emacs_env* env, const char* name) {
  return env->make_global_ref(env, env->intern(env, name));
}

}  // namespace

void Env::init_symbols(emacs_env* env) {
  Symbols& s = symbols_;
  s.nil = global(env, "nil");
  s.t = global(env, "t");
  s.quit = global(env, "quit");
  s.error = global(env, "error");
  s.list = global(env, "list");
  s.car = global(env, "car");
  s.cdr = global(env, "cdr");
  s.plist_get = global(env, "plist-get");
  s.proper_list_p = global(env, "proper-list-p");
  s.length = global(env, "length");
  s.vconcat = global(env, "vconcat");
  s.vector = global(env, "vector");
  s.make_hash_table = global(env, "make-hash-table");
  s.puthash = global(env, "puthash");
  s.maphash = global(env, "maphash");
  s.symbol_name = global(env, "symbol-name");
  s.string = global(env, "string");
  s.integer = global(env, "integer");
  s.float_ = global(env, "float");
  s.symbol = global(env, "symbol");
  s.cons_type = global(env, "cons");
  s.vector_type = global(env, "vector");
  s.hash_table_type = global(env, "hash-table");
  s.test_key = global(env, ":test");
  s.equal = global(env, "equal");
  s.false_kw = global(env, ":false");
  s.null_kw = global(env, ":null");
  s.id = global(env, ":id");
  s.name = global(env, ":name");
  s.arguments = global(env, ":arguments");
  s.function = global(env, ":function");
  s.success = global(env, ":success");
  s.content = global(env, ":content");
  s.error_kw = global(env, ":error");
  s.metadata = global(env, ":metadata");
  s.execution_time_ms = global(env, ":execution_time_ms");
  s.safety_level = global(env, ":safety_level");
  s.approved = global(env, ":approved");
  s.before = global(env, ":before");
  s.after = global(env, ":after");
  s.error_phase = global(env, ":error");
  s.approved_kw = global(env, ":approved");
  s.denied_kw = global(env, ":denied");
  s.modified_kw = global(env, ":modified");
  s.sly_agent_q_error = global(env, "sly-agent-q-error");
  s.call_elisp_handler = global(env, "sly-agent-q--call-elisp-handler");
  s.call_elisp_check = global(env, "sly-agent-q--call-elisp-check");
  s.waiting = global(env, "sly-agent-q--waiting");
  s.eval_for_lisp = global(env, "sly-agent-q--eval-for-lisp");
  s.symbol_value = global(env, "symbol-value");
  s.call_origin = global(env, "sly-agent-q-call-origin");
  s.ui_origin = global(env, "sly-agent-q-ui-origin");
  s.count_not_found = global(env, "sly-agent-q--count-not-found");
  s.module_call_ended = global(env, "sly-agent-q--module-call-ended");
  s.lisp_used = global(env, "sly-agent-q--lisp-used");
  for (const char* name : {"id", "name", "arguments", "function", "code", "package", "timeout", "capture-time",
                           "capture_time", "type", "description", "path", "content"})
    s.known_keywords.emplace_back(global(env, (std::string(":") + name).c_str()), name);
}

bool Env::clear_unless_quit() const {
  emacs_value symbol = nullptr, data = nullptr;
  auto kind = env_->non_local_exit_get(env_, &symbol, &data);
  if (kind == emacs_funcall_exit_return) return false;
  // Every env function, eq included, does nothing while an exit is pending:
  // clear first, then look, and put a quit or throw back.
  env_->non_local_exit_clear(env_);
  if (kind == emacs_funcall_exit_throw) {
    env_->non_local_exit_throw(env_, symbol, data);
    return false;
  }
  if (env_->eq(env_, symbol, symbols_.quit)) {
    env_->non_local_exit_signal(env_, symbol, data);
    return false;
  }
  return true;
}

void Env::signal_error(std::string_view message) const {
  if (exit_pending()) return;  // never replace an error or quit already on its way
  emacs_value text = env_->make_string(env_, message.data(), static_cast<ptrdiff_t>(message.size()));
  if (exit_pending()) return;
  emacs_value data = env_->funcall(env_, symbols_.list, 1, &text);
  if (exit_pending()) return;
  env_->non_local_exit_signal(env_, symbols_.sly_agent_q_error, data);
}

namespace {

// S with every byte that does not begin a well-formed UTF-8 sequence
// replaced by U+FFFD.  With ASCII_ONLY, every non-ASCII byte becomes '?'.
std::string repaired_utf8(std::string_view s, bool ascii_only) {
  if (!ascii_only) return utf8::repaired(s);
  std::string out(s);
  for (char& c : out)
    if (static_cast<unsigned char>(c) >= 0x80) c = '?';
  return out;
}

}  // namespace

emacs_value Env::str(std::string_view s) const {
  emacs_value v = env_->make_string(env_, s.data(), static_cast<ptrdiff_t>(s.size()));
  if (!exit_pending()) return v;
  // Emacs refuses text that is not UTF-8: raw bytes that came in from a
  // unibyte string (an id, a tool name).  Hand back a repaired copy rather
  // than fail the whole batch over it.
  for (bool ascii_only : {false, true}) {
    if (!clear_unless_quit()) throw NonLocalExit();
    std::string repaired = repaired_utf8(s, ascii_only);
    v = env_->make_string(env_, repaired.data(), static_cast<ptrdiff_t>(repaired.size()));
    if (!exit_pending()) return v;
  }
  check();
  return v;
}

std::string Env::to_string(emacs_value v) const {
  ptrdiff_t size = 0;
  if (!env_->copy_string_contents(env_, v, nullptr, &size)) check();
  std::string out(static_cast<std::size_t>(size), '\0');
  if (!env_->copy_string_contents(env_, v, out.data(), &size)) check();
  out.resize(static_cast<std::size_t>(size > 0 ? size - 1 : 0));  // drop the NUL
  return out;
}

}  // namespace agentq::emacs
