#include "ecl/lisp_string.hpp"

#include <algorithm>
#include <cstring>

#include "core/utf8.hpp"

namespace agentq::ecl {

cl_object make_lisp_string(std::string_view text) {
  bool ascii = true;
  for (char c : text) {
    if (static_cast<unsigned char>(c) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) {
    cl_object string = ecl_alloc_simple_base_string(text.size());
    if (!text.empty()) std::memcpy(string->base_string.self, text.data(), text.size());
    return string;
  }
  std::u32string codes;
  codes.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) codes += utf8::decode(text, i);
  cl_object string = ecl_alloc_simple_extended_string(codes.size());
  for (std::size_t i = 0; i < codes.size(); ++i) string->string.self[i] = static_cast<ecl_character>(codes[i]);
  return string;
}

std::size_t append_utf8_of(std::string& out, cl_object string, std::size_t start, std::size_t most) {
  const bool base = ECL_BASE_STRING_P(string);
  if (!base && ecl_t_of(string) != t_string) return start;
  const std::size_t length = base ? string->base_string.fillp : string->string.fillp;
  const std::size_t first = start;
  if (start < length) out.reserve(out.size() + std::min(length - start, most));
  for (; start < length; ++start) {
    const char32_t code = base ? string->base_string.self[start] : static_cast<char32_t>(string->string.self[start]);
    if (code < 0x80) {  // ASCII, one byte: the usual character
      if (out.size() >= most && start > first) break;
      out.push_back(static_cast<char>(code));
      continue;
    }
    const std::size_t before = out.size();
    utf8::append(out, code);
    if (out.size() > most && start > first) {
      out.resize(before);
      break;
    }
  }
  return start;
}

std::string lisp_string_to_utf8(cl_object string) {
  std::string out;
  append_utf8_of(out, string, 0, std::string::npos);
  return out;
}

}  // namespace agentq::ecl
