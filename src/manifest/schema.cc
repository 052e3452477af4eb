#include "manifest/schema.h"

#include <algorithm>
#include <bitset>
#include <cmath>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "ki/embedded.h"
#include "manifest/pattern.h"

namespace ki::schema {
namespace {

constexpr uint64_t kMaxSafeInteger = 9007199254740991;  // 2^53 - 1, JS Number.MAX_SAFE_INTEGER

// The pattern every duration string field of the schemas uses.
constexpr std::string_view kDurationPattern = "^\\d+(\\.\\d+)?\\s?(ns|us|µs|ms|s)$";

enum TypeBit : uint8_t {
  kNull = 1,
  kBoolean = 2,
  kInteger = 4,
  kNumber = 8,
  kString = 16,
  kArray = 32,
  kObject = 64,
};

// Length of an ECMAScript \s character (WhiteSpace or LineTerminator) at the
// start of s, or 0.
size_t JsSpaceLen(std::string_view s) {
  if (s.empty()) return 0;
  unsigned char c = s[0];
  if (c == ' ' || (c >= '\t' && c <= '\r')) return 1;
  static constexpr std::string_view kWide[] = {
      "\u00A0", "\u1680", "\u2000", "\u2001", "\u2002", "\u2003", "\u2004", "\u2005", "\u2006",
      "\u2007", "\u2008", "\u2009", "\u200A", "\u2028", "\u2029", "\u202F", "\u205F", "\u3000",
      "\uFEFF"};
  for (std::string_view w : kWide)
    if (s.substr(0, w.size()) == w) return w.size();
  return 0;
}

struct DurationParts {
  std::string_view int_digits, frac_digits;
  int scale = 0;  // power of ten from the unit to nanoseconds
};

// Matches kDurationPattern exactly as ECMAScript would.
std::optional<DurationParts> SplitDuration(std::string_view s) {
  DurationParts p;
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
  if (i == 0) return std::nullopt;
  p.int_digits = s.substr(0, i);
  if (i < s.size() && s[i] == '.') {
    size_t start = ++i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    if (i == start) return std::nullopt;
    p.frac_digits = s.substr(start, i - start);
  }
  std::string_view rest = s.substr(i);
  rest.remove_prefix(JsSpaceLen(rest));
  if (rest == "ns") p.scale = 0;
  else if (rest == "us" || rest == "\u00B5s") p.scale = 3;
  else if (rest == "ms") p.scale = 6;
  else if (rest == "s") p.scale = 9;
  else return std::nullopt;
  return p;
}

}  // namespace

namespace {

// Each distinct pattern is compiled (its DFA built) once per process: the
// schemas use 8 distinct patterns some 150 times (the digest pattern alone
// 25 times), and a DFA costs up to a few hundred microseconds to build.
Result<std::shared_ptr<const Pattern>> SharedPattern(const std::string& src) {
  static std::mutex mu;
  static std::unordered_map<std::string, std::shared_ptr<const Pattern>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = cache.find(src); it != cache.end()) return it->second;
  KI_ASSIGN_OR_RETURN(std::unique_ptr<Pattern> p, Pattern::Compile(src));
  std::shared_ptr<const Pattern> shared(std::move(p));
  cache.emplace(src, shared);
  return shared;
}

size_t CodePoints(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

std::string EscapePointerToken(std::string_view t) {
  std::string out;
  for (char c : t) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out.push_back(c);
  }
  return out;
}

std::string Describe(const Json& v) {
  std::string s = v.dump(-1, ' ', false, Json::error_handler_t::replace);
  if (s.size() > 80) s = s.substr(0, 77) + "...";
  return s;
}

const char* TypeName(const Json& v) {
  switch (v.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "integer";
    case Json::value_t::number_float: return "number";
    case Json::value_t::string: return "string";
    case Json::value_t::array: return "array";
    case Json::value_t::object: return "object";
    default: return "value";
  }
}

bool IsIntegral(const Json& v) {
  if (v.is_number_integer()) return true;  // int64 and uint64
  if (!v.is_number_float()) return false;
  double d = v.get<double>();
  return std::isfinite(d) && std::floor(d) == d;
}

}  // namespace

