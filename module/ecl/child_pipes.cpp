#include "ecl/child_pipes.hpp"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <ctime>
#include <string>
#include <string_view>

#include "core/utf8.hpp"
#include "ecl/lisp_function.hpp"
#include "ecl/lisp_string.hpp"

namespace agentq::ecl {

namespace {

// Read or write at most this much per call: a child writing (or reading)
// without end must not keep us, with interrupts held back, from returning.
constexpr std::size_t kMostPerCall = 1 << 20;

bool set_nonblocking(int fd) {
  const int flags = fcntl(fd, F_GETFL);
  if (flags < 0) return false;
  return (flags & O_NONBLOCK) || fcntl(fd, F_SETFL, flags | O_NONBLOCK) == 0;
}

// Thread-local rather than local: Lisp may unwind past this C++ code
// without running destructors (the heap exhausted while consing).
thread_local std::string t_bytes;

enum class PipeState { Drained, More, End };

PipeState read_available(int fd) {
  if (!set_nonblocking(fd)) return PipeState::End;
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
  const std::size_t complete = state == PipeState::End ? t_bytes.size() : utf8::complete_prefix(t_bytes);
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

// ---------------------------------------------------------------- writing

enum class WriteState { Written, Full, Closed };

// SIGPIPE is held back while we write, and one our write raised is taken
// back: a reader that went away is an answer (EPIPE), not a reason to end
// the process.
class SigpipeHeldBack {
 public:
  SigpipeHeldBack() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
    sigset_t pending;
    was_pending_ = sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
  }
  ~SigpipeHeldBack() {
    if (raised_ && !was_pending_) {
      const timespec now{};
      while (sigtimedwait(&pipe_, nullptr, &now) == SIGPIPE) {
      }
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  void raised() { raised_ = true; }
  SigpipeHeldBack(const SigpipeHeldBack&) = delete;
  SigpipeHeldBack& operator=(const SigpipeHeldBack&) = delete;

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false, raised_ = false;
};

bool octets_p(cl_object data) { return ecl_t_of(data) == t_vector && data->vector.elttype == ecl_aet_b8; }

// The bytes of DATA[START, …) for one write: UTF-8 of whole characters, or
// octets, at most PIPE_BUF of them, which a pipe takes whole or not at all.
// Returns the index after them.
std::size_t next_chunk(std::string& chunk, cl_object data, std::size_t start) {
  chunk.clear();
  if (octets_p(data)) {
    const std::size_t end = std::min<std::size_t>(data->vector.fillp, start + PIPE_BUF);
    if (start < end) chunk.append(reinterpret_cast<const char*>(data->vector.self.b8) + start, end - start);
    return std::max(start, end);
  }
  return append_utf8_of(chunk, data, start, PIPE_BUF);
}

WriteState write_available(int fd, cl_object data, std::size_t& position) {
  if (!set_nonblocking(fd)) return WriteState::Closed;
  SigpipeHeldBack sigpipe;
  std::string chunk;
  for (std::size_t written = 0; written < kMostPerCall;) {
    const std::size_t next = next_chunk(chunk, data, position);
    if (chunk.empty()) return WriteState::Written;
    ssize_t length = write(fd, chunk.data(), chunk.size());
    if (length == static_cast<ssize_t>(chunk.size())) {
      position = next;
      written += chunk.size();
    } else if (length < 0 && errno == EINTR) {
      continue;
    } else if (length < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return WriteState::Full;
    } else {
      // EPIPE, or not a pipe (a pipe never takes part of PIPE_BUF bytes).
      if (length < 0 && errno == EPIPE) sigpipe.raised();
      return WriteState::Closed;
    }
  }
  return WriteState::Full;
}

std::size_t data_length(cl_object data) {
  if (ECL_BASE_STRING_P(data)) return data->base_string.fillp;
  if (ecl_t_of(data) == t_string) return data->string.fillp;
  if (octets_p(data)) return data->vector.fillp;
  return 0;
}

cl_object lisp_write_pipe(cl_object fd, cl_object data, cl_object start) {
  std::size_t position = ECL_FIXNUMP(start) && ecl_fixnum(start) >= 0 ? static_cast<std::size_t>(ecl_fixnum(start)) : 0;
  position = std::min(position, data_length(data));
  WriteState state = WriteState::Closed;
  if (ECL_FIXNUMP(fd) && ecl_fixnum(fd) >= 0) {
    const int descriptor = static_cast<int>(ecl_fixnum(fd));
    if (!outside_lisp([&] { state = write_available(descriptor, data, position); })) state = WriteState::Closed;
  }
  // Interning sets the values: first the keyword, then the values.
  cl_object state_value = state == WriteState::Full     ? ecl_make_keyword("FULL")
                          : state == WriteState::Closed ? ecl_make_keyword("CLOSED")
                                                        : ECL_NIL;
  cl_env_ptr env = ecl_process_env();
  env->values[0] = ecl_make_fixnum(static_cast<cl_fixnum>(position));
  env->values[1] = state_value;
  env->nvalues = 2;
  return env->values[0];
}

}  // namespace

void define_child_pipes() {
  define_lisp_function("%READ-PIPE", lisp_read_pipe);
  define_lisp_function("%WRITE-PIPE", lisp_write_pipe);
}

}  // namespace agentq::ecl
