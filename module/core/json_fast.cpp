#include "core/json_fast.hpp"

#include <cstdint>
#include <cstring>
#include <string>

#include "core/json_limits.hpp"
#include "core/utf8.hpp"

namespace agentq {

namespace {

using json = nlohmann::json;

class SimpleParser {
 public:
  explicit SimpleParser(std::string_view text) : text_(text) {}

  // False when the text is not of the simple kind (or not JSON).
  bool parse(json& out) {
    skip_space();
    if (!value(out, 1)) return false;
    skip_space();
    return at_ == text_.size();
  }

 private:
  bool more() const { return at_ < text_.size(); }
  char peek() const { return text_[at_]; }

  static bool space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

  void skip_space() {
    while (more() && space(peek())) ++at_;
  }

  // After a number or a literal: what may follow a value.
  bool delimited() const {
    if (!more()) return true;
    char c = peek();
    return space(c) || c == ',' || c == '}' || c == ']';
  }

  // At an opening bracket: steps over it; true when CLOSE follows at once
  // (an empty object or array), stepped over too.
  bool opens_empty(char close) {
    ++at_;
    skip_space();
    if (!more() || peek() != close) return false;
    ++at_;
    return true;
  }

  enum class After { Comma, Close, Bad };

  // After an element of an object or array closed by CLOSE: a comma (more
  // follow), CLOSE (the end), each stepped over, or anything else.
  After after_element(char close) {
    skip_space();
    if (!more()) return After::Bad;
    if (peek() == ',') {
      ++at_;
      return After::Comma;
    }
    if (peek() != close) return After::Bad;
    ++at_;
    return After::Close;
  }

  bool value(json& out, int depth) {
    if (!more()) return false;
    switch (peek()) {
      case '{':
        return object(out, depth);
      case '[':
        return array(out, depth);
      case '"': {
        std::string text;
        if (!string(text)) return false;
        out = std::move(text);
        return true;
      }
      case 't':
        return literal("true", json(true), out);
      case 'f':
        return literal("false", json(false), out);
      case 'n':
        return literal("null", json(nullptr), out);
      default:
        return number(out);
    }
  }

  bool literal(std::string_view word, json value, json& out) {
    if (text_.substr(at_, word.size()) != word) return false;
    at_ += word.size();
    if (!delimited()) return false;
    out = std::move(value);
    return true;
  }

  // An integer of at most 18 digits: as nlohmann stores it, unsigned when
  // not negative.  Fractions and exponents are not for this parser.
  bool number(json& out) {
    bool negative = false;
    if (peek() == '-') {
      negative = true;
      ++at_;
    }
    std::size_t start = at_;
    std::uint64_t magnitude = 0;
    while (more() && peek() >= '0' && peek() <= '9') {
      magnitude = magnitude * 10 + static_cast<unsigned>(peek() - '0');
      ++at_;
    }
    std::size_t digits = at_ - start;
    if (digits == 0 || digits > 18 || (digits > 1 && text_[start] == '0')) return false;
    if (!delimited()) return false;  // also '.', 'e' and 'E'
    if (negative)
      out = json(-static_cast<std::int64_t>(magnitude));
    else
      out = json(magnitude);
    return true;
  }

  // Printable ASCII, the short escapes, and well-formed UTF-8.
  bool string(std::string& out) {
    ++at_;  // the opening quote
    std::size_t plain = at_;
    for (;;) {
      // The run of plain printable ASCII, at once.
      const char* const data = text_.data();
      const std::size_t size = text_.size();
      std::size_t at = at_;
      while (at < size) {
        auto c = static_cast<unsigned char>(data[at]);
        if (c < 0x20 || c >= 0x80 || c == '"' || c == '\\') break;
        ++at;
      }
      at_ = at;
      if (!more()) return false;
      auto byte = static_cast<unsigned char>(peek());
      if (byte == '"') {
        out.append(text_, plain, at_ - plain);
        ++at_;
        return true;
      }
      if (byte < 0x20) return false;
      if (byte >= 0x80) {
        std::size_t length = utf8::sequence_length(text_, at_);
        if (length == 0) return false;
        at_ += length;
        continue;
      }
      if (byte != '\\') {
        ++at_;
        continue;
      }
      out.append(text_, plain, at_ - plain);
      if (at_ + 1 >= text_.size()) return false;
      char escaped;
      switch (text_[at_ + 1]) {
        case '"': escaped = '"'; break;
        case '\\': escaped = '\\'; break;
        case '/': escaped = '/'; break;
        case 'b': escaped = '\b'; break;
        case 'f': escaped = '\f'; break;
        case 'n': escaped = '\n'; break;
        case 'r': escaped = '\r'; break;
        case 't': escaped = '\t'; break;
        default: return false;  // \u, and anything invalid
      }
      out += escaped;
      at_ += 2;
      plain = at_;
    }
  }