struct Node {
  uint8_t types = 0;  // 0: any
  const Json* const_value = nullptr;
  const Json* enum_values = nullptr;  // array
  std::optional<size_t> min_length, max_length, min_items, max_items;
  std::shared_ptr<const Pattern> pattern;
  std::optional<double> minimum, maximum, exclusive_minimum, exclusive_maximum;
  std::map<std::string, const Node*, std::less<>> properties;
  std::vector<std::string> required;
  enum class Additional { kAllow, kForbid, kSchema } additional = Additional::kAllow;
  const Node* additional_schema = nullptr;
  const Node* property_names = nullptr;
  const Node* items = nullptr;
  std::vector<const Node*> prefix_items;
  std::vector<const Node*> any_of;
  const Node* ref = nullptr;
  // anyOf [integer, duration string]: strings are rewritten to nanoseconds.
  const Node* duration_string = nullptr;
  const Node* duration_integer = nullptr;
  bool may_mutate = false;  // a duration node at or below this one
};

class Compiler {
 public:
  Compiler(CompiledSchema* out, std::string_view name) : out_(out), name_(name) {}

  Result<const Node*> Compile(const Json& s, const std::string& ptr) {
    if (s.is_boolean()) {
      auto node = std::make_unique<Node>();
      if (!s.get<bool>()) {
        // `false`: nothing validates; express as an impossible enum.
        static const Json kEmpty = Json::array();
        node->enum_values = &kEmpty;
      }
      return Keep(std::move(node), ptr);
    }
    if (!s.is_object()) return Err(ptr, "a schema must be an object or a boolean");
    auto node = std::make_unique<Node>();
    Node* n = node.get();
    KI_RETURN_IF_ERROR(Keep(std::move(node), ptr).status());
    for (const auto& [k, v] : s.items()) {
      const std::string sub = ptr + "/" + EscapePointerToken(k);
      if (k == "$comment" || k == "$id" || k == "$schema" || k == "title" || k == "description" ||
          k == "format" || k == "default" || k == "examples") {
        continue;
      } else if (k == "type") {
        auto add = [&](const Json& t) -> Status {
          if (!t.is_string()) return Err(sub, "type must be a string");
          const std::string& ts = t.get_ref<const std::string&>();
          static const std::pair<std::string_view, uint8_t> kTypes[] = {
              {"null", kNull}, {"boolean", kBoolean}, {"integer", kInteger}, {"number", kNumber},
              {"string", kString}, {"array", kArray}, {"object", kObject}};
          for (auto [tn, bit] : kTypes)
            if (ts == tn) {
              n->types |= bit;
              return Status::OK();
            }
          return Err(sub, "unknown type " + ts);
        };
        if (v.is_array()) {
          for (const auto& t : v) KI_RETURN_IF_ERROR(add(t));
        } else {
          KI_RETURN_IF_ERROR(add(v));
        }
      } else if (k == "const") {
        n->const_value = &v;
      } else if (k == "enum") {
        if (!v.is_array()) return Err(sub, "enum must be an array");
        n->enum_values = &v;
      } else if (k == "minLength" || k == "maxLength" || k == "minItems" || k == "maxItems") {
        if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0))
          return Err(sub, k + " must be a non-negative integer");
        size_t x = v.get<size_t>();
        (k == "minLength" ? n->min_length : k == "maxLength" ? n->max_length : k == "minItems" ? n->min_items : n->max_items) = x;
      } else if (k == "minimum" || k == "maximum" || k == "exclusiveMinimum" || k == "exclusiveMaximum") {
        if (!v.is_number()) return Err(sub, k + " must be a number");
        double x = v.get<double>();
        (k == "minimum" ? n->minimum : k == "maximum" ? n->maximum : k == "exclusiveMinimum" ? n->exclusive_minimum : n->exclusive_maximum) = x;
      } else if (k == "pattern") {
        if (!v.is_string()) return Err(sub, "pattern must be a string");
        auto p = SharedPattern(v.get<std::string>());
        if (!p.ok()) return Err(sub, p.status().message());
        n->pattern = std::move(p).value();
      } else if (k == "properties") {
        if (!v.is_object()) return Err(sub, "properties must be an object");
        for (const auto& [pk, pv] : v.items()) {
          KI_ASSIGN_OR_RETURN(const Node* child, Compile(pv, sub + "/" + EscapePointerToken(pk)));
          n->properties.emplace(pk, child);
        }
      } else if (k == "required") {
        if (!v.is_array()) return Err(sub, "required must be an array");
        for (const auto& r : v) {
          if (!r.is_string()) return Err(sub, "required entries must be strings");
          n->required.push_back(r.get<std::string>());
        }
      } else if (k == "additionalProperties") {
        if (v.is_boolean()) {
          n->additional = v.get<bool>() ? Node::Additional::kAllow : Node::Additional::kForbid;
        } else {
          KI_ASSIGN_OR_RETURN(n->additional_schema, Compile(v, sub));
          n->additional = Node::Additional::kSchema;
        }
      } else if (k == "propertyNames") {
        KI_ASSIGN_OR_RETURN(n->property_names, Compile(v, sub));
      } else if (k == "items") {
        KI_ASSIGN_OR_RETURN(n->items, Compile(v, sub));
      } else if (k == "prefixItems" || k == "anyOf") {
        if (!v.is_array() || v.empty()) return Err(sub, k + " must be a non-empty array");
        auto& list = k == "anyOf" ? n->any_of : n->prefix_items;
        for (size_t i = 0; i < v.size(); ++i) {
          KI_ASSIGN_OR_RETURN(const Node* child, Compile(v[i], sub + "/" + std::to_string(i)));
          list.push_back(child);
        }
      } else if (k == "$ref") {
        if (!v.is_string() || v.get<std::string>().rfind("#", 0) != 0)
          return Err(sub, "only local $ref (#/...) is supported");
        refs_.emplace_back(n, v.get<std::string>().substr(1));
      } else {
        return Err(sub, "unsupported schema keyword \"" + k + "\"");
      }
    }
    // The duration idiom: anyOf [{type: integer, ...}, {type: string, pattern: duration}].
    if (n->any_of.size() == 2) {
      const Node* a = n->any_of[0];
      const Node* b = n->any_of[1];
      if (a->types == kInteger && b->types == kString && b->pattern &&
          b->pattern->source() == kDurationPattern) {
        n->duration_integer = a;
        n->duration_string = b;
        n->may_mutate = true;
      }
    }
    return static_cast<const Node*>(n);
  }

  Status ResolveRefs(const Json& root) {
    for (size_t i = 0; i < refs_.size(); ++i) {  // Compile may append to refs_
      Node* node = refs_[i].first;
      const std::string ptr = refs_[i].second;
      auto it = by_pointer_.find(ptr);
      if (it == by_pointer_.end()) {
        Json::json_pointer jp;
        try {
          jp = Json::json_pointer(ptr);
        } catch (const std::exception&) {
          return Err(ptr, "bad $ref");
        }
        if (!root.contains(jp)) return Err(ptr, "$ref target does not exist");
        KI_ASSIGN_OR_RETURN(const Node* target, Compile(root.at(jp), ptr));
        it = by_pointer_.emplace(ptr, target).first;
      }
      node->ref = it->second;
    }
    return Status::OK();
  }

  void ComputeMayMutate() {
    // A fixed point over the graph ($ref may form cycles).
    bool changed = true;
    while (changed) {
      changed = false;
      for (auto& up : out_->nodes_) {
        Node* n = up.get();
        if (n->may_mutate) continue;
        bool m = false;
        auto any = [&](const Node* c) { m = m || (c != nullptr && c->may_mutate); };
        for (auto& [_, c] : n->properties) any(c);
        any(n->additional_schema);
        any(n->items);
        any(n->ref);
        for (auto* c : n->prefix_items) any(c);
        for (auto* c : n->any_of) any(c);
        if (m) n->may_mutate = changed = true;
      }
    }
  }

  const std::unordered_map<std::string, const Node*>& by_pointer() const { return by_pointer_; }

 private:
  Result<const Node*> Keep(std::unique_ptr<Node> node, const std::string& ptr) {
    const Node* raw = node.get();
    out_->nodes_.push_back(std::move(node));
    by_pointer_.emplace(ptr, raw);
    return raw;
  }
  Status Err(const std::string& ptr, const std::string& msg) {
    return Status::InvalidInput("schema " + std::string(name_) + " at " + (ptr.empty() ? "/" : ptr) +
                                ": " + msg);
  }

  CompiledSchema* out_;
  std::string_view name_;
  std::vector<std::pair<Node*, std::string>> refs_;
  std::unordered_map<std::string, const Node*> by_pointer_;
  friend class CompiledSchema;
};

