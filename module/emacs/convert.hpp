// Emacs values ⇄ JSON.
//
// Emacs → JSON: string, integer, float; t → true, :false → false, nil and
// :null → null; other symbols → their name (a keyword without its colon);
// vectors and proper lists → arrays, except that a plist (first element a
// keyword) or an alist (every element a cons with a symbol or string car)
// → object; hash tables → objects.  Anything else (or nesting deeper than
// kMaxDepth, e.g. a circular list) throws ConversionError naming it.
//
// JSON → Emacs (the json-parse-string conventions): object → hash table
// (test equal, string keys), array → vector, true → t, false → :false,
// null → :null.
#pragma once

#include <stdexcept>
#include <string>
#include <optional>
#include <vector>

#include <nlohmann/json.hpp>

#include "emacs/env.hpp"

namespace agentq::emacs {

using json = nlohmann::json;

class ConversionError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

inline constexpr int kMaxDepth = 200;

json to_json(const Env& env, emacs_value value, int depth = 0);
emacs_value from_json(const Env& env, const json& value, int depth = 0);

// The elements of a proper list, with one funcall (vconcat) instead of a
// car/cdr call per element.  Throws ConversionError for a circular or
// dotted list.
std::vector<emacs_value> list_elements(const Env& env, emacs_value list);

// COUNT plist items (key, value, key, value …) → a JSON object.  As with
// `plist-get', the first of repeated keys wins.  COUNT must be even.
json plist_pairs_to_json(const Env& env, ptrdiff_t count, const emacs_value* items, int depth = 0);

// A list (or vector) of strings/symbols, or a single one → names (keywords
// without their colon); nil → {}.  For categories and required names,
// where '(:files) is a list of names, not a plist.
std::vector<std::string> names_list(const Env& env, emacs_value value);

// A plist (:key value …), alist or hash table → a JSON object; a string is
// parsed as JSON text.  Throws ConversionError for anything else.
json object_to_json(const Env& env, emacs_value value);

// The member NAME of the plist, alist or hash table VALUE, converted alone
// (at depth 1, as in a converted object), whatever the other members hold;
// nullopt when VALUE has no such member or is not one of those.  For the id
// of a call whose other parts cannot be converted.  Throws ConversionError.
std::optional<json> object_member(const Env& env, emacs_value value, const std::string& name);

}  // namespace agentq::emacs