  bool object(json& out, int depth) {
    if (depth > kMaxJsonDepth) return false;
    out = json::object();
    if (opens_empty('}')) return true;
    After after = After::Comma;
    while (after == After::Comma) {
      skip_space();
      if (!more() || peek() != '"') return false;
      std::string key;
      if (!string(key)) return false;
      skip_space();
      if (!more() || peek() != ':') return false;
      ++at_;
      skip_space();
      json member;
      if (!value(member, depth + 1)) return false;
      out[std::move(key)] = std::move(member);  // the last of duplicate keys, as nlohmann
      after = after_element('}');
    }
    return after == After::Close;
  }

  bool array(json& out, int depth) {
    if (depth > kMaxJsonDepth) return false;
    out = json::array();
    if (opens_empty(']')) return true;
    After after = After::Comma;
    while (after == After::Comma) {
      skip_space();
      json element;
      if (!value(element, depth + 1)) return false;
      out.push_back(std::move(element));
      after = after_element(']');
    }
    return after == After::Close;
  }

  // TEXT is WORD (sizes first: no call to compare a key of another length).
  static bool is(const std::string& text, std::string_view word) {
    return text.size() == word.size() && std::memcmp(text.data(), word.data(), word.size()) == 0;
  }

  // At a key of an object (after '{' or ','): the key, and the colon after
  // it stepped over.
  bool key(std::string& out) {
    skip_space();
    if (!more() || peek() != '"') return false;
    if (!string(out)) return false;
    skip_space();
    if (!more() || peek() != ':') return false;
    ++at_;
    skip_space();
    return true;
  }

 public:
  // The whole text as a tools/call request of the simple kind (see
  // parse_simple_tools_call).  Duplicate keys: the last counts, as in
  // nlohmann's parser.
  bool tools_call(SimpleToolsCall& out) {
    skip_space();
    if (!more() || peek() != '{' || opens_empty('}')) return false;
    bool version = false, method = false, params = false, id = false;
    After after = After::Comma;
    std::string name;
    while (after == After::Comma) {
      if (!key(name)) return false;
      if (is(name, "params")) {
        params = tools_call_params(out);
        if (!params) return false;
      } else if ((is(name, "jsonrpc") || is(name, "method")) && more() && peek() == '"') {
        // Compared where they lie, without a JSON string of their own.
        std::string text;
        if (!string(text)) return false;
        if (is(name, "jsonrpc"))
          version = is(text, "2.0");
        else
          method = is(text, "tools/call");
      } else {
        json member;
        if (!value(member, 2)) return false;
        // A "jsonrpc" or "method" here is no string: the message is not one.
        if (is(name, "jsonrpc")) {
          version = false;
        } else if (is(name, "method")) {
          method = false;
        } else if (is(name, "id")) {
          id = member.is_string() || member.is_number();
          out.id = std::move(member);
        }
      }
      name.clear();
      after = after_element('}');
    }
    if (after != After::Close) return false;
    skip_space();
    return at_ == text_.size() && version && method && params && id;
  }

 private:
  // The params object of a tools/call, at depth 2: a string name, and
  // arguments that are an object or null (or absent); other members are
  // read and ignored, as the dispatcher ignores them.
  bool tools_call_params(SimpleToolsCall& out) {
    if (!more() || peek() != '{' || opens_empty('}')) return false;
    out.name.clear();
    out.arguments = nullptr;
    out.progress_token = nullptr;
    bool named = false;
    After after = After::Comma;
    std::string name;
    while (after == After::Comma) {
      if (!key(name)) return false;
      if (is(name, "name") && more() && peek() == '"') {
        out.name.clear();
        named = string(out.name);
        if (!named) return false;
        name.clear();
        after = after_element('}');
        continue;
      }
      json member;
      if (!value(member, 3)) return false;
      if (is(name, "name")) {
        named = false;  // not a string
      } else if (is(name, "arguments")) {
        if (!member.is_object() && !member.is_null()) return false;
        out.arguments = std::move(member);
      } else if (is(name, "_meta")) {
        out.progress_token = progress_token_of(member);
      }
      name.clear();
      after = after_element('}');
    }
    return after == After::Close && named;
  }

  std::string_view text_;
  std::size_t at_ = 0;
};

}  // namespace

json progress_token_of(const json& meta) {
  if (!meta.is_object()) return nullptr;
  auto it = meta.find("progressToken");
  if (it == meta.end() || !(it->is_string() || it->is_number())) return nullptr;
  return *it;
}

json request_progress_token(const json& message) {
  if (!message.is_object()) return nullptr;
  auto params = message.find("params");
  if (params == message.end() || !params->is_object()) return nullptr;
  auto meta = params->find("_meta");
  return meta == params->end() ? json(nullptr) : progress_token_of(*meta);
}

std::optional<json> parse_simple_json(std::string_view text) {
  try {
    json value;
    if (SimpleParser(text).parse(value)) return value;
  } catch (...) {
    // Out of memory: let the full parser say so.
  }
  return std::nullopt;
}

std::optional<SimpleToolsCall> parse_simple_tools_call(std::string_view text) {
  try {
    SimpleToolsCall call;
    if (SimpleParser(text).tools_call(call)) return call;
  } catch (...) {
    // Out of memory: the usual way says so.
  }
  return std::nullopt;
}

}  // namespace agentq
