// The floor for bench/mcp_roundtrip: answers every line on stdin with the
// same fixed tools/call result, doing nothing else (plain read and write,
// no parsing), so that the pipe-and-client cost of a round trip shows.
#include <unistd.h>

#include <cstring>

int main() {
  static const char kAnswer[] =
      R"({"id":1,"jsonrpc":"2.0","result":{"content":[{"text":"=> 3","type":"text"}],"isError":false}})"
      "\n";
  static char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(0, buffer, sizeof buffer);
    if (n <= 0) return 0;
    for (const char* p = buffer; (p = static_cast<const char*>(std::memchr(p, '\n', buffer + n - p))); ++p) {
      if (::write(1, kAnswer, sizeof kAnswer - 1) < 0) return 1;
    }
  }
}
