#include "emacs/convert.hpp"

#include <algorithm>
#include <functional>
#include <vector>

#include "core/json_limits.hpp"

namespace agentq::emacs {

namespace {

const std::string* known_keyword(const Env& env, emacs_value value) {
  for (const auto& [keyword, name] : Env::sym().known_keywords)
    if (env.eq(value, keyword)) return &name;
  return nullptr;
}

std::string key_name(const Env& env, emacs_value key) {
  const Symbols& s = Env::sym();
  if (const std::string* known = known_keyword(env, key)) return *known;
  emacs_value type = env.type_of(key);
  if (env.eq(type, s.string)) return env.to_string(key);
  if (env.eq(type, s.symbol)) {
    std::string name = env.to_string(env.call(s.symbol_name, {key}));
    if (!name.empty() && name[0] == ':') name.erase(0, 1);
    return name;
  }
  if (env.eq(type, s.integer)) return std::to_string(env.to_integer(key));
  throw ConversionError("object keys must be strings or symbols");
}

bool is_keyword(const Env& env, emacs_value value) {
  const Symbols& s = Env::sym();
  if (known_keyword(env, value)) return true;
  if (!env.eq(env.type_of(value), s.symbol) || env.is_nil(value) || env.eq(value, s.t)) return false;
  std::string name = env.to_string(env.call(s.symbol_name, {value}));
  return !name.empty() && name[0] == ':';
}

bool is_alist_entry(const Env& env, emacs_value item) {
  const Symbols& s = Env::sym();
  if (!env.eq(env.type_of(item), s.cons_type)) return false;
  emacs_value key_type = env.type_of(env.call(s.car, {item}));
  return env.eq(key_type, s.symbol) || env.eq(key_type, s.string);
}

// A proper list of even length whose first element is a keyword.
bool is_plist(const Env& env, emacs_value value) {
  const Symbols& s = Env::sym();
  if (!env.eq(env.type_of(value), s.cons_type) || !is_keyword(env, env.call(s.car, {value}))) return false;
  if (env.is_nil(env.call(s.proper_list_p, {value}))) return false;
  return env.to_integer(env.call(s.length, {value})) % 2 == 0;
}

json list_to_json(const Env& env, emacs_value list, int depth) {
  const Symbols& s = Env::sym();
  std::vector<emacs_value> items = list_elements(env, list);
  if (!items.empty() && is_keyword(env, items[0])) {  // plist
    if (items.size() % 2 != 0) throw ConversionError("plist with an odd number of elements");
    return plist_pairs_to_json(env, static_cast<ptrdiff_t>(items.size()), items.data(), depth);
  }
  // A list of plists, e.g. tool parameters ((:name "x" :type :string) …),
  // is an array of objects, not an alist keyed by :name.
  bool alist = !items.empty() && !is_plist(env, items[0]);
  for (emacs_value item : items) {
    if (!is_alist_entry(env, item)) {
      alist = false;
      break;
    }
  }
  if (alist) {
    json object = json::object();
    for (emacs_value item : items) {
      std::string key = key_name(env, env.call(s.car, {item}));
      if (!object.contains(key)) object[key] = to_json(env, env.call(s.cdr, {item}), depth + 1);
    }
    return object;
  }
  json array = json::array();
  for (emacs_value item : items) array.push_back(to_json(env, item, depth + 1));
  return array;
}

using EntryVisitor = std::function<void(const Env&, emacs_value key, emacs_value value)>;

struct HashVisit {
  const EntryVisitor* visit;
  std::string failure;
};

emacs_value visit_entry(emacs_env* raw, ptrdiff_t, emacs_value* args, void* data) noexcept {
  auto* visit = static_cast<HashVisit*>(data);
  try {
    Env env(raw);
    (*visit->visit)(env, args[0], args[1]);
  } catch (const NonLocalExit&) {
    // stays pending; maphash returns and the caller's check() throws
  } catch (const std::exception& e) {
    if (visit->failure.empty()) visit->failure = e.what();
  }
  return Env::sym().nil;
}

// Calls VISIT on each entry of TABLE through `maphash'; the first error a
// visit raises is thrown (as ConversionError) once maphash has returned.
void each_hash_entry(const Env& env, emacs_value table, const EntryVisitor& visit) {
  HashVisit data{&visit, {}};
  emacs_value fn = env.raw()->make_function(env.raw(), 2, 2, visit_entry, nullptr, &data);
  env.check();
  env.call(Env::sym().maphash, {fn, table});
  if (!data.failure.empty()) throw ConversionError(data.failure);
}

json hash_to_json(const Env& env, emacs_value table, int depth) {
  json object = json::object();
  each_hash_entry(env, table, [&](const Env& entry_env, emacs_value key, emacs_value value) {
    object[key_name(entry_env, key)] = to_json(entry_env, value, depth + 1);
  });
  return object;
}

}  // namespace

json plist_pairs_to_json(const Env& env, ptrdiff_t count, const emacs_value* items, int depth) {
  json object = json::object();
  for (ptrdiff_t i = 0; i + 1 < count; i += 2) {
    std::string key = key_name(env, items[i]);
    if (!object.contains(key)) object[std::move(key)] = to_json(env, items[i + 1], depth + 1);
  }
  return object;
}

std::vector<emacs_value> list_elements(const Env& env, emacs_value list) {
  const Symbols& s = Env::sym();
  // One funcall, then direct vector access: far cheaper than car/cdr calls.
  // vconcat signals for circular and dotted lists; that becomes our error.
  emacs_value vector;
  try {
    vector = env.call(s.vconcat, {list});
  } catch (const NonLocalExit&) {
    if (!env.clear_unless_quit()) throw;
    throw ConversionError("circular or dotted list");
  }
  ptrdiff_t size = env.raw()->vec_size(env.raw(), vector);
  env.check();
  std::vector<emacs_value> items(static_cast<std::size_t>(size));
  for (ptrdiff_t i = 0; i < size; ++i) items[static_cast<std::size_t>(i)] = env.raw()->vec_get(env.raw(), vector, i);
  env.check();
  return items;
}

json to_json(const Env& env, emacs_value value, int depth) {
  if (depth > kMaxDepth) throw ConversionError("nesting too deep (circular structure?)");
  const Symbols& s = Env::sym();
  emacs_value type = env.type_of(value);
  if (env.eq(type, s.string)) return env.to_string(value);
  if (env.eq(type, s.integer)) {
    std::intmax_t i = env.raw()->extract_integer(env.raw(), value);
    if (!env.exit_pending()) return i;
    env.raw()->non_local_exit_clear(env.raw());  // a bignum: keep its magnitude
    return env.to_real(env.call(s.float_, {value}));
  }
  if (env.eq(type, s.float_)) return env.to_real(value);
  if (env.eq(type, s.symbol)) {
    if (env.is_nil(value) || env.eq(value, s.null_kw)) return nullptr;
    if (env.eq(value, s.t)) return true;
    if (env.eq(value, s.false_kw)) return false;
    return key_name(env, value);
  }
  if (env.eq(type, s.cons_type)) return list_to_json(env, value, depth);
  if (env.eq(type, s.vector_type)) {
    json array = json::array();
    ptrdiff_t size = env.raw()->vec_size(env.raw(), value);
    env.check();
    for (ptrdiff_t i = 0; i < size; ++i) {
      emacs_value item = env.raw()->vec_get(env.raw(), value, i);
      env.check();
      array.push_back(to_json(env, item, depth + 1));
    }
    return array;
  }
  if (env.eq(type, s.hash_table_type)) return hash_to_json(env, value, depth);
  throw ConversionError("cannot convert a value of type " +
                        env.to_string(env.call(s.symbol_name, {type})) + " to JSON");
}

emacs_value from_json(const Env& env, const json& value, int depth) {
  const Symbols& s = Env::sym();
  if (depth > kMaxDepth) throw ConversionError("nesting too deep for Emacs");
  switch (value.type()) {
    case json::value_t::object: {
      emacs_value table = env.call(s.make_hash_table, {s.test_key, s.equal});
      for (auto it = value.begin(); it != value.end(); ++it)
        env.call(s.puthash, {env.str(it.key()), from_json(env, it.value(), depth + 1), table});
      return table;
    }
    case json::value_t::array: {
      std::vector<emacs_value> items;
      items.reserve(value.size());
      for (const json& item : value) items.push_back(from_json(env, item, depth + 1));
      return env.call(s.vector, static_cast<ptrdiff_t>(items.size()), items.data());
    }
    case json::value_t::string:
      return env.str(value.get_ref<const std::string&>());
    case json::value_t::boolean:
      return value.get<bool>() ? s.t : s.false_kw;
    case json::value_t::number_integer:
      return env.integer(value.get<std::int64_t>());
    case json::value_t::number_unsigned: {
      auto u = value.get<std::uint64_t>();
      return u <= static_cast<std::uint64_t>(INTMAX_MAX) ? env.integer(static_cast<std::intmax_t>(u))
                                                          : env.real(static_cast<double>(u));
    }
    case json::value_t::number_float:
      return env.real(value.get<double>());
    default:
      return s.null_kw;
  }
}

std::vector<std::string> names_list(const Env& env, emacs_value value) {
  const Symbols& s = Env::sym();
  std::vector<std::string> names;
  if (env.is_nil(value)) return names;
  emacs_value type = env.type_of(value);
  if (env.eq(type, s.string) || env.eq(type, s.symbol)) {
    names.push_back(key_name(env, value));
  } else if (env.eq(type, s.cons_type)) {
    for (emacs_value item : list_elements(env, value)) names.push_back(key_name(env, item));
  } else {
    json items = to_json(env, value);
    auto is_name = [](const json& item) { return item.is_string(); };
    if (!items.is_array() || !std::all_of(items.begin(), items.end(), is_name))
      throw ConversionError("expected a list of names (strings or keywords), got " + items.dump());
    for (const json& item : items) names.push_back(item.get<std::string>());
  }
  return names;
}

namespace {

// Whether KEY names NAME; a key with no name (a vector, say) does not.
bool key_is(const Env& env, emacs_value key, const std::string& name) {
  try {
    return key_name(env, key) == name;
  } catch (const ConversionError&) {
    return false;
  }
}

}  // namespace

std::optional<json> object_member(const Env& env, emacs_value value, const std::string& name) {
  const Symbols& s = Env::sym();
  emacs_value type = env.type_of(value);
  if (env.eq(type, s.hash_table_type)) {
    std::optional<json> found;
    each_hash_entry(env, value, [&](const Env& entry_env, emacs_value key, emacs_value member) {
      if (!found && key_is(entry_env, key, name)) found = to_json(entry_env, member, 1);
    });
    return found;
  }
  if (!env.eq(type, s.cons_type)) return std::nullopt;
  std::vector<emacs_value> items = list_elements(env, value);
  if (!items.empty() && is_keyword(env, items[0])) {  // plist: the first of repeated keys wins
    for (std::size_t i = 0; i + 1 < items.size(); i += 2)
      if (key_is(env, items[i], name)) return to_json(env, items[i + 1], 1);
    return std::nullopt;
  }
  for (emacs_value item : items)  // alist
    if (is_alist_entry(env, item) && key_is(env, env.call(s.car, {item}), name))
      return to_json(env, env.call(s.cdr, {item}), 1);
  return std::nullopt;
}

json object_to_json(const Env& env, emacs_value value) {
  const Symbols& s = Env::sym();
  if (env.is_nil(value)) return json::object();
  emacs_value type = env.type_of(value);
  if (env.eq(type, s.string)) {
    std::optional<json> parsed = parse_json_bounded(env.to_string(value));
    if (!parsed) throw ConversionError("arguments are not valid JSON (or nest deeper than 256 levels)");
    return std::move(*parsed);
  }
  json converted = to_json(env, value);
  if (!converted.is_object()) throw ConversionError("arguments must be a plist, alist, hash table or JSON object string");
  return converted;
}

}  // namespace agentq::emacs
