#include "core/json_envelope.hpp"

#include <cstdint>
#include <cstring>

#include "core/json_limits.hpp"
#include "core/json_text.hpp"
#include "core/utf8.hpp"

namespace agentq {

namespace {

using json = nlohmann::json;

// Integer part digits a number may have here: nlohmann reads a longer
// integer as a double, which may overflow (a parse error), so longer ones
// are left to it (1e300 has 301 digits; a double holds up to ~1.8e308).
constexpr std::size_t kMaxNumberDigits = 300;

class EnvelopeScanner {
 public:
  explicit EnvelopeScanner(std::string_view text) : text_(text) {}

  // False when TEXT is not a message of the kind scan_message_envelope reads.
  bool scan(MessageEnvelope& out) {
    skip_space();
    if (!more() || peek() != '{') return false;
    bool params = false;
    const bool read = each_member('}', [&] {
      std::string_view key;
      if (!read_key(key)) return false;
      if (key == "id") {
        if (out.has_id || !read_scalar(out.id, out.id_text)) return false;
        out.has_id = true;
        return true;
      }
      if (key == "method") {
        if (out.has_method || !more() || peek() != '"') return false;
        std::string_view method;
        if (!read_string(method)) return false;
        out.method.assign(method);
        out.has_method = true;
        return true;
      }
      if (key == "params") {
        if (params) return false;
        params = true;
        return more() && peek() == '{' ? scan_params(out) : skip_value(2);
      }
      return skip_value(2);
    });
    return read && at_end();
  }

 private:
  bool more() const { return at_ < text_.size(); }
  char peek() const { return text_[at_]; }
  static bool space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }
  static bool digit(char c) { return c >= '0' && c <= '9'; }

  void skip_space() {
    while (more() && space(peek())) ++at_;
  }

  bool at_end() {
    skip_space();
    return at_ == text_.size();
  }

  // At the opening '{' or '[' of what CLOSE closes: its members (an
  // object's) or elements, each read by MEMBER, stepped over with the
  // commas between them and CLOSE.  False when MEMBER is, or a comma or
  // CLOSE is missing.
  template <class Member>
  bool each_member(char close, Member member) {
    ++at_;
    skip_space();
    if (more() && peek() == close) {
      ++at_;
      return true;
    }
    for (;;) {
      if (!member()) return false;
      skip_space();
      if (!more()) return false;
      if (peek() == close) {
        ++at_;
        return true;
      }
      if (peek() != ',') return false;
      ++at_;
      skip_space();
    }
  }

  // Steps over the run of printable ASCII other than '"' and '\\' at at_:
  // eight bytes at a time while none of them ends it (a long answer is
  // mostly such runs), then byte by byte.
  void skip_plain() {
    const char* const data = text_.data();
    const std::size_t size = text_.size();
    std::size_t at = at_;
    constexpr std::uint64_t kOnes = 0x0101010101010101ull, kHighs = 0x8080808080808080ull;
    while (size - at >= 8) {
      std::uint64_t word;
      std::memcpy(&word, data + at, 8);
      // A byte that is 0 in each: below 0x20, a quote, a backslash (each
      // test exact about whether any byte is one); or a high bit set.
      auto zero_byte = [&](std::uint64_t x) { return (x - kOnes) & ~x & kHighs; };
      const std::uint64_t ends = ((word - kOnes * 0x20) & ~word & kHighs) | zero_byte(word ^ (kOnes * '"')) |
                                 zero_byte(word ^ (kOnes * '\\')) | (word & kHighs);
      if (ends) break;
      at += 8;
    }
    while (at < size) {
      auto c = static_cast<unsigned char>(data[at]);
      if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') break;
      ++at;
    }
    at_ = at;
  }

