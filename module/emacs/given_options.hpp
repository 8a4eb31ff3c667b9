// The options the Elisp side keeps (sly-agent-q--module-options: the
// timeout, the limits, tiering, reading an agent's code), as the runtime
// was last given them.  Every call into the module brings the values it
// runs with (`setq' and buffer-local values included), and only those not
// eql to the last given reach the runtime: comparing them here costs a few
// eq tests, where comparing them in Elisp cost a microsecond uncompiled.
#pragma once

#include <emacs-module.h>

#include <array>
#include <cstddef>
#include <string_view>

#include "emacs/env.hpp"

namespace agentq::emacs {

// The module's names of the options, in the order calls bring the values
// (the order of sly-agent-q--module-options, which the Elisp checks).
inline constexpr std::array<std::string_view, 5> kOptionKeys = {"eval-timeout", "output-limit", "heap-limit",
                                                                "native-tiering", "ask-before-agent-code"};

// Gives the runtime option KEY's VALUE and remembers it.  An unknown KEY or
// a VALUE of the wrong type is a ConversionError.
void configure_option(const Env& env, std::string_view key, emacs_value value);

// VALUES holds COUNT values, the first COUNT options in kOptionKeys order:
// gives the runtime those that are not eql to what it was last given.
void sync_options(const Env& env, const emacs_value* values, std::size_t count);

// VALUES (every option, in kOptionKeys order) are the options' global
// values now (Elisp's variable watchers tell).  A request the Lisp worker
// reads from a bridge runs with no call of Emacs's to bring its values:
// it may only while the runtime was last given exactly these
// (async::set_options_global), not a let-binding of some caller's.
void set_global_options(const Env& env, const emacs_value* values, std::size_t count);

}  // namespace agentq::emacs
