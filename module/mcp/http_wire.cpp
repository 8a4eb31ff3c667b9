#include "mcp/http_wire.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>

namespace agentq::mcp {

namespace {

constexpr std::array<std::string_view, 5> kProtocolVersions = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05",
                                                               "2024-10-07"};

}  // namespace

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

std::string response_head(int status, std::string_view content_type, std::size_t length, bool keep_alive,
                          std::string_view extra) {
  std::string head = "HTTP/1.1 " + std::to_string(status) + " " + std::string(status_reason(status)) + "\r\n";
  if (!content_type.empty()) head += "Content-Type: " + std::string(content_type) + "\r\n";
  head += "Content-Length: " + std::to_string(length) + "\r\n";
  head += extra;
  head += keep_alive ? "" : "Connection: close\r\n";
  head += "\r\n";
  return head;
}

std::string json_answer(const std::optional<std::string>& response, bool keep_alive) {
  if (!response) return response_head(202, "", 0, keep_alive);
  return response_head(200, "application/json", response->size(), keep_alive) + *response;
}

bool header_lists(std::optional<std::string_view> header, std::string_view item) {
  if (!header) return false;
  std::string lowered(*header);
  std::transform(lowered.begin(), lowered.end(), lowered.begin(), [](unsigned char c) { return std::tolower(c); });
  return lowered.find(item) != std::string::npos;
}

bool protocol_version_supported(std::string_view version) {
  return std::find(kProtocolVersions.begin(), kProtocolVersions.end(), version) != kProtocolVersions.end();
}

bool keeps_alive(const HttpRequest& request) {
  auto connection = request.header("connection");
  return request.minor_version >= 1 ? !header_lists(connection, "close") : header_lists(connection, "keep-alive");
}

}  // namespace agentq::mcp
