// What the HTTP server writes on a connection, and what it reads in a
// request's headers, shared by the connections' threads (http_server.cpp)
// and the Lisp worker when it serves a request itself (http_inline.cpp).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "mcp/http_request.hpp"

namespace agentq::mcp {

// Writes all of DATA; false when the peer is gone or takes nothing for
// the send timeout (SO_SNDTIMEO).
bool write_all(int fd, std::string_view data);

// A response's status line and headers, and the empty line.
std::string response_head(int status, std::string_view content_type, std::size_t length, bool keep_alive,
                          std::string_view extra = {});

// The answer to a POST as JSON: 200 with RESPONSE, or 202 with no body
// when there is none (a notification, a cancelled request).
std::string json_answer(const std::optional<std::string>& response, bool keep_alive);

// True when the header's value lists ITEM (lowercase), case-insensitively.
bool header_lists(std::optional<std::string_view> header, std::string_view item);

// The MCP-Protocol-Version values this server speaks.
bool protocol_version_supported(std::string_view version);

// Whether the connection stays open after REQUEST (HTTP/1.1: unless
// "Connection: close"; HTTP/1.0: only with "Connection: keep-alive").
bool keeps_alive(const HttpRequest& request);

}  // namespace agentq::mcp
