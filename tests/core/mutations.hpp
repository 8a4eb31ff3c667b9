// Mutations of a valid text for the differential tests of the JSON
// readers (test_json_fast.cpp, test_json_envelope.cpp): what a truncated,
// corrupted or doubled message looks like.
#pragma once

#include <random>
#include <string>
#include <string_view>

namespace agentq::testing {

// TEXT with one to three bytes replaced (by one of ALPHABET), dropped,
// doubled, or the text cut there.
inline std::string mutated(std::string text, std::mt19937& random, std::string_view alphabet) {
  int edits = 1 + static_cast<int>(random() % 3);
  for (int i = 0; i < edits && !text.empty(); ++i) {
    std::size_t at = random() % text.size();
    switch (random() % 4) {
      case 0: text[at] = alphabet[random() % alphabet.size()]; break;
      case 1: text.erase(at, 1); break;
      case 2: text.insert(at, 1, text[at]); break;
      default: text.resize(at); break;
    }
  }
  return text;
}

}  // namespace agentq::testing
