// The HTTP floor for bench/mcp_tail: listens on 127.0.0.1 (a free port,
// printed as the first line on stdout) and answers every POST on a
// keep-alive connection with the same fixed tools/call result, doing
// nothing else (no JSON, no session, no thread per call): what a round trip
// over a loopback TCP connection costs the client and the kernel.  One
// connection at a time; TCP_NODELAY as sly-agent-q-mcp --http sets it.
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

constexpr char kBody[] =
    R"({"id":1,"jsonrpc":"2.0","result":{"content":[{"text":"=> 3","type":"text"}],"isError":false}})";

// The value of Content-Length in HEAD (lower-cased search), 0 when none.
std::size_t content_length(const std::string& head) {
  std::string lowered(head);
  for (char& c : lowered) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  auto at = lowered.find("content-length:");
  return at == std::string::npos ? 0 : std::strtoul(lowered.c_str() + at + 15, nullptr, 10);
}

void serve(int fd) {
  const std::string answer = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                             std::to_string(sizeof kBody - 1) + "\r\nMcp-Session-Id: floor\r\n\r\n" + kBody;
  std::string buffer;
  char chunk[1 << 16];
  for (;;) {
    std::size_t end;
    while ((end = buffer.find("\r\n\r\n")) == std::string::npos) {
      ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
    const std::size_t body = content_length(buffer.substr(0, end));
    while (buffer.size() < end + 4 + body) {
      ssize_t n = ::recv(fd, chunk, sizeof chunk, 0);
      if (n <= 0) return;
      buffer.append(chunk, static_cast<std::size_t>(n));
    }
    buffer.erase(0, end + 4 + body);
    if (::send(fd, answer.data(), answer.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(answer.size())) return;
  }
}

}  // namespace

int main() {
  int listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int yes = 1;
  ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listener, reinterpret_cast<sockaddr*>(&address), sizeof address) < 0 || ::listen(listener, 8) < 0) {
    std::perror("http_null_responder");
    return 1;
  }
  socklen_t size = sizeof address;
  ::getsockname(listener, reinterpret_cast<sockaddr*>(&address), &size);
  std::printf("%d\n", ntohs(address.sin_port));
  std::fflush(stdout);
  for (;;) {
    int fd = ::accept4(listener, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof yes);
    serve(fd);
    ::close(fd);
  }
}
