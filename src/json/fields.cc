// Type-checked field access for JSON from outside (fields.h).
#include "json/fields.h"

namespace ki {

std::string_view JsonTypeName(const Json& j) { return JsonTypeName(j.type()); }

std::string_view JsonTypeName(Json::value_t t) {
  switch (t) {
    case Json::value_t::null: return "null";
    case Json::value_t::object: return "an object";
    case Json::value_t::array: return "an array";
    case Json::value_t::string: return "a string";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned:
    case Json::value_t::number_float: return "a number";
    case Json::value_t::binary: return "binary data";
    case Json::value_t::discarded: return "not JSON";
  }
  return "of an unknown type";
}

namespace {

// The field `key` of obj, nullptr when absent; InvalidInput when obj is not
// an object (null reads as an empty object only when `null_is_empty`).
Result<const Json*> Find(const Json& obj, std::string_view key, std::string_view where, bool null_is_empty) {
  if (obj.is_null() && null_is_empty) return static_cast<const Json*>(nullptr);
  if (!obj.is_object()) {
    return Status::InvalidInput(std::string(where) + " is " + std::string(JsonTypeName(obj)) + ", not an object");
  }
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

Status WrongType(std::string_view where, std::string_view key, const Json& v, std::string_view wanted) {
  return Status::InvalidInput(std::string(where) + ": `" + std::string(key) + "` is " + std::string(JsonTypeName(v)) +
                              ", not " + std::string(wanted));
}

}  // namespace

Result<std::string> GetString(const Json& obj, std::string_view key, std::string_view where,
                              std::string_view fallback) {
  KI_ASSIGN_OR_RETURN(const Json* v, Find(obj, key, where, true));
  if (!v) return std::string(fallback);
  if (!v->is_string()) return WrongType(where, key, *v, "a string");
  return v->get<std::string>();
}

Result<uint64_t> GetUnsigned(const Json& obj, std::string_view key, std::string_view where) {
  KI_ASSIGN_OR_RETURN(const Json* v, Find(obj, key, where, false));
  if (!v) return Status::InvalidInput(std::string(where) + ": no `" + std::string(key) + "`");
  // A parser stores 12 as unsigned; JSON built in code (Json{{"size", 12}})
  // as a signed integer: both are the same number.
  if (!v->is_number_integer() || (!v->is_number_unsigned() && v->get<int64_t>() < 0)) {
    return WrongType(where, key, *v, "an unsigned integer");
  }
  return v->get<uint64_t>();
}

std::string StringOr(const Json& obj, std::string_view key, std::string_view fallback) {
  if (!obj.is_object()) return std::string(fallback);
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : std::string(fallback);
}

}  // namespace ki
