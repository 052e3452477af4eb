// YAML adapter: yaml-cpp's event parser to Json, with YAML 1.2 core-schema
// scalar resolution.
//
// yaml-cpp's Node API resolves scalars with YAML 1.1 rules, keeps one of
// duplicate keys silently and expands aliases without bound, so we consume
// parser events instead and decide everything here:
//  - plain scalars (tag "?") resolve by the core schema: null, booleans,
//    integers (decimal, 0o octal, 0x hex), floats; `.inf`/`.nan` are rejected
//    because JSON and the identity rules have no NaN or Infinity; everything
//    else, timestamps included, is a string. Quoted and block scalars (tag
//    "!") are strings. Explicit core tags (!!str, !!int, ...) are honoured.
//  - mapping keys must be scalars; a key's text is used as is.
//  - every node, and every node an alias copies, counts against
//    max_yaml_nodes, and every scalar byte (keys included, copies too)
//    against 4 x max_bytes, checked before an alias is copied;
//    nesting counts against max_depth, aliases included.
//  - scalars must be well-formed UTF-8, as JSON strings must (yaml-cpp
//    passes \xff or an encoded surrogate through).
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <istream>
#include <optional>
#include <streambuf>
#include <string>
#include <unordered_map>
#include <vector>

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

#include "json/parse_internal.h"
#include "util/utf8.h"

namespace ki::json_internal {
namespace {

// A read-only streambuf over the caller's bytes (no copy into a stringstream).
class ViewBuf : public std::streambuf {
 public:
  explicit ViewBuf(std::string_view s) {
    char* p = const_cast<char*>(s.data());  // never written through: get area only
    setg(p, p, p + s.size());
  }
};

// Thrown from event callbacks to stop yaml-cpp at the first error.
struct Abort {
  std::string message;
};

constexpr std::string_view kTagPrefix = "tag:yaml.org,2002:";

bool IsDigits(std::string_view s, int base) {
  if (s.empty()) return false;
  for (char c : s) {
    bool ok = base == 8    ? (c >= '0' && c <= '7')
              : base == 10 ? (c >= '0' && c <= '9')
                           : std::isxdigit(static_cast<unsigned char>(c)) != 0;
    if (!ok) return false;
  }
  return true;
}

// [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?
bool IsCoreFloat(std::string_view s) {
  size_t i = 0, n = s.size();
  if (i < n && (s[i] == '-' || s[i] == '+')) ++i;
  size_t int_digits = 0, frac_digits = 0;
  while (i < n && s[i] >= '0' && s[i] <= '9') ++i, ++int_digits;
  if (i < n && s[i] == '.') {
    ++i;
    while (i < n && s[i] >= '0' && s[i] <= '9') ++i, ++frac_digits;
  }
  if (int_digits == 0 && frac_digits == 0) return false;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < n && (s[i] == '-' || s[i] == '+')) ++i;
    size_t exp_digits = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9') ++i, ++exp_digits;
    if (exp_digits == 0) return false;
  }
  return i == n;
}

bool IsNull(std::string_view s) { return s.empty() || s == "~" || s == "null" || s == "Null" || s == "NULL"; }
int AsBool(std::string_view s) {  // 1 true, 0 false, -1 neither
  if (s == "true" || s == "True" || s == "TRUE") return 1;
  if (s == "false" || s == "False" || s == "FALSE") return 0;
  return -1;
}
bool IsInf(std::string_view s) {
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) s.remove_prefix(1);
  return s == ".inf" || s == ".Inf" || s == ".INF";
}
bool IsNan(std::string_view s) { return s == ".nan" || s == ".NaN" || s == ".NAN"; }

// Integer text (sign handled by the caller for decimals) to Json: int64 or
// uint64 when it fits, else the nearest double (what a JS parser would keep);
// nothing when even a double cannot hold it (0x followed by 300 Fs is
// Infinity, which JSON and canonical JSON have no form for).
std::optional<Json> IntegerJson(std::string_view digits, int base, bool negative) {
  uint64_t mag = 0;
  auto r = std::from_chars(digits.data(), digits.data() + digits.size(), mag, base);
  if (r.ec == std::errc() && r.ptr == digits.data() + digits.size()) {
    if (!negative) return Json(mag);
    if (mag <= uint64_t{1} << 63) return Json(static_cast<int64_t>(0 - mag));
  }
  double d = 0;
  for (char c : digits) {
    int v = c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10;
    d = d * base + v;
  }
  if (!std::isfinite(d)) return std::nullopt;
  return Json(negative ? -d : d);
}

class Builder : public YAML::EventHandler {
 public:
  Builder(std::string_view source, const ParseLimits& limits) : source_(source), limits_(limits) {}