namespace {

class Validator {
 public:
  explicit Validator(std::string_view prefix) : prefix_(prefix) {}

  Status Validate(const Node* n, Json* v) {
    if (n->ref) KI_RETURN_IF_ERROR(Validate(n->ref, v));
    if (n->types != 0 && !TypeOk(n->types, *v)) return TypeError(n, *v);
    if (n->const_value && *v != *n->const_value)
      return Error("must be " + Describe(*n->const_value) + ", got " + Describe(*v));
    if (n->enum_values) KI_RETURN_IF_ERROR(CheckEnum(n, *v));
    switch (v->type()) {
      case Json::value_t::string:
        KI_RETURN_IF_ERROR(CheckString(n, v->get_ref<const std::string&>()));
        break;
      case Json::value_t::number_integer:
      case Json::value_t::number_unsigned:
      case Json::value_t::number_float:
        KI_RETURN_IF_ERROR(CheckNumber(n, *v));
        break;
      case Json::value_t::object: KI_RETURN_IF_ERROR(ValidateObject(n, v)); break;
      case Json::value_t::array: KI_RETURN_IF_ERROR(ValidateArray(n, v)); break;
      default: break;
    }
    if (n->duration_string) return ValidateDuration(n, v);
    if (!n->any_of.empty()) return ValidateAnyOf(n, v);
    return Status::OK();
  }

