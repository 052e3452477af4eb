// Type-checked field access for JSON from outside (fields.h).
#include "json/fields.h"

namespace ki {

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
template <JsonValue J>
Result<const J*> Find(const J& obj, std::string_view key, std::string_view where, bool null_is_empty) {
  if (obj.is_null() && null_is_empty) return static_cast<const J*>(nullptr);
  KI_RETURN_IF_ERROR(CheckObject(obj, where));
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

}  // namespace

template <JsonValue J>
Status WrongType(std::string_view where, std::string_view key, const J& v, std::string_view wanted) {
  return Status::InvalidInput(std::string(where) + ": `" + std::string(key) + "` is " + std::string(JsonTypeName(v)) +
                              ", not " + std::string(wanted));
}

template <JsonValue J>
Status CheckObject(const J& v, std::string_view where) {
  if (v.is_object()) return Status::OK();
  return Status::InvalidInput(std::string(where) + " is " + std::string(JsonTypeName(v)) + ", not an object");
}

template <JsonValue J>
Result<std::string> GetString(const J& obj, std::string_view key, std::string_view where, std::string_view fallback) {
  KI_ASSIGN_OR_RETURN(const J* v, Find(obj, key, where, true));
  if (!v) return std::string(fallback);
  if (!v->is_string()) return WrongType(where, key, *v, "a string");
  return v->template get<std::string>();
}

template <JsonValue J>
Result<uint64_t> GetUnsigned(const J& obj, std::string_view key, std::string_view where) {
  KI_ASSIGN_OR_RETURN(const J* v, Find(obj, key, where, false));
  if (!v) return Status::InvalidInput(std::string(where) + ": no `" + std::string(key) + "`");
  // A parser stores 12 as unsigned; JSON built in code (Json{{"size", 12}})
  // as a signed integer: both are the same number.
  if (!v->is_number_integer() || (!v->is_number_unsigned() && v->template get<int64_t>() < 0)) {
    return WrongType(where, key, *v, "an unsigned integer");
  }
  return v->template get<uint64_t>();
}

template <JsonValue J>
std::string StringOr(const J& obj, std::string_view key, std::string_view fallback) {
  if (!obj.is_object()) return std::string(fallback);
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->template get<std::string>() : std::string(fallback);
}

template <JsonValue J>
Status CheckObjectOfObjects(const J& obj, std::string_view key, std::string_view where) {
  KI_ASSIGN_OR_RETURN(const J* v, Find(obj, key, where, false));
  if (!v) return Status::OK();
  if (!v->is_object()) return WrongType(where, key, *v, "an object");
  for (auto m = v->begin(); m != v->end(); ++m) {
    if (!m.value().is_object()) return WrongType(where, std::string(key) + "." + m.key(), m.value(), "an object");
  }
  return Status::OK();
}

// The two JSON types ki reads (fields.h).
#define KI_FIELDS_INSTANTIATE(J)                                                                                 \
  template Status WrongType<J>(std::string_view, std::string_view, const J&, std::string_view);               \
  template Status CheckObject<J>(const J&, std::string_view);                                                 \
  template Result<std::string> GetString<J>(const J&, std::string_view, std::string_view, std::string_view);   \
  template Result<uint64_t> GetUnsigned<J>(const J&, std::string_view, std::string_view);                      \
  template std::string StringOr<J>(const J&, std::string_view, std::string_view);                              \
  template Status CheckObjectOfObjects<J>(const J&, std::string_view, std::string_view);
KI_FIELDS_INSTANTIATE(Json)
KI_FIELDS_INSTANTIATE(OrderedJson)
#undef KI_FIELDS_INSTANTIATE

}  // namespace ki
