#include "ecl/lisp_nesting.hpp"

#include <cctype>
#include <vector>

namespace agentq {

namespace {

bool delimiter(char c) {
  return c == '(' || c == ')' || c == '\'' || c == '`' || c == ',' || c == '"' || c == ';' || c == ' ' || c == '\t' ||
         c == '\n' || c == '\r' || c == '\f';
}

}  // namespace

bool lisp_nesting_exceeds(std::string_view text, std::size_t limit) {
  // Each level is opened by a character of its own.
  if (text.size() <= limit) return false;
  // Open lists (0) and prefixes waiting for N more objects (N > 0).
  std::vector<unsigned char> open;
  auto push = [&](unsigned char entry) {
    open.push_back(entry);
    return open.size() > limit;
  };
  // An object ended: the prefixes it completes end too.
  auto object_done = [&] {
    while (!open.empty() && open.back() > 0) {
      if (--open.back() > 0) return;
      open.pop_back();
    }
  };
  const std::size_t n = text.size();
  std::size_t i = 0;
  while (i < n) {
    const char c = text[i];
    switch (c) {
      case ' ': case '\t': case '\n': case '\r': case '\f':
        ++i;
        break;
      case ';':
        while (i < n && text[i] != '\n') ++i;
        break;
      case '(':
        if (push(0)) return true;
        ++i;
        break;
      case ')':
        // Close the innermost list (and drop prefixes left unfinished in it).
        while (!open.empty() && open.back() > 0) open.pop_back();
        if (!open.empty()) open.pop_back();
        object_done();
        ++i;
        break;
      case '\'': case '`':
        if (push(1)) return true;
        ++i;
        break;
      case ',':
        if (push(1)) return true;
        ++i;
        if (i < n && (text[i] == '@' || text[i] == '.')) ++i;
        break;
      case '"':
        for (++i; i < n && text[i] != '"'; ++i)
          if (text[i] == '\\') ++i;
        ++i;
        object_done();
        break;
      case '#': {
        std::size_t j = i + 1;
        while (j < n && std::isdigit(static_cast<unsigned char>(text[j]))) ++j;
        if (j >= n) {
          i = n;
          break;
        }
        const char d = text[j];
        if (d == '|') {  // #| ... |#, nested
          int depth = 1;
          for (j += 1; j < n && depth > 0; ++j) {
            if (text[j] == '|' && j + 1 < n && text[j + 1] == '#') depth--, ++j;
            else if (text[j] == '#' && j + 1 < n && text[j + 1] == '|') depth++, ++j;
          }
          i = j;
        } else if (d == '\\') {  // #\x, #\Space
          i = j + 2;
          while (i < n && !delimiter(text[i])) ++i;
          object_done();
        } else if (d == '(') {  // #( vector
          if (push(0)) return true;
          i = j + 1;
        } else if (d == '#') {  // #1# reference
          i = j + 1;
          object_done();
        } else if (d == '+' || d == '-') {  // a feature expression, then an object
          if (push(2)) return true;
          i = j + 1;
        } else {  // #' #. #1= #p #c #a #s #* #x #: ...: the object after it
          if (push(1)) return true;
          i = j + 1;
        }
        break;
      }
      case '|':
        for (++i; i < n && text[i] != '|'; ++i)
          if (text[i] == '\\') ++i;
        ++i;
        while (i < n && !delimiter(text[i])) ++i;
        object_done();
        break;
      default:  // a token
        while (i < n && !delimiter(text[i])) {
          if (text[i] == '\\') ++i;
          else if (text[i] == '|') {
            for (++i; i < n && text[i] != '|'; ++i)
              if (text[i] == '\\') ++i;
          }
          ++i;
        }
        object_done();
        break;
    }
  }
  return false;
}

}  // namespace agentq
