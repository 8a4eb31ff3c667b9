#include "core/json_text.hpp"

#include <charconv>

#include "core/utf8.hpp"

namespace agentq {

namespace {

using json = nlohmann::json;

std::string dump_replacing(const json& value) { return value.dump(-1, ' ', false, json::error_handler_t::replace); }

}  // namespace

void append_json_string(std::string& out, std::string_view text) {
  // Valid UTF-8 is escaped here as the serializer escapes it (ensure_ascii
  // off): the two-character escapes, \u00XX for the other controls,
  // everything else as is.  Anything else goes to the serializer itself,
  // whose replacement of invalid bytes this does not repeat.
  if (!utf8::well_formed(text)) {
    out += dump_replacing(json(std::string(text)));
    return;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  out.reserve(out.size() + text.size() + 2);
  out += '"';
  std::size_t plain = 0;  // start of the bytes not yet copied
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto byte = static_cast<unsigned char>(text[i]);
    if (byte >= 0x20 && byte != '"' && byte != '\\') continue;
    out.append(text, plain, i - plain);
    plain = i + 1;
    switch (byte) {
      case '\b': out += "\\b"; break;
      case '\t': out += "\\t"; break;
      case '\n': out += "\\n"; break;
      case '\f': out += "\\f"; break;
      case '\r': out += "\\r"; break;
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      default: {
        char escape[] = {'\\', 'u', '0', '0', kHex[byte >> 4], kHex[byte & 0xF]};
        out.append(escape, sizeof escape);
      }
    }
  }
  out.append(text, plain, text.size() - plain);
  out += '"';
}

std::string json_scalar_text(const json& value) {
  std::string text;
  append_json_scalar(text, value);
  return text;
}

void append_json_scalar(std::string& out, const json& value) {
  char digits[24];
  switch (value.type()) {
    case json::value_t::number_integer: {
      auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value.get<json::number_integer_t>());
      out.append(digits, end);
      return;
    }
    case json::value_t::number_unsigned: {
      auto [end, ec] = std::to_chars(digits, digits + sizeof digits, value.get<json::number_unsigned_t>());
      out.append(digits, end);
      return;
    }
    case json::value_t::string:
      append_json_string(out, value.get_ref<const std::string&>());
      return;
    case json::value_t::null:
      out += "null";
      return;
    case json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    default:
      out += dump_replacing(value);
  }
}

}  // namespace agentq
