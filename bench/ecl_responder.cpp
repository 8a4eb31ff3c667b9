// The ECL floor for bench/mcp_roundtrip: what any MCP server built on ECL
// pays at the least for evaluate_lisp (+ 1 2).  Like bench/null_responder
// (one thread, no parsing, a fixed answer), but for each line ECL itself
// reads "(+ 1 2)" from a string, evaluates it and prints the value, as a
// bare REPL does, and the answer carries that text.  None of the server's
// own work: no JSON, no hop to a worker thread, no output capture, no
// handlers, no time limit.
#include <ecl/ecl.h>
#include <unistd.h>

#include <cstring>
#include <string>

int main(int argc, char** argv) {
  cl_boot(argc, argv);
  cl_object code = ecl_make_simple_base_string(const_cast<char*>("(+ 1 2)"), -1);
  static const char kBefore[] = R"({"id":1,"jsonrpc":"2.0","result":{"content":[{"text":"=> )";
  static const char kAfter[] = R"(","type":"text"}],"isError":false}})"
                               "\n";
  std::string answer;
  static char buffer[1 << 16];
  for (;;) {
    ssize_t n = ::read(0, buffer, sizeof buffer);
    if (n <= 0) break;
    for (const char* p = buffer; (p = static_cast<const char*>(std::memchr(p, '\n', buffer + n - p))); ++p) {
      cl_object value = si_eval_with_env(1, cl_read_from_string(1, code));
      cl_object text = si_coerce_to_base_string(cl_prin1_to_string(value));
      answer.assign(kBefore);
      answer.append(reinterpret_cast<const char*>(text->base_string.self), text->base_string.fillp);
      answer.append(kAfter);
      if (::write(1, answer.data(), answer.size()) < 0) return 1;
    }
  }
  cl_shutdown();
  return 0;
}
