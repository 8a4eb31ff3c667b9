#include "core/format.hpp"

#include <cmath>
#include <vector>

namespace agentq {

namespace {

// Lisp prin1 of a string: quotes around, \ and " escaped.
void append_lisp_string(std::string& out, const std::string& s) {
  out += '"';
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
}

bool plain_symbol_char(char c) {
  switch (c) {
    case ' ': case '\t': case '\n': case '\r': case '\f': case '\v':
    case '(': case ')': case '"': case '\'': case '`': case ',': case ';':
    case '|': case '\\': case '#': case ':':
      return false;
    default:
      return true;
  }
}

// Plist key: ":key", or ":|odd key|" when the key would not read back as one symbol.
void append_keyword(std::string& out, const std::string& key) {
  out += ':';
  bool plain = !key.empty();
  for (char c : key) {
    if (!plain_symbol_char(c)) {
      plain = false;
      break;
    }
  }
  if (plain) {
    out += key;
    return;
  }
  out += '|';
  for (char c : key) {
    if (c == '|' || c == '\\') out += '\\';
    out += c;
  }
  out += '|';
}

void append_number(std::string& out, const json& value) {
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (std::isnan(d)) {
      out += "nan";
      return;
    }
    if (std::isinf(d)) {
      out += d > 0 ? "inf" : "-inf";
      return;
    }
  }
  // nlohmann prints integers exactly and floats as the shortest text that
  // reads back to the same double ("0.1", "1.0", "1e+100").
  out += value.dump();
}

void append_value(std::string& out, const json& value, bool top_level);

void append_sequence(std::string& out, const json& value) {
  if (value.empty()) {
    out += "nil";
    return;
  }
  out += '(';
  bool first = true;
  if (value.is_array()) {
    for (const json& element : value) {
      if (!first) out += ' ';
      first = false;
      append_value(out, element, false);
    }
  } else {
    for (auto it = value.begin(); it != value.end(); ++it) {
      if (!first) out += ' ';
      first = false;
      append_keyword(out, it.key());
      out += ' ';
      append_value(out, it.value(), false);
    }
  }
  out += ')';
}

void append_value(std::string& out, const json& value, bool top_level) {
  switch (value.type()) {
    case json::value_t::string:
      if (top_level) {
        out += value.get_ref<const std::string&>();
      } else {
        append_lisp_string(out, value.get_ref<const std::string&>());
      }
      return;
    case json::value_t::null:
    case json::value_t::discarded:
      out += "nil";
      return;
    case json::value_t::boolean:
      out += value.get<bool>() ? "T" : "nil";
      return;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned:
    case json::value_t::number_float:
      append_number(out, value);
      return;
    case json::value_t::array:
    case json::value_t::object:
      append_sequence(out, value);
      return;
    case json::value_t::binary:
      out += "#<binary>";
      return;
  }
}

}  // namespace

std::string format_tool_result(const json& value) {
  if (value.is_string()) return value.get<std::string>();
  std::string out;
  append_value(out, value, true);
  return out;
}

}  // namespace agentq