  void OnDocumentStart(const YAML::Mark&) override {
    stack_.clear();
    anchors_.clear();
    root_ = Json();
    has_root_ = false;
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    Count(mark, 1, 0);
    Emit(mark, Json(nullptr), /*key_text=*/nullptr, anchor, 1, 0, 0);
  }

  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end()) Fail(mark, "alias to an anchor that is not complete (recursive alias?)");
    const Anchored& a = it->second;
    Count(mark, a.nodes, a.bytes);
    const std::string* key_text = a.value.is_string() ? &a.value.get_ref<const std::string&>() : nullptr;
    Emit(mark, Json(a.value), key_text, 0, a.nodes, a.bytes, a.depth);
  }

  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    const size_t bad = Utf8InvalidAt(value);
    if (bad != value.size())
      Fail(mark, "invalid UTF-8 in a scalar (byte " + std::to_string(bad) + " of it)");
    Count(mark, 1, value.size());
    Emit(mark, Resolve(mark, tag, value), &value, anchor, 1, value.size(), 0);
  }

  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value) override {
    CheckCollectionTag(mark, tag, "seq");
    Open(mark, Json::value_t::array, anchor);
  }
  void OnSequenceEnd() override { Close(); }

  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value) override {
    CheckCollectionTag(mark, tag, "map");
    Open(mark, Json::value_t::object, anchor);
  }
  void OnMapEnd() override { Close(); }

  bool has_root() const { return has_root_; }
  Json TakeRoot() { return std::move(root_); }

 private:
  struct Frame {
    Json value;
    YAML::Mark mark;
    YAML::anchor_t anchor = 0;
    size_t nodes_at_start = 0, bytes_at_start = 0;
    int child_depth = 0;  // deepest nesting below this container
    bool have_key = false;
    std::string key;
  };
  struct Anchored {
    Json value;
    size_t nodes = 1;
    size_t bytes = 0;
    int depth = 0;
  };

  [[noreturn]] void Fail(const YAML::Mark& mark, std::string_view msg) {
    throw Abort{ErrorAtLineCol(source_, mark.line, mark.column, msg)};
  }

  void Count(const YAML::Mark& mark, size_t n, size_t bytes) {
    nodes_ += n;
    if (nodes_ > limits_.max_yaml_nodes)
      Fail(mark, "document expands to more than " + std::to_string(limits_.max_yaml_nodes) +
                     " nodes (alias bomb?)");
    bytes_ += bytes;
    if (bytes_ > ExpandedBytesBudget())
      Fail(mark, "document expands to more than " + std::to_string(ExpandedBytesBudget()) +
                     " bytes of scalars (alias bomb?)");
  }

  // Scalar bytes (keys included) after alias expansion: four times what
  // the document itself may hold. Without a budget on bytes, a 1 MiB
  // document whose aliases repeat a 300 KiB string 185,318 times stays
  // within the node limit and builds 50 GiB of strings.
  size_t ExpandedBytesBudget() const { return limits_.max_bytes * 4; }

  void CheckCollectionTag(const YAML::Mark& mark, const std::string& tag, std::string_view kind) {
    if (tag.empty() || tag == "?" || tag == "!") return;
    if (tag.size() == kTagPrefix.size() + kind.size() && tag.compare(0, kTagPrefix.size(), kTagPrefix) == 0 &&
        tag.compare(kTagPrefix.size(), std::string::npos, kind) == 0)
      return;
    Fail(mark, "unsupported tag " + tag);
  }

  Json Resolve(const YAML::Mark& mark, const std::string& tag, const std::string& v) {
    if (tag == "!") return Json(v);  // quoted or block scalar
    std::string_view t;
    if (tag != "?") {
      if (tag.compare(0, kTagPrefix.size(), kTagPrefix) != 0) Fail(mark, "unsupported tag " + tag);
      t = std::string_view(tag).substr(kTagPrefix.size());
      if (t == "str") return Json(v);
      if (t != "null" && t != "bool" && t != "int" && t != "float") Fail(mark, "unsupported tag " + tag);
    }
    const bool any = t.empty();
    if ((any || t == "null") && IsNull(v)) return Json(nullptr);
    if (any || t == "bool") {
      int b = AsBool(v);
      if (b >= 0) return Json(b == 1);
    }
    if (any || t == "int" || t == "float") {
      std::string_view s(v);
      std::optional<Json> n;
      if (s.size() > 2 && s[0] == '0' && (s[1] == 'o' || s[1] == 'x') && IsDigits(s.substr(2), s[1] == 'o' ? 8 : 16)) {
        n = IntegerJson(s.substr(2), s[1] == 'o' ? 8 : 16, false);
        if (!n) Fail(mark, "integer " + v.substr(0, 40) + (v.size() > 40 ? "..." : "") + " is out of range (Infinity is not allowed)");
        return std::move(*n);
      }
      bool neg = !s.empty() && s[0] == '-';
      std::string_view body = (!s.empty() && (s[0] == '-' || s[0] == '+')) ? s.substr(1) : s;
      if (IsDigits(body, 10)) {
        if (t == "float") return FloatJson(mark, s);
        n = IntegerJson(body, 10, neg);
        if (!n) Fail(mark, "integer " + v.substr(0, 40) + (v.size() > 40 ? "..." : "") + " is out of range (Infinity is not allowed)");
        return std::move(*n);
      }
    }
    if (any || t == "float") {
      if (IsInf(v)) Fail(mark, "Infinity is not allowed (" + v + ")");
      if (IsNan(v)) Fail(mark, "NaN is not allowed (" + v + ")");
      if (IsCoreFloat(v)) return FloatJson(mark, v);
    }
    if (any) return Json(v);
    Fail(mark, "\"" + v + "\" is not a valid " + std::string(t));
  }

  Json FloatJson(const YAML::Mark& mark, std::string_view s) {
    if (!s.empty() && s[0] == '+') s.remove_prefix(1);
    std::string buf(s);  // strtod needs a terminator
    char* end = nullptr;
    double d = std::strtod(buf.c_str(), &end);
    if (end != buf.c_str() + buf.size()) Fail(mark, "invalid number " + buf);
    if (!std::isfinite(d)) Fail(mark, "number " + buf + " is out of range (Infinity is not allowed)");
    return Json(d);
  }

  void Open(const YAML::Mark& mark, Json::value_t type, YAML::anchor_t anchor) {
    if (!stack_.empty() && stack_.back().value.is_object() && !stack_.back().have_key)
      Fail(mark, "mapping keys must be scalars");
    Count(mark, 1, 0);
    if (static_cast<int>(stack_.size()) >= limits_.max_depth)
      Fail(mark, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
    Frame f;
    f.value = Json(type);
    f.mark = mark;
    f.anchor = anchor;
    f.nodes_at_start = nodes_;
    f.bytes_at_start = bytes_;
    stack_.push_back(std::move(f));
  }

  void Close() {
    Frame f = std::move(stack_.back());
    stack_.pop_back();
    size_t nodes = nodes_ - f.nodes_at_start + 1;
    size_t bytes = bytes_ - f.bytes_at_start;
    Emit(f.mark, std::move(f.value), nullptr, f.anchor, nodes, bytes, f.child_depth + 1);
  }

  // Places a finished node into its parent (or as the root). key_text is the
  // node's text when it may serve as a mapping key.
  void Emit(const YAML::Mark& mark, Json value, const std::string* key_text, YAML::anchor_t anchor,
            size_t nodes, size_t bytes, int depth) {
    if (static_cast<int>(stack_.size()) + depth > limits_.max_depth)
      Fail(mark, "nesting deeper than " + std::to_string(limits_.max_depth) + " levels");
    if (anchor != 0) anchors_[anchor] = Anchored{value, nodes, bytes, depth};
    if (stack_.empty()) {
      root_ = std::move(value);
      has_root_ = true;
      return;
    }
    Frame& top = stack_.back();
    if (depth > top.child_depth) top.child_depth = depth;
    if (top.value.is_array()) {
      top.value.get_ref<Json::array_t&>().push_back(std::move(value));
      return;
    }
    if (!top.have_key) {
      if (key_text == nullptr) Fail(mark, "mapping keys must be non-null scalars");
      auto& obj = top.value.get_ref<Json::object_t&>();
      if (obj.count(*key_text) != 0) Fail(mark, "duplicate key \"" + *key_text + "\"");
      top.key = *key_text;
      top.have_key = true;
      return;
    }
    top.value.get_ref<Json::object_t&>().emplace(std::move(top.key), std::move(value));
    top.have_key = false;
  }

  std::string_view source_;
  const ParseLimits& limits_;
  std::vector<Frame> stack_;
  std::unordered_map<YAML::anchor_t, Anchored> anchors_;
  size_t nodes_ = 0;  // for the whole stream
  size_t bytes_ = 0;  // likewise
  Json root_;
  bool has_root_ = false;
};

}  // namespace

Result<std::vector<Json>> ParseYaml(std::string_view text, std::string_view source,
                                    const ParseLimits& limits) {
  ViewBuf buf(text);
  std::istream in(&buf);
  std::vector<Json> docs;
  try {
    YAML::Parser parser(in);
    Builder builder(source, limits);
    while (parser.HandleNextDocument(builder)) {
      docs.push_back(builder.has_root() ? builder.TakeRoot() : Json(nullptr));
    }
  } catch (const Abort& a) {
    return Status::InvalidInput(a.message);
  } catch (const YAML::Exception& e) {
    if (e.mark.is_null()) return Status::InvalidInput(std::string(source) + ": " + e.msg);
    return Status::InvalidInput(ErrorAtLineCol(source, e.mark.line, e.mark.column, e.msg));
  } catch (const std::exception& e) {
    return Status::InvalidInput(std::string(source) + ": " + e.what());
  }
  return docs;
}

}  // namespace ki::json_internal