 private:
  // A path token: an object key (borrowed from the document) or an index.
  struct Token {
    const std::string* key = nullptr;
    size_t index = 0;
  };

  static bool TypeOk(uint8_t types, const Json& v) {
    switch (v.type()) {
      case Json::value_t::null: return types & kNull;
      case Json::value_t::boolean: return types & kBoolean;
      case Json::value_t::number_integer:
      case Json::value_t::number_unsigned: return types & (kInteger | kNumber);
      case Json::value_t::number_float: return (types & kNumber) || ((types & kInteger) && IsIntegral(v));
      case Json::value_t::string: return types & kString;
      case Json::value_t::array: return types & kArray;
      case Json::value_t::object: return types & kObject;
      default: return false;
    }
  }

  Status TypeError(const Node* n, const Json& v) {
    std::string want;
    for (auto [bit, name] : {std::pair{kNull, "null"}, {kBoolean, "boolean"}, {kInteger, "integer"},
                             {kNumber, "number"}, {kString, "string"}, {kArray, "array"}, {kObject, "object"}})
      if (n->types & bit) want += (want.empty() ? "" : " or ") + std::string(name);
    return Error("expected " + want + ", got " + TypeName(v));
  }

  Status CheckEnum(const Node* n, const Json& v) {
    for (const auto& e : *n->enum_values)
      if (e == v) return Status::OK();
    return Error(Describe(v) + " is not one of " + Describe(*n->enum_values));
  }

