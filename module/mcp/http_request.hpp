// The pieces of the Streamable HTTP transport that need no socket: reading
// a request's head, and the checks every request passes (Origin, bearer
// token).  Never throw for hostile input.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace agentq::mcp {

struct HttpRequest {
  std::string method;   // "POST", as sent (methods are case-sensitive)
  std::string target;   // "/mcp"
  int minor_version = 1;  // HTTP/1.MINOR
  std::vector<std::pair<std::string, std::string>> headers;  // names lowercased, values trimmed

  // The first header named NAME (lowercase), or nullopt.
  std::optional<std::string_view> header(std::string_view name) const;
  // How many headers are named NAME.
  std::size_t count(std::string_view name) const;
};

// HEAD is the request line and the header lines, without the empty line
// that ends them (CRLF or bare LF line ends).  Nullopt when it is not a
// well-formed HTTP/1.x request head: the answer is 400.
std::optional<HttpRequest> parse_request_head(std::string_view head);

// Where the head ends in BUFFER: the offset just past the empty line, or
// npos when it has not all arrived.
std::size_t find_head_end(std::string_view buffer);

// The Content-Length value: nullopt when absent; -1 when malformed (not
// all digits, too large, or several that differ).
std::optional<long long> content_length(const HttpRequest& request);

// True when ORIGIN (the header's value) is one of this server's own:
// http://127.0.0.1:PORT, http://localhost:PORT, http://[::1]:PORT.  A
// request without an Origin (a command-line client) does not ask.
bool origin_allowed(std::string_view origin, int port);

// True when AUTHORIZATION is "Bearer TOKEN" (scheme case-insensitive) for
// exactly this TOKEN, compared in time that does not depend on where they
// differ.  An empty TOKEN matches nothing.
bool bearer_matches(std::string_view authorization, std::string_view token);

// Equal strings, in time that depends only on their lengths.
bool constant_time_equal(std::string_view a, std::string_view b);

// BYTES random bytes from /dev/urandom as lowercase hex.  Throws
// std::runtime_error when /dev/urandom cannot be read.
std::string random_hex(std::size_t bytes);

// The reason phrase of STATUS ("Not Found").
std::string_view status_reason(int status);

}  // namespace agentq::mcp
