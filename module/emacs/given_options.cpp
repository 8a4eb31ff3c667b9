#include "emacs/given_options.hpp"

#include <string>

#include "app/services.hpp"
#include "emacs/async_calls.hpp"
#include "emacs/convert.hpp"

namespace agentq::emacs {

namespace {

// The last value given for each of kOptionKeys (global references), or
// null before the first.  Only the main thread, in module calls, uses them.
std::array<emacs_value, kOptionKeys.size()> given{};
// The global values, as Elisp last told them (set_global_options).
std::array<emacs_value, kOptionKeys.size()> global{};

bool same(const Env& env, emacs_value a, emacs_value b) {
  static emacs_value eql = nullptr;
  if (env.eq(a, b)) return true;
  if (!eql) {
    eql = env.raw()->make_global_ref(env.raw(), env.intern("eql"));
    env.check();
  }
  return !env.is_nil(env.call(eql, {a, b}));  // an equal float, say
}

// Whether the runtime runs with the global values now.
void recompute_global(const Env& env) {
  bool all = true;
  for (std::size_t i = 0; i < kOptionKeys.size() && all; ++i)
    all = given[i] && global[i] && same(env, given[i], global[i]);
  async::set_options_global(all);
}

void keep(const Env& env, emacs_value& slot, emacs_value value) {
  emacs_env* raw = env.raw();
  emacs_value kept = raw->make_global_ref(raw, value);
  env.check();
  if (slot) raw->free_global_ref(raw, slot);
  slot = kept;
}

std::size_t option_index(std::string_view key) {
  for (std::size_t i = 0; i < kOptionKeys.size(); ++i)
    if (kOptionKeys[i] == key) return i;
  throw ConversionError("unknown setting " + std::string(key));
}

void give(const Env& env, std::size_t index, emacs_value value) {
  const std::string key(kOptionKeys[index]);
  json converted = to_json(env, value);
  auto number = [&]() -> double {
    if (converted.is_null()) return 0;
    if (!converted.is_number()) throw ConversionError("sly-agent-q: " + key + " must be a number or nil");
    return converted.get<double>();
  };
  auto flag = [&] { return !converted.is_null() && converted != false; };
  app::Lisp& lisp = app::services().lisp;
  switch (index) {
    case 0:
      lisp.set_eval_timeout(number());
      break;
    case 1: {
      // Lisp keeps at most this many characters per section: at least 1, at
      // most 1 G characters (a fixnum everywhere, no overflow).
      double limit = number();
      constexpr double kMax = 1e9;
      lisp.set_output_limit(static_cast<std::size_t>(limit >= 1 ? (limit < kMax ? limit : kMax) : kMax));
      break;
    }
    case 2: {
      double limit = number();
      lisp.set_heap_limit(limit > 0 ? static_cast<std::size_t>(limit) : 0);
      break;
    }
    case 3:
      lisp.set_native_tiering(flag());
      break;
    default:
      lisp.set_ask_before_agent_code(flag());
      break;
  }
  keep(env, given[index], value);
  recompute_global(env);
}

}  // namespace

void configure_option(const Env& env, std::string_view key, emacs_value value) {
  give(env, option_index(key), value);
}

void sync_options(const Env& env, const emacs_value* values, std::size_t count) {
  for (std::size_t i = 0; i < count && i < kOptionKeys.size(); ++i) {
    if (given[i] && same(env, values[i], given[i])) continue;
    give(env, i, values[i]);
  }
}

void set_global_options(const Env& env, const emacs_value* values, std::size_t count) {
  for (std::size_t i = 0; i < count && i < kOptionKeys.size(); ++i) keep(env, global[i], values[i]);
  recompute_global(env);
}

}  // namespace agentq::emacs