  Status CheckString(const Node* n, std::string_view s) {
    // A string has at most as many code points as bytes: most length checks
    // are settled without counting.
    const bool need_count = (n->min_length && s.size() >= *n->min_length && *n->min_length > 0) ||
                            (n->max_length && s.size() > *n->max_length);
    if (need_count) {
      size_t len = CodePoints(s);
      if (n->min_length && len < *n->min_length)
        return Error("string shorter than " + std::to_string(*n->min_length) + " characters");
      if (n->max_length && len > *n->max_length)
        return Error("string longer than " + std::to_string(*n->max_length) + " characters");
    } else if (n->min_length && s.size() < *n->min_length) {
      return Error("string shorter than " + std::to_string(*n->min_length) + " characters");
    }
    if (n->pattern && !n->pattern->Matches(s))
      return Error(Describe(Json(s)) + " does not match pattern " + n->pattern->source());
    return Status::OK();
  }

  Status CheckNumber(const Node* n, const Json& v) {
    if (!n->minimum && !n->maximum && !n->exclusive_minimum && !n->exclusive_maximum) return Status::OK();
    double d = v.get<double>();
    if (n->minimum && !(d >= *n->minimum)) return Error(Describe(v) + " is less than " + FormatJcsNumber(*n->minimum));
    if (n->maximum && !(d <= *n->maximum)) return Error(Describe(v) + " is greater than " + FormatJcsNumber(*n->maximum));
    if (n->exclusive_minimum && !(d > *n->exclusive_minimum))
      return Error(Describe(v) + " must be greater than " + FormatJcsNumber(*n->exclusive_minimum));
    if (n->exclusive_maximum && !(d < *n->exclusive_maximum))
      return Error(Describe(v) + " must be less than " + FormatJcsNumber(*n->exclusive_maximum));
    return Status::OK();
  }

  // Property names are strings: the usual schema ({type: string, pattern})
  // is checked without materialising a Json for each key.
  Status CheckPropertyName(const Node* pn, const std::string& k) {
    if (pn->ref || pn->const_value || pn->enum_values || !pn->any_of.empty() || pn->duration_string) {
      Json key(k);
      return Validate(pn, &key);
    }
    if (pn->types != 0 && !(pn->types & kString)) return Error("property names cannot be strings here");
    return CheckString(pn, k);
  }

  Status ValidateObject(const Node* n, Json* v) {
    auto& obj = v->get_ref<Json::object_t&>();
    for (const std::string& r : n->required)
      if (obj.find(r) == obj.end()) return Error("missing required field \"" + r + "\"");
    // Instance keys and schema properties are both in byte order: walk them
    // together instead of looking every key up.
    auto prop = n->properties.begin();
    const auto prop_end = n->properties.end();
    for (auto& [k, child] : obj) {
      path_.push_back(Token{&k, 0});
      if (n->property_names) KI_RETURN_IF_ERROR(CheckPropertyName(n->property_names, k));
      while (prop != prop_end && prop->first < k) ++prop;
      if (prop != prop_end && prop->first == k) {
        KI_RETURN_IF_ERROR(Validate(prop->second, &child));
      } else if (n->additional == Node::Additional::kForbid) {
        return Error("unknown field \"" + k + "\"");
      } else if (n->additional == Node::Additional::kSchema) {
        KI_RETURN_IF_ERROR(Validate(n->additional_schema, &child));
      }
      path_.pop_back();
    }
    return Status::OK();
  }

  Status ValidateArray(const Node* n, Json* v) {
    auto& arr = v->get_ref<Json::array_t&>();
    if (n->min_items && arr.size() < *n->min_items)
      return Error("needs at least " + std::to_string(*n->min_items) + " items, has " + std::to_string(arr.size()));
    if (n->max_items && arr.size() > *n->max_items)
      return Error("allows at most " + std::to_string(*n->max_items) + " items, has " + std::to_string(arr.size()));
    for (size_t i = 0; i < arr.size(); ++i) {
      const Node* item = i < n->prefix_items.size() ? n->prefix_items[i] : n->items;
      if (!item) continue;
      path_.push_back(Token{nullptr, i});
      KI_RETURN_IF_ERROR(Validate(item, &arr[i]));
      path_.pop_back();
    }
    return Status::OK();
  }

