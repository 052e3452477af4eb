// Type-checked field access for JSON from outside: a remote's manifests
// and indexes, layouts' index.json, envelopes and their statements.
//
// nlohmann's obj.value(key, fallback) throws type_error when the key is there
// with another type (and obj[key] of a const non-object is undefined), so
// such input, read with it, ended a command with a raw library message, or
// the process when it happened on a worker thread. These never throw.
// `where` names the document and the place in it for the message
// ("remote bundle index: manifests[3]").
//
// Internal to kicore (src/), shared by the modules that read such JSON
// (remote, sign's envelopes and trust list, the flashinfer-bench import,
// which reads ordered_json: hence the value_t overload). Thread-safety: pure
// functions.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ki/json.h"
#include "ki/status.h"

namespace ki {

// What a message calls the type of `j`: "a string", "a number", "null", ...
std::string_view JsonTypeName(const Json& j);
// The same by type tag (nlohmann's json and ordered_json share it).
std::string_view JsonTypeName(Json::value_t t);

// obj[key] as a string; `fallback` when obj is null or has no such key.
// InvalidInput "<where>: `key` is a number, not a string" when the key holds
// another type, and "<where> is a ..., not an object" when obj is neither an
// object nor null.
Result<std::string> GetString(const Json& obj, std::string_view key, std::string_view where,
                              std::string_view fallback = "");

// obj[key] as an unsigned integer; InvalidInput naming `where` and the key
// when obj is not an object, the key is absent, or it holds anything else.
Result<uint64_t> GetUnsigned(const Json& obj, std::string_view key, std::string_view where);

// obj[key] when it is a string, else `fallback` (whatever obj is): for fields
// where another value simply does not match what the caller looks for.
std::string StringOr(const Json& obj, std::string_view key, std::string_view fallback = "");

}  // namespace ki
