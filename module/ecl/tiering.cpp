#include "ecl/tiering.hpp"

#include <atomic>
#include <deque>
#include <mutex>

#include "ecl/lisp_function.hpp"
#include "ecl/lisp_string.hpp"

namespace agentq::ecl {
namespace {

std::atomic<bool> g_native_tiering{true};
std::atomic<std::uint64_t> g_waiting{0}, g_native{0}, g_bytecodes{0}, g_in_child{0}, g_in_session{0};

std::uint64_t count_of(cl_object n) { return ECL_FIXNUMP(n) && ecl_fixnum(n) > 0 ? static_cast<std::uint64_t>(ecl_fixnum(n)) : 0; }

cl_object publish_tiering_counts(cl_object waiting, cl_object native, cl_object bytecodes, cl_object in_child,
                                 cl_object in_session) {
  g_waiting.store(count_of(waiting), std::memory_order_relaxed);
  g_native.store(count_of(native), std::memory_order_relaxed);
  g_bytecodes.store(count_of(bytecodes), std::memory_order_relaxed);
  g_in_child.store(count_of(in_child), std::memory_order_relaxed);
  g_in_session.store(count_of(in_session), std::memory_order_relaxed);
  return one_value(ECL_NIL);
}

constexpr std::size_t kMaxNotes = 100;
std::mutex g_notes_mutex;
std::deque<std::string> g_notes;

cl_object tiering_enabled_p() { return one_value(g_native_tiering.load(std::memory_order_relaxed) ? ECL_T : ECL_NIL); }

cl_object post_note(cl_object text) {
  if (!ecl_stringp(text)) return one_value(ECL_NIL);
  std::string note = lisp_string_to_utf8(text);
  outside_lisp([&] {
    std::lock_guard lock(g_notes_mutex);
    g_notes.push_back(std::move(note));
    while (g_notes.size() > kMaxNotes) g_notes.pop_front();
  });
  return one_value(ECL_NIL);
}

}  // namespace

void set_native_tiering(bool on) { g_native_tiering.store(on, std::memory_order_relaxed); }
bool native_tiering() { return g_native_tiering.load(std::memory_order_relaxed); }

std::vector<std::string> take_runtime_notes() {
  std::lock_guard lock(g_notes_mutex);
  std::vector<std::string> notes(std::make_move_iterator(g_notes.begin()), std::make_move_iterator(g_notes.end()));
  g_notes.clear();
  return notes;
}

TieringCounts tiering_counts() {
  return {g_waiting.load(std::memory_order_relaxed), g_native.load(std::memory_order_relaxed),
          g_bytecodes.load(std::memory_order_relaxed), g_in_child.load(std::memory_order_relaxed),
          g_in_session.load(std::memory_order_relaxed)};
}

void define_tiering_functions() {
  define_lisp_function("%PUBLISH-TIERING-COUNTS", publish_tiering_counts);
  define_lisp_function("%TIERING-ENABLED-P", tiering_enabled_p);
  define_lisp_function("%POST-NOTE", post_note);
}

}  // namespace agentq::ecl