  Status ValidateDuration(const Node* n, Json* v) {
    if (!v->is_string()) return Validate(n->duration_integer, v);
    KI_RETURN_IF_ERROR(Validate(n->duration_string, v));
    auto ns = DurationToNanos(v->get_ref<const std::string&>());
    if (!ns.ok()) return Error(ns.status().message());
    *v = Json(*ns);
    return Validate(n->duration_integer, v);
  }

  Status ValidateAnyOf(const Node* n, Json* v) {
    Status first_typed;  // the error of the first branch whose type fits
    for (const Node* branch : n->any_of) {
      // A branch of the wrong type cannot match: skip it without building
      // an error message (the common case: shapes mix integers and names).
      if (branch->types != 0 && !branch->ref && !TypeOk(branch->types, *v)) continue;
      size_t depth = path_.size();
      Status st;
      if (branch->may_mutate) {
        Json copy = *v;
        st = Validate(branch, &copy);
        if (st.ok()) *v = std::move(copy);
      } else {
        st = Validate(branch, v);
      }
      path_.resize(depth);
      if (st.ok()) return st;
      if (first_typed.ok()) first_typed = st;
    }
    if (!first_typed.ok()) return first_typed;
    return Error(Describe(*v) + " is none of the allowed types");
  }

  // Errors name the JSON pointer of the value being checked; it is only
  // spelled out here, on the error path.
  Status Error(const std::string& msg) {
    std::string ptr(prefix_);
    for (const Token& t : path_) {
      ptr.push_back('/');
      ptr += t.key ? EscapePointerToken(*t.key) : std::to_string(t.index);
    }
    if (ptr.empty()) ptr = "/";
    return Status::InvalidInput(ptr + ": " + msg);
  }

  std::string_view prefix_;
  std::vector<Token> path_;
};

}  // namespace

CompiledSchema::~CompiledSchema() = default;

Result<std::unique_ptr<CompiledSchema>> CompiledSchema::Compile(const Json& schema, std::string_view name) {
  auto out = std::unique_ptr<CompiledSchema>(new CompiledSchema);
  out->source_ = schema;  // nodes point into this copy (const, enum)
  Compiler c(out.get(), name);
  KI_ASSIGN_OR_RETURN(out->root_, c.Compile(out->source_, ""));
  KI_RETURN_IF_ERROR(c.ResolveRefs(out->source_));
  c.ComputeMayMutate();
  return out;
}

const Node* CompiledSchema::Find(std::string_view pointer) const {
  // Walks properties/items/prefixItems/anyOf by pointer tokens of the schema.
  const Node* n = root_;
  while (!pointer.empty() && n) {
    if (pointer[0] != '/') return nullptr;
    pointer.remove_prefix(1);
    size_t end = pointer.find('/');
    std::string_view tok = pointer.substr(0, end);
    pointer = end == std::string_view::npos ? std::string_view() : pointer.substr(end);
    if (tok == "properties") {
      if (pointer.empty()) return nullptr;
      pointer.remove_prefix(1);
      size_t e2 = pointer.find('/');
      std::string_view name = pointer.substr(0, e2);
      pointer = e2 == std::string_view::npos ? std::string_view() : pointer.substr(e2);
      auto it = n->properties.find(name);
      n = it == n->properties.end() ? nullptr : it->second;
    } else if (tok == "items") {
      n = n->items;
    } else if (tok == "additionalProperties") {
      n = n->additional_schema;
    } else {
      return nullptr;
    }
  }
  return n;
}

Status CompiledSchema::ValidateAndNormalize(Json* value, std::string_view pointer_prefix) const {
  return schema::ValidateAndNormalize(root_, value, pointer_prefix);
}

