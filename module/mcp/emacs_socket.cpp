#include "mcp/emacs_socket.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace agentq::mcp {

std::string default_emacs_socket() {
  std::string base;
  const char* xdg = std::getenv("XDG_RUNTIME_DIR");
  if (xdg && xdg[0] == '/') {
    base = xdg;
  } else {
    // Emacs's temporary-file-directory: $TMPDIR, else /tmp.
    const char* tmp = std::getenv("TMPDIR");
    base = tmp && tmp[0] == '/' ? tmp : "/tmp";
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    base += "/sly-agent-q-" + std::to_string(::getuid());
  }
  while (base.size() > 1 && base.back() == '/') base.pop_back();
  return base + "/sly-agent-q/mcp.sock";
}

UniqueFd connect_emacs_socket(const std::string& path, std::string& error) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.size() >= sizeof address.sun_path) {
    error = "the socket's file name is longer than " + std::to_string(sizeof address.sun_path - 1) + " bytes";
    return {};
  }
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) {
    error = std::strerror(errno);
    return {};
  }
  int rc;
  do {
    rc = ::connect(fd.get(), reinterpret_cast<const sockaddr*>(&address), sizeof address);
  } while (rc < 0 && errno == EINTR);
  if (rc < 0) {
    error = std::strerror(errno);
    return {};
  }
  ::fcntl(fd.get(), F_SETFL, ::fcntl(fd.get(), F_GETFL) | O_NONBLOCK);
  return fd;
}

}  // namespace agentq::mcp
