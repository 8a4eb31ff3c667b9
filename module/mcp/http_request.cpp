#include "mcp/http_request.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <stdexcept>

namespace agentq::mcp {

namespace {

char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

std::string lowered(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(), lower);
  return out;
}

bool iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return lower(x) == lower(y); });
}

std::string_view trimmed(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// RFC 9110 token characters: a method, a header name.
bool token_char(char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

bool is_token(std::string_view text) { return !text.empty() && std::all_of(text.begin(), text.end(), token_char); }

}  // namespace

std::optional<std::string_view> HttpRequest::header(std::string_view name) const {
  for (const auto& [key, value] : headers)
    if (key == name) return std::string_view(value);
  return std::nullopt;
}

std::size_t HttpRequest::count(std::string_view name) const {
  return static_cast<std::size_t>(
      std::count_if(headers.begin(), headers.end(), [&](const auto& header) { return header.first == name; }));
}

std::size_t find_head_end(std::string_view buffer) {
  // The first empty line: CRLF CRLF, or LF LF (with or without CRs).
  for (std::size_t i = buffer.find('\n'); i != std::string_view::npos; i = buffer.find('\n', i + 1)) {
    std::size_t next = i + 1;
    if (next < buffer.size() && buffer[next] == '\n') return next + 1;
    if (next + 1 < buffer.size() && buffer[next] == '\r' && buffer[next + 1] == '\n') return next + 2;
  }
  return std::string_view::npos;
}

std::optional<HttpRequest> parse_request_head(std::string_view head) {
  HttpRequest request;
  bool first = true;
  while (!head.empty()) {
    std::size_t nl = head.find('\n');
    std::string_view line = head.substr(0, nl);
    head = nl == std::string_view::npos ? std::string_view{} : head.substr(nl + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find('\r') != std::string_view::npos || line.find('\0') != std::string_view::npos) return std::nullopt;
    if (first) {
      first = false;
      std::size_t sp1 = line.find(' ');
      if (sp1 == std::string_view::npos) return std::nullopt;
      std::size_t sp2 = line.find(' ', sp1 + 1);
      if (sp2 == std::string_view::npos || line.find(' ', sp2 + 1) != std::string_view::npos) return std::nullopt;
      std::string_view method = line.substr(0, sp1);
      std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
      std::string_view version = line.substr(sp2 + 1);
      if (!is_token(method) || target.empty()) return std::nullopt;
      if (!std::all_of(target.begin(), target.end(), [](char c) { return c > ' ' && c < 127; })) return std::nullopt;
      if (version.size() != 8 || !version.starts_with("HTTP/1.") || version[7] < '0' || version[7] > '9')
        return std::nullopt;
      request.method = method;
      request.target = target;
      request.minor_version = version[7] - '0';
      continue;
    }
    if (line.empty()) return std::nullopt;  // the head ends before its empty line
    if (line.front() == ' ' || line.front() == '\t') return std::nullopt;  // obsolete line folding
    std::size_t colon = line.find(':');
    if (colon == std::string_view::npos) return std::nullopt;
    std::string_view name = line.substr(0, colon);
    if (!is_token(name)) return std::nullopt;
    std::string_view value = trimmed(line.substr(colon + 1));
    if (std::any_of(value.begin(), value.end(), [](char c) { return (c < ' ' && c != '\t') || c == 127; }))
      return std::nullopt;
    request.headers.emplace_back(lowered(name), std::string(value));
  }
  if (first) return std::nullopt;
  return request;
}

std::optional<long long> content_length(const HttpRequest& request) {
  std::optional<long long> result;
  for (const auto& [key, value] : request.headers) {
    if (key != "content-length") continue;
    if (value.empty() || value.size() > 15 ||
        !std::all_of(value.begin(), value.end(), [](char c) { return c >= '0' && c <= '9'; }))
      return -1;
    long long length = std::stoll(value);
    if (result && *result != length) return -1;
    result = length;
  }
  return result;
}

bool origin_allowed(std::string_view origin, int port) {
  const std::string suffix = ":" + std::to_string(port);
  for (std::string_view host : {"http://127.0.0.1", "http://localhost", "http://[::1]"})
    if (iequal(origin, std::string(host) + suffix)) return true;
  return false;
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned char difference = 0;
  for (std::size_t i = 0; i < a.size(); ++i)
    difference |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  // Read through a volatile so that the loop is not cut short.
  volatile unsigned char result = difference;
  return result == 0;
}

bool bearer_matches(std::string_view authorization, std::string_view token) {
  if (token.empty()) return false;
  authorization = trimmed(authorization);
  constexpr std::string_view scheme = "bearer ";
  if (authorization.size() < scheme.size() || !iequal(authorization.substr(0, scheme.size()), scheme)) return false;
  return constant_time_equal(trimmed(authorization.substr(scheme.size())), token);
}

std::string random_hex(std::size_t bytes) {
  int fd;
  do fd = ::open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  while (fd < 0 && errno == EINTR);
  if (fd < 0) throw std::runtime_error("cannot open /dev/urandom");
  std::string raw(bytes, '\0');
  std::size_t got = 0;
  while (got < bytes) {
    ssize_t n = ::read(fd, raw.data() + got, bytes - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      throw std::runtime_error("cannot read /dev/urandom");
    }
    got += static_cast<std::size_t>(n);
  }
  ::close(fd);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes * 2);
  for (unsigned char c : raw) {
    out += kHex[c >> 4];
    out += kHex[c & 15];
  }
  return out;
}

std::string_view status_reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 202: return "Accepted";
    case 204: return "No Content";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 415: return "Unsupported Media Type";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
  }
}

}  // namespace agentq::mcp
