#include "ecl/lisp_string.hpp"

#include <algorithm>
#include <cstring>

namespace agentq::ecl {

namespace {

// The length of the sequence LEAD begins: 1 to 4, or 0 when LEAD cannot
// begin one (a continuation byte, 0xF8 and above).
int sequence_length(unsigned char lead) {
  return lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
}

// Decodes one code point at TEXT[I], advancing I; U+FFFD for bad input.
char32_t decode_utf8(std::string_view text, std::size_t& i) {
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  unsigned char lead = byte(i);
  std::size_t length = static_cast<std::size_t>(sequence_length(lead));
  if (length == 0 || i + length > text.size()) {
    ++i;
    return 0xFFFD;
  }
  char32_t code = length == 1 ? lead : lead & (0x7F >> length);
  for (std::size_t k = 1; k < length; ++k) {
    unsigned char next = byte(i + k);
    if ((next & 0xC0) != 0x80) {
      ++i;
      return 0xFFFD;
    }
    code = (code << 6) | (next & 0x3F);
  }
  static constexpr char32_t kMinimum[] = {0, 0, 0x80, 0x800, 0x10000};
  i += length;
  if (code < kMinimum[length] || code > 0x10FFFF || (code >= 0xD800 && code <= 0xDFFF)) return 0xFFFD;
  return code;
}

void append_utf8(std::string& out, char32_t code) {
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else if (code < 0x800) {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += static_cast<char>(0xE0 | (code >> 12));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (code >> 18));
    out += static_cast<char>(0x80 | ((code >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((code >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
}

}  // namespace

std::size_t complete_utf8_prefix(std::string_view bytes) {
  // A lead byte among the last three, followed only by continuation bytes.
  for (std::size_t back = 1; back <= 3 && back <= bytes.size(); ++back) {
    const auto byte = static_cast<unsigned char>(bytes[bytes.size() - back]);
    if ((byte & 0xC0) == 0x80) continue;  // a continuation byte: look further back
    return static_cast<std::size_t>(sequence_length(byte)) > back ? bytes.size() - back : bytes.size();
  }
  return bytes.size();
}

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
  for (std::size_t i = 0; i < text.size();) codes += decode_utf8(text, i);
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
    const std::size_t before = out.size();
    append_utf8(out, base ? string->base_string.self[start] : static_cast<char32_t>(string->string.self[start]));
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
