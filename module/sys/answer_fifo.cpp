#include "sys/answer_fifo.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace agentq {

namespace {

// PATH opened with FLAGS once it is checked to be a FIFO of the user's own
// that no other user may open (WHAT names it in WHY).
int open_private_fifo(const std::string& path, int flags, const char* what, std::string& why) {
  auto refuse = [&](const std::string& reason) {
    why = std::string(what) + " " + path + " " + reason;
    return -1;
  };
  struct stat named {};
  // lstat first: opening a device or a symbolic link's target could do
  // something of its own; a FIFO's open does nothing.
  if (::lstat(path.c_str(), &named) < 0) return refuse(std::string("cannot be read: ") + std::strerror(errno));
  if (S_ISLNK(named.st_mode)) return refuse("is a symbolic link");
  if (!S_ISFIFO(named.st_mode)) return refuse("is not a FIFO");
  if (named.st_uid != ::geteuid()) return refuse("belongs to another user");
  if ((named.st_mode & 077) != 0) {
    char mode[16];
    std::snprintf(mode, sizeof mode, "%o", static_cast<unsigned>(named.st_mode & 0777));
    return refuse(std::string("may be opened by other users (mode ") + mode + ")");
  }
  int fd;
  do {
    fd = ::open(path.c_str(), flags | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  } while (fd < 0 && errno == EINTR);
  if (fd < 0) return refuse(errno == ENXIO ? "has no reader" : std::string("cannot be opened: ") + std::strerror(errno));
  struct stat opened {};
  // The same file as the one checked (not swapped in between).
  if (::fstat(fd, &opened) < 0 || opened.st_dev != named.st_dev || opened.st_ino != named.st_ino ||
      !S_ISFIFO(opened.st_mode) || opened.st_uid != ::geteuid() || (opened.st_mode & 077) != 0) {
    ::close(fd);
    return refuse("changed while it was opened");
  }
  return fd;
}

}  // namespace

int open_answer_fifo(const std::string& path, std::string& why) {
  return open_private_fifo(path, O_WRONLY, "the answer channel", why);
}

int open_request_fifo(const std::string& path, std::string& why) {
  return open_private_fifo(path, O_RDONLY, "the request channel", why);
}

int make_private_fifo(const std::string& path, int flags, std::string& why) {
  ::unlink(path.c_str());
  if (::mkfifo(path.c_str(), 0600) < 0) {
    why = "mkfifo " + path + ": " + std::strerror(errno);
    return -1;
  }
  const int fd = ::open(path.c_str(), flags | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
  struct stat made {};
  if (fd < 0 || ::fstat(fd, &made) < 0 || !S_ISFIFO(made.st_mode) || made.st_uid != ::geteuid() ||
      ::fchmod(fd, 0600) < 0) {
    why = path + " could not be opened";
    if (fd >= 0) ::close(fd);
    ::unlink(path.c_str());
    return -1;
  }
  return fd;
}

bool write_line_whole(int fd, std::string_view text) {
  if (fd < 0 || text.size() + 1 > kAnswerFifoAtomicBytes) return false;
  char line[kAnswerFifoAtomicBytes];
  std::memcpy(line, text.data(), text.size());
  line[text.size()] = '\n';
  ssize_t written;
  do {
    written = ::write(fd, line, text.size() + 1);
  } while (written < 0 && errno == EINTR);
  // Atomic: all of it or nothing (a full FIFO says EAGAIN).
  return written == static_cast<ssize_t>(text.size() + 1);
}

bool write_answer_line(int fd, std::string_view text) {
  if (fd < 0 || text.size() + 1 > kAnswerFifoAtomicBytes) return false;
  // A reader gone raises SIGPIPE: held off for this write, and taken
  // back if it came, so neither Emacs nor a later unblock sees it.
  sigset_t pipe_only, old;
  sigemptyset(&pipe_only);
  sigaddset(&pipe_only, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_only, &old);
  sigset_t pending;
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  const bool whole = write_line_whole(fd, text);
  if (!whole && errno == EPIPE && !was_pending) {
    const timespec none{0, 0};
    while (sigtimedwait(&pipe_only, nullptr, &none) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
  return whole;
}

}  // namespace agentq
