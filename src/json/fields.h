// Type-checked field access for JSON from outside: a remote's manifests
// and indexes, layouts' index.json, envelopes and their statements, the
// trust list, a rerun's raw samples, flashinfer-bench datasets.
//
// nlohmann's obj.value(key, fallback) throws type_error when the key is there
// with another type (and obj[key] of a const non-object is undefined), so
// such input, read with it, ended a command with a raw library message, or
// the process when it happened on a worker thread. These never throw.
// `where` names the document and the place in it for the message
// ("remote bundle index: manifests[3]"); every message has one shape:
// "<where>: `key` is a number, not a string", and for a value that should
// be an object, "<where> is an array, not an object".
//
// Each reads either JSON type ki parses into: `Json` (nlohmann::json) and
// `OrderedJson` (nlohmann::ordered_json, which the flashinfer-bench import
// reads to keep a definition's key order). They are templates over the two,
// defined and instantiated in fields.cc.
//
// Internal to kicore (src/), shared by the modules that read such JSON.
// Thread-safety: pure functions.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>

#include "ki/json.h"
#include "ki/status.h"

namespace ki {

using OrderedJson = nlohmann::ordered_json;

template <class J>
concept JsonValue = std::same_as<J, Json> || std::same_as<J, OrderedJson>;

// What a message calls a JSON type: "a string", "a number", "null", ...
// (nlohmann's json and ordered_json share the type tag).
std::string_view JsonTypeName(Json::value_t t);
template <JsonValue J>
std::string_view JsonTypeName(const J& j) {
  return JsonTypeName(j.type());
}

// InvalidInput "<where>: `key` is <v's type>, not <wanted>": for a field
// the caller found and whose type it refuses ("an array of axis names").
template <JsonValue J>
Status WrongType(std::string_view where, std::string_view key, const J& v, std::string_view wanted);

// OK when v is an object, else InvalidInput "<where> is <v's type>, not an
// object" (`where` names v itself: "w.jsonl:2: workload.inputs.q").
template <JsonValue J>
Status CheckObject(const J& v, std::string_view where);

// obj[key] as a string; `fallback` when obj is null or has no such key.
// InvalidInput "<where>: `key` is a number, not a string" when the key holds
// another type, and "<where> is a ..., not an object" when obj is neither an
// object nor null.
template <JsonValue J>
Result<std::string> GetString(const J& obj, std::string_view key, std::string_view where,
                              std::string_view fallback = "");

// obj[key] as an unsigned integer; InvalidInput naming `where` and the key
// when obj is not an object, the key is absent, or it holds anything else.
template <JsonValue J>
Result<uint64_t> GetUnsigned(const J& obj, std::string_view key, std::string_view where);

// obj[key] when it is a string, else `fallback` (whatever obj is): for fields
// where another value simply does not match what the caller looks for.
template <JsonValue J>
std::string StringOr(const J& obj, std::string_view key, std::string_view fallback = "");

// obj[key], when present, must be an object of objects (a definition's
// "axes", a workload's "inputs"): InvalidInput "<where>: `key` is ..., not
// an object", or "<where>: `key.member` is ..., not an object". obj is an
// object.
template <JsonValue J>
Status CheckObjectOfObjects(const J& obj, std::string_view key, std::string_view where);

}  // namespace ki
