// Strict JSON / YAML parsing and RFC 8785 canonical serialisation.
//
// KernelIndex hashes documents, so parsing must be strict where a lenient
// parser would silently change meaning: duplicate keys are errors, NaN and
// Infinity are errors, documents are size- and depth-capped, and YAML aliases
// are bounded (billion-laughs). Errors say where: "<source>:<line>:<col>: ...".
// YAML scalars are resolved with the YAML 1.2 core schema (what KernelIndex's
// own parser does): unquoted 1.0 is a number, unquoted 2026-08-01 a string.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ki/status.h"

namespace ki {

using Json = nlohmann::json;

enum class DocFormat { kAuto, kJson, kYaml };

struct ParseLimits {
  size_t max_bytes = 1 << 20;   // KernelIndex's upstream cap: 1 MiB
  int max_depth = 64;           // objects + arrays nested
  size_t max_yaml_nodes = 1 << 20;  // after alias expansion
};

// Parses one document. kAuto: JSON if the first non-space byte is '{' or '[',
// YAML otherwise. `source` names the input in error messages. A YAML stream
// holding several documents is an error here: use ParseDocuments.
Result<Json> ParseDocument(std::string_view text, DocFormat format, std::string_view source,
                           const ParseLimits& limits = {});

// Parses every document of the input: a YAML stream may hold several,
// separated by `---` (limits apply to the stream as a whole); JSON always
// yields exactly one. An empty YAML stream yields none.
Result<std::vector<Json>> ParseDocuments(std::string_view text, DocFormat format,
                                         std::string_view source, const ParseLimits& limits = {});

// The format kAuto picks for `text`.
DocFormat DetectFormat(std::string_view text);

// RFC 8785 JSON Canonicalization Scheme. Integers are treated as IEEE doubles
// (2^53+1 serialises as 9007199254740992), as ECMAScript would.
Result<std::string> Canonicalize(const Json& value);

// Appends the canonical form of `value` to *out (for callers that frame it).
// On error *out holds a partial result.
Status AppendCanonical(const Json& value, std::string* out);

// ECMAScript Number.prototype.toString for a finite double (RFC 8785 §3.2.2.3).
std::string FormatJcsNumber(double v);

// Orders valid UTF-8 strings by their UTF-16 code units, the order RFC 8785
// sorts keys in. It differs from byte order only when one string has a
// character at or above U+10000 where the other has one in U+E000..U+FFFF.
bool Utf16Less(std::string_view a, std::string_view b);

}  // namespace ki
