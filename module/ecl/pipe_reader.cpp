#include "ecl/pipe_reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <string_view>

#include "ecl/lisp_function.hpp"
#include "ecl/lisp_string.hpp"

namespace agentq::ecl {

namespace {

// Read at most this much per call: a child writing without end must not
// keep the reader (with interrupts held back) from returning.
constexpr std::size_t kMostPerCall = 1 << 20;

// Thread-local rather than local: Lisp may unwind past this C++ code
// without running destructors (the heap exhausted while consing).
thread_local std::string t_bytes;

enum class PipeState { Drained, More, End };

PipeState read_available(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return PipeState::End;
  if (!(flags & O_NONBLOCK)) fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  char buffer[65536];
  while (t_bytes.size() < kMostPerCall) {
    ssize_t length = read(fd, buffer, sizeof buffer);
    if (length > 0) {
      t_bytes.append(buffer, static_cast<std::size_t>(length));
    } else if (length == 0) {
      return PipeState::End;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      return PipeState::Drained;
    } else if (errno != EINTR) {
      return PipeState::End;  // not a pipe to read any more
    }
  }
  return PipeState::More;
}

cl_object lisp_read_pipe(cl_object fd, cl_object carry) {
  t_bytes.clear();
  if (ECL_BASE_STRING_P(carry))
    t_bytes.append(reinterpret_cast<const char*>(carry->base_string.self), carry->base_string.fillp);
  PipeState state = PipeState::End;
  if (ECL_FIXNUMP(fd) && ecl_fixnum(fd) >= 0) {
    const int descriptor = static_cast<int>(ecl_fixnum(fd));
    if (!outside_lisp([&] { state = read_available(descriptor); })) state = PipeState::End;
  }
  const std::size_t complete = state == PipeState::End ? t_bytes.size() : complete_utf8_prefix(t_bytes);
  const std::string_view bytes(t_bytes);
  cl_object text = make_lisp_string(bytes.substr(0, complete));
  cl_object rest = ecl_alloc_simple_base_string(bytes.size() - complete);
  for (std::size_t i = complete; i < bytes.size(); ++i) rest->base_string.self[i - complete] = bytes[i];
  cl_object state_value = state == PipeState::End    ? ecl_make_keyword("END")
                          : state == PipeState::More ? ecl_make_keyword("MORE")
                                                     : ECL_NIL;
  cl_env_ptr env = ecl_process_env();
  env->values[0] = text;
  env->values[1] = rest;
  env->values[2] = state_value;
  env->nvalues = 3;
  return text;
}

}  // namespace

void define_pipe_reader() { define_lisp_function("%READ-PIPE", lisp_read_pipe); }

}  // namespace agentq::ecl