Status ValidateAndNormalize(const Node* node, Json* value, std::string_view pointer_prefix) {
  Validator v(pointer_prefix);
  return v.Validate(node, value);
}

Result<uint64_t> DurationToNanos(std::string_view text) {
  auto parts = SplitDuration(text);
  if (!parts) return Status::InvalidInput("\"" + std::string(text) + "\" is not a duration (e.g. \"8 us\")");
  std::string_view ip = parts->int_digits, fp = parts->frac_digits;
  const int scale = parts->scale;
  // Fraction digits beyond the unit's scale are below a nanosecond: they must be zero.
  for (size_t i = scale; i < fp.size(); ++i)
    if (fp[i] != '0')
      return Status::InvalidInput("\"" + std::string(text) + "\" is not a whole number of nanoseconds");
  while (ip.size() > 1 && ip[0] == '0') ip.remove_prefix(1);
  uint64_t ns = 0;
  auto push_digit = [&](int d) -> bool {
    if (ns > (kMaxSafeInteger - d) / 10) return false;
    ns = ns * 10 + d;
    return true;
  };
  bool ok = true;
  for (char c : ip) ok = ok && push_digit(c - '0');
  for (int i = 0; i < scale; ++i) ok = ok && push_digit(i < static_cast<int>(fp.size()) ? fp[i] - '0' : 0);
  if (!ok) return Status::InvalidInput("\"" + std::string(text) + "\" is more than 2^53-1 nanoseconds");
  return ns;
}

namespace {

// "BenchmarkRun" -> "benchmark-run.v1alpha1.schema.json", the embedded name.
std::string SchemaFileName(Kind kind) {
  std::string out;
  for (char c : KindName(kind)) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (!out.empty()) out.push_back('-');
      out.push_back(char(std::tolower(static_cast<unsigned char>(c))));
    } else {
      out.push_back(c);
    }
  }
  return out + ".v1alpha1.schema.json";
}

Result<std::unique_ptr<CompiledSchema>> LoadSchema(Kind kind) {
  std::string want = SchemaFileName(kind);
  size_t count = 0;
  const EmbeddedFile* files = ki_embedded_schemas(&count);
  for (size_t i = 0; i < count; ++i) {
    if (files[i].name != want) continue;
    Json doc;
    try {
      doc = Json::parse(files[i].data, files[i].data + files[i].size);
    } catch (const std::exception& e) {
      return Status::InvalidInput("embedded schema " + want + ": " + e.what());
    }
    const Json* kconst = nullptr;
    if (doc.contains("properties") && doc["properties"].contains("kind"))
      kconst = doc["properties"]["kind"].contains("const") ? &doc["properties"]["kind"]["const"] : nullptr;
    if (!kconst || !kconst->is_string() || ParseKind(kconst->get<std::string>()) != kind) {
      return Status::InvalidInput("embedded schema " + want + " is not the schema of " +
                                  std::string(KindName(kind)));
    }
    return CompiledSchema::Compile(doc, want);
  }
  return Status::InvalidInput("no schema for kind " + std::string(KindName(kind)));
}

}  // namespace

Result<const CompiledSchema*> SchemaFor(Kind kind) {
  // Compiled on first use, one kind at a time: a command that reads one run
  // should not pay for compiling all thirteen schemas (start-up time).
  struct Slot {
    std::once_flag once;
    std::unique_ptr<CompiledSchema> schema;
    Status error;
  };
  static Slot slots[32];
  int k = static_cast<int>(kind);
  if (k <= 0 || k >= 32) return Status::InvalidInput("no schema for kind number " + std::to_string(k));
  Slot& slot = slots[k];
  std::call_once(slot.once, [&] {
    auto compiled = LoadSchema(kind);
    if (compiled.ok()) {
      slot.schema = std::move(compiled).value();
    } else {
      slot.error = compiled.status();
    }
  });
  if (!slot.error.ok()) return slot.error;
  return static_cast<const CompiledSchema*>(slot.schema.get());
}

}  // namespace ki::schema