  // At a byte of a string that is not plain (see skip_plain), a quote or a
  // backslash: steps over it (a UTF-8 sequence); false when it is a
  // control character or begins no well-formed sequence.
  bool step_unplain() {
    if (static_cast<unsigned char>(peek()) < 0x20) return false;
    std::size_t length = utf8::sequence_length(text_, at_);
    if (length == 0) return false;
    at_ += length;
    return true;
  }

  static bool short_escape(char c, char& out) {
    switch (c) {
      case '"': out = '"'; return true;
      case '\\': out = '\\'; return true;
      case '/': out = '/'; return true;
      case 'b': out = '\b'; return true;
      case 'f': out = '\f'; return true;
      case 'n': out = '\n'; return true;
      case 'r': out = '\r'; return true;
      case 't': out = '\t'; return true;
      default: return false;
    }
  }

  // At a string: its contents in OUT (a view of the text, or of buffer_
  // when it has escapes; valid until the next read_string), stepped over.
  // False for invalid text, and for a \u escape (not decoded here).
  bool read_string(std::string_view& out) {
    ++at_;  // the opening quote
    const std::size_t start = at_;
    bool escaped = false;
    std::size_t plain = at_;  // with escapes: the start of the bytes not yet copied to buffer_
    for (;;) {
      skip_plain();
      if (!more()) return false;
      if (peek() == '"') {
        if (!escaped) {
          out = text_.substr(start, at_ - start);
        } else {
          buffer_.append(text_, plain, at_ - plain);
          out = buffer_;
        }
        ++at_;
        return true;
      }
      if (peek() != '\\') {
        if (!step_unplain()) return false;
        continue;
      }
      if (!escaped) {
        buffer_.clear();
        escaped = true;
      }
      buffer_.append(text_, plain, at_ - plain);
      char decoded;
      if (at_ + 1 >= text_.size() || !short_escape(text_[at_ + 1], decoded)) return false;
      buffer_ += decoded;
      at_ += 2;
      plain = at_;
    }
  }

  // The four hex digits at AT, or -1.
  int hex4(std::size_t at) const {
    if (at + 4 > text_.size()) return -1;
    int code = 0;
    for (std::size_t i = at; i < at + 4; ++i) {
      char c = text_[i];
      int value = c >= '0' && c <= '9'   ? c - '0'
                  : c >= 'a' && c <= 'f' ? c - 'a' + 10
                  : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                         : -1;
      if (value < 0) return -1;
      code = code * 16 + value;
    }
    return code;
  }

  // At a string: stepped over, checked as nlohmann's lexer checks it
  // (\u escapes included: a high surrogate must be followed by a low one,
  // a low one must follow a high one).
  bool skip_string() {
    ++at_;
    for (;;) {
      skip_plain();
      if (!more()) return false;
      if (peek() == '"') {
        ++at_;
        return true;
      }
      if (peek() != '\\') {
        if (!step_unplain()) return false;
        continue;
      }
      if (at_ + 1 >= text_.size()) return false;
      char decoded;
      if (short_escape(text_[at_ + 1], decoded)) {
        at_ += 2;
        continue;
      }
      if (text_[at_ + 1] != 'u') return false;
      int code = hex4(at_ + 2);
      if (code < 0) return false;
      at_ += 6;
      if (code >= 0xDC00 && code <= 0xDFFF) return false;
      if (code >= 0xD800 && code <= 0xDBFF) {
        if (at_ + 1 >= text_.size() || text_[at_] != '\\' || text_[at_ + 1] != 'u') return false;
        int low = hex4(at_ + 2);
        if (low < 0xDC00 || low > 0xDFFF) return false;
        at_ += 6;
      }
    }
  }

  // At a member of an object (after '{' or ','): its key, and the colon
  // after it stepped over.
  bool read_key(std::string_view& key) {
    if (!more() || peek() != '"') return false;
    if (!read_string(key)) return false;
    skip_space();
    if (!more() || peek() != ':') return false;
    ++at_;
    skip_space();
    return true;
  }

  bool literal(std::string_view word) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    return true;
  }

