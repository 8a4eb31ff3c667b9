#include "ecl/lisp_json.hpp"

#include "ecl/lisp_string.hpp"

namespace agentq::ecl {

cl_object json_to_lisp(const nlohmann::json& value) {
  switch (value.type()) {
    case nlohmann::json::value_t::object: {
      // A symbol of the locked CL package: interned once, never collected.
      static const cl_object equal = ecl_make_symbol("EQUAL", "CL");
      cl_object table = cl__make_hash_table(equal, ecl_make_fixnum(static_cast<cl_fixnum>(value.size() + 1)),
                                            ecl_make_single_float(1.5f), ecl_make_single_float(0.75f));
      for (const auto& [key, member] : value.items()) _ecl_sethash(make_lisp_string(key), table, json_to_lisp(member));
      return table;
    }
    case nlohmann::json::value_t::array: {
      cl_object list = ECL_NIL;
      for (auto it = value.rbegin(); it != value.rend(); ++it) list = ecl_cons(json_to_lisp(*it), list);
      return list;
    }
    case nlohmann::json::value_t::string:
      return make_lisp_string(value.get_ref<const std::string&>());
    case nlohmann::json::value_t::boolean:
      return value.get<bool>() ? ECL_T : ECL_NIL;
    case nlohmann::json::value_t::number_integer:
      return ecl_make_int64_t(value.get<std::int64_t>());
    case nlohmann::json::value_t::number_unsigned:
      return ecl_make_uint64_t(value.get<std::uint64_t>());
    case nlohmann::json::value_t::number_float:
      return ecl_make_double_float(value.get<double>());
    default:
      return ECL_NIL;
  }
}

}  // namespace agentq::ecl
