// A JSON Schema validator for the subset of draft 2020-12 that the
// KernelIndex schemas (schemas/*.schema.json, compiled in) use.
//
// Why our own: Debian 12 packages no C++ JSON Schema validator, and the
// subset is small. Supported keywords: type, properties, required,
// additionalProperties (bool or schema), propertyNames, pattern (ECMAScript
// regex), minLength/maxLength (in code points), minimum/maximum/
// exclusiveMinimum/exclusiveMaximum, const, enum, items, prefixItems,
// minItems/maxItems, anyOf, and $ref to "#/..." pointers. Annotations
// ($comment, $id, $schema, title, description, format, default, examples)
// are ignored. Any other keyword makes compilation fail, so a schema update
// cannot silently weaken validation.
//
// Schemas are compiled once (regexes included) and shared: CompiledSchema is
// immutable after construction and safe to use from several threads.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ki/json.h"
#include "ki/manifest.h"
#include "ki/status.h"

namespace ki::schema {

struct Node;

class CompiledSchema {
 public:
  static Result<std::unique_ptr<CompiledSchema>> Compile(const Json& schema, std::string_view name);
  ~CompiledSchema();

  // Validates `value` against the schema (or, with `subschema_pointer`, the
  // subschema at that JSON pointer, e.g. "/properties/spec"). Duration
  // fields (an anyOf of a nanosecond integer and a duration string) are
  // rewritten in place to integer nanoseconds once their string form has
  // validated; a string that is not a whole number of nanoseconds is an
  // error. Errors name the JSON pointer of the offending value, prefixed by
  // `pointer_prefix`.
  Status ValidateAndNormalize(Json* value, std::string_view pointer_prefix) const;
  const Node* root() const { return root_; }
  const Node* Find(std::string_view pointer) const;

 private:
  CompiledSchema() = default;
  std::vector<std::unique_ptr<Node>> nodes_;
  const Node* root_ = nullptr;
  Json source_;
  friend class Compiler;
};

Status ValidateAndNormalize(const Node* node, Json* value, std::string_view pointer_prefix);

// The compiled schema of a kind (from the embedded schemas), or an error if
// the embedded schema is missing or uses an unsupported keyword.
Result<const CompiledSchema*> SchemaFor(Kind kind);

// "0.008 ms" -> 8000. Exact decimal arithmetic: the value must land on a
// whole nanosecond and stay within 2^53-1. Units: ns, us, µs, ms, s.
Result<uint64_t> DurationToNanos(std::string_view text);

}  // namespace ki::schema