  // At a value: an id's kind of scalar (a string without \u escapes, an
  // integer of at most 18 digits, null) in VALUE, its dump() in TEXT.
  bool read_scalar(json& value, std::string& text) {
    if (!more()) return false;
    const char c = peek();
    if (c == '"') {
      const std::size_t start = at_;
      std::string_view contents;
      if (!read_string(contents)) return false;
      value = std::string(contents);
      if (contents.data() == text_.data() + start + 1)
        text.assign(text_, start, at_ - start);  // no escapes: dump() writes it as it is here
      else
        text = json_scalar_text(value);
      return true;
    }
    if (c == 'n') {
      if (!literal("null")) return false;
      value = nullptr;
      text = "null";
      return true;
    }
    const bool negative = c == '-';
    if (negative) ++at_;
    const std::size_t start = at_;
    std::uint64_t magnitude = 0;
    while (more() && digit(peek())) {
      magnitude = magnitude * 10 + static_cast<unsigned>(peek() - '0');
      ++at_;
    }
    const std::size_t digits = at_ - start;
    if (digits == 0 || digits > 18 || (digits > 1 && text_[start] == '0')) return false;
    // A fraction or an exponent: not an integer (nor is "1x" a number).
    if (more() && !space(peek()) && peek() != ',' && peek() != '}') return false;
    if (negative)
      value = -static_cast<std::int64_t>(magnitude);  // as nlohmann reads it: -0 is 0
    else
      value = magnitude;
    text = json_scalar_text(value);
    return true;
  }

  // At a number: stepped over when it is one nlohmann reads as a finite
  // number for sure (no exponent, not too long).
  bool skip_number() {
    if (peek() == '-') ++at_;
    if (!more()) return false;
    if (peek() == '0') {
      ++at_;
    } else {
      const std::size_t start = at_;
      while (more() && digit(peek())) ++at_;
      const std::size_t digits = at_ - start;
      if (digits == 0 || digits > kMaxNumberDigits) return false;
    }
    if (more() && peek() == '.') {
      ++at_;
      const std::size_t start = at_;
      while (more() && digit(peek())) ++at_;
      if (at_ == start) return false;
    }
    return !more() || (peek() != 'e' && peek() != 'E');
  }

  // At a value nested DEPTH deep (the message is 1): stepped over, checked.
  bool skip_value(int depth) {
    if (!more()) return false;
    switch (peek()) {
      case '{':
        return depth <= kMaxJsonDepth && each_member('}', [&] {
                 if (!more() || peek() != '"' || !skip_string()) return false;
                 skip_space();
                 if (!more() || peek() != ':') return false;
                 ++at_;
                 skip_space();
                 return skip_value(depth + 1);
               });
      case '[':
        return depth <= kMaxJsonDepth && each_member(']', [&] { return skip_value(depth + 1); });
      case '"':
        return skip_string();
      case 't':
        return literal("true");
      case 'f':
        return literal("false");
      case 'n':
        return literal("null");
      default:
        return skip_number();
    }
  }

  // At the params object (nested 2 deep): its requestId read, the rest
  // stepped over.
  bool scan_params(MessageEnvelope& out) {
    return each_member('}', [&] {
      std::string_view key;
      if (!read_key(key)) return false;
      if (key != "requestId") return skip_value(3);
      if (out.has_request_id || !read_scalar(out.request_id, out.request_id_text)) return false;
      out.has_request_id = true;
      return true;
    });
  }

  std::string_view text_;
  std::size_t at_ = 0;
  std::string buffer_;  // a string with escapes, decoded
};

}  // namespace

std::optional<MessageEnvelope> scan_message_envelope(std::string_view text) {
  try {
    MessageEnvelope envelope;
    if (EnvelopeScanner(text).scan(envelope)) return envelope;
  } catch (...) {
    // Out of memory: the full parser says so.
  }
  return std::nullopt;
}

}  // namespace agentq
