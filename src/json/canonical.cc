// RFC 8785 (JSON Canonicalization Scheme) serialisation.
//
// Three rules carry all the subtlety, and each is what ECMAScript's
// JSON.stringify does, because RFC 8785 is defined by it:
//  - numbers are IEEE doubles printed by Number.prototype.toString
//    (shortest round trip, exponent form below 1e-6 and from 1e21 up);
//  - object keys are sorted by UTF-16 code units, not by bytes or code points;
//  - strings escape only '"', '\\' and C0 controls; everything else is raw UTF-8.
#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "json/dump.h"
#include "ki/json.h"

namespace ki {
namespace {

// Decodes the code point starting at s[i] of valid UTF-8.
uint32_t DecodeAt(std::string_view s, size_t i) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t c = b(i);
  if (c < 0x80) return c;
  if (c < 0xE0) return (uint32_t(c & 0x1F) << 6) | (b(i + 1) & 0x3F);
  if (c < 0xF0) return (uint32_t(c & 0x0F) << 12) | (uint32_t(b(i + 1) & 0x3F) << 6) | (b(i + 2) & 0x3F);
  return (uint32_t(c & 0x07) << 18) | (uint32_t(b(i + 1) & 0x3F) << 12) |
         (uint32_t(b(i + 2) & 0x3F) << 6) | (b(i + 3) & 0x3F);
}

// Length of the valid UTF-8 sequence at s[i], or 0 when it is not valid
// (overlong forms, surrogates, beyond U+10FFFF, truncation).
size_t Utf8SeqLen(std::string_view s, size_t i) {
  const size_t n = s.size();
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  const auto cont = [&](size_t k) { return k < n && (b(k) & 0xC0) == 0x80; };
  uint8_t c = b(i);
  if (c < 0x80) return 1;
  if (c >= 0xC2 && c <= 0xDF) return cont(i + 1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (!cont(i + 1) || !cont(i + 2)) return 0;
    uint8_t c1 = b(i + 1);
    if (c == 0xE0 && c1 < 0xA0) return 0;  // overlong
    if (c == 0xED && c1 >= 0xA0) return 0;  // UTF-16 surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (!cont(i + 1) || !cont(i + 2) || !cont(i + 3)) return 0;
    uint8_t c1 = b(i + 1);
    if (c == 0xF0 && c1 < 0x90) return 0;  // overlong
    if (c == 0xF4 && c1 >= 0x90) return 0;  // > U+10FFFF
    return 4;
  }
  return 0;
}

// Bytes that cannot be copied as they are: C0 controls, '"', '\\', and the
// lead bytes of multi-byte sequences (which must be validated).
constexpr std::array<bool, 256> kSpecial = [] {
  std::array<bool, 256> t{};
  for (int c = 0; c < 0x20; ++c) t[c] = true;
  t['"'] = t['\\'] = true;
  for (int c = 0x80; c < 0x100; ++c) t[c] = true;
  return t;
}();

Status AppendString(std::string_view s, std::string* out) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  const size_t n = s.size();
  size_t run = 0;  // start of the pending run of bytes copied verbatim
  size_t i = 0;
  while (true) {
    while (i < n && !kSpecial[static_cast<uint8_t>(s[i])]) ++i;
    if (i == n) break;
    uint8_t c = static_cast<uint8_t>(s[i]);
    if (c >= 0x80) {
      size_t len = Utf8SeqLen(s, i);
      if (len == 0) return Status::InvalidInput("string is not valid UTF-8");
      i += len;
      continue;
    }
    out->append(s.data() + run, i - run);
    switch (c) {
      case '"': out->append("\\\""); break;
      case '\\': out->append("\\\\"); break;
      case '\b': out->append("\\b"); break;
      case '\f': out->append("\\f"); break;
      case '\n': out->append("\\n"); break;
      case '\r': out->append("\\r"); break;
      case '\t': out->append("\\t"); break;
      default: {
        char esc[6] = {'\\', 'u', '0', '0', kHex[c >> 4], kHex[c & 15]};
        out->append(esc, 6);
      }
    }
    run = ++i;
  }
  out->append(s.data() + run, n - run);
  out->push_back('"');
  return Status::OK();
}

// 2^53: every integer of at most this magnitude is an exact double, and
// ECMAScript prints it as plain digits.
constexpr uint64_t kMaxExactInt = uint64_t{1} << 53;

void AppendUnsigned(uint64_t v, bool negative, std::string* out) {
  if (v == 0) negative = false;  // -0 prints as "0"
  if (v <= kMaxExactInt) {
    char buf[24];
    char* p = buf;
    if (negative) *p++ = '-';
    p = std::to_chars(p, buf + sizeof(buf), v).ptr;
    out->append(buf, p);
    return;
  }
  // Larger integers become the nearest double first, as ECMAScript would.
  double d = static_cast<double>(v);
  out->append(FormatJcsNumber(negative ? -d : d));
}

Status AppendValue(const Json& v, std::string* out);

bool NeedsUtf16Sort(const std::string& key) {
  for (char ch : key)
    if (static_cast<uint8_t>(ch) >= 0xEE) return true;
  return false;
}

Status AppendObject(const Json& v, std::string* out) {
  const auto& obj = v.get_ref<const Json::object_t&>();
  const size_t start = out->size();
  out->push_back('{');
  // nlohmann keeps keys in byte order, which equals UTF-16 order unless some
  // key holds a character >= U+E000 (lead byte >= 0xEE). Write in map order
  // and, in that rare case, start the object again with a UTF-16 sort.
  bool first = true;
  bool resort = false;
  for (const auto& [k, val] : obj) {
    if (NeedsUtf16Sort(k)) {
      resort = true;
      break;
    }
    if (!first) out->push_back(',');
    first = false;
    KI_RETURN_IF_ERROR(AppendString(k, out));
    out->push_back(':');
    KI_RETURN_IF_ERROR(AppendValue(val, out));
  }
  if (resort) {
    out->resize(start + 1);
    std::vector<const Json::object_t::value_type*> items;
    items.reserve(obj.size());
    for (const auto& item : obj) items.push_back(&item);
    std::sort(items.begin(), items.end(),
              [](auto* a, auto* b) { return Utf16Less(a->first, b->first); });
    first = true;
    for (auto* item : items) {
      if (!first) out->push_back(',');
      first = false;
      KI_RETURN_IF_ERROR(AppendString(item->first, out));
      out->push_back(':');
      KI_RETURN_IF_ERROR(AppendValue(item->second, out));
    }
  }
  out->push_back('}');
  return Status::OK();
}

Status AppendValue(const Json& v, std::string* out) {
  switch (v.type()) {
    case Json::value_t::null: out->append("null"); return Status::OK();
    case Json::value_t::boolean: out->append(v.get<bool>() ? "true" : "false"); return Status::OK();
    case Json::value_t::number_unsigned:
      AppendUnsigned(v.get<uint64_t>(), false, out);
      return Status::OK();
    case Json::value_t::number_integer: {
      int64_t i = v.get<int64_t>();
      uint64_t mag = i < 0 ? uint64_t(0) - static_cast<uint64_t>(i) : static_cast<uint64_t>(i);
      AppendUnsigned(mag, i < 0, out);
      return Status::OK();
    }
    case Json::value_t::number_float: {
      double d = v.get<double>();
      if (!std::isfinite(d)) return Status::InvalidInput("NaN and Infinity have no canonical JSON form");
      out->append(FormatJcsNumber(d));
      return Status::OK();
    }
    case Json::value_t::string: return AppendString(v.get_ref<const std::string&>(), out);
    case Json::value_t::array: {
      out->push_back('[');
      bool first = true;
      for (const auto& e : v) {
        if (!first) out->push_back(',');
        first = false;
        KI_RETURN_IF_ERROR(AppendValue(e, out));
      }
      out->push_back(']');
      return Status::OK();
    }
    case Json::value_t::object: return AppendObject(v, out);
    default: return Status::InvalidInput("value has no JSON form (binary or discarded)");
  }
}

}  // namespace

bool Utf16Less(std::string_view a, std::string_view b) {
  size_t n = std::min(a.size(), b.size());
  size_t i = 0;
  while (i < n && a[i] == b[i]) ++i;
  if (i == n) return a.size() < b.size();
  // Back up to the start of the code point holding the first difference;
  // everything before it is equal, so both strings have a boundary there.
  while (i > 0 && (static_cast<uint8_t>(a[i]) & 0xC0) == 0x80) --i;
  uint32_t ca = DecodeAt(a, i), cb = DecodeAt(b, i);
  bool sa = ca >= 0x10000, sb = cb >= 0x10000;
  if (sa == sb) return ca < cb;  // same width in UTF-16: code point order holds
  // One is a surrogate pair (first unit 0xD800..0xDBFF), the other a single
  // BMP unit, which is never itself a surrogate in valid UTF-8.
  uint32_t bmp = sa ? cb : ca;
  bool bmp_first = bmp < 0xD800;
  return sa ? !bmp_first : bmp_first;
}

std::string FormatJcsNumber(double v) {
  if (v == 0) return "0";  // both +0 and -0
  if (!std::isfinite(v)) return std::isnan(v) ? "NaN" : (v > 0 ? "Infinity" : "-Infinity");
  // Shortest round-trip digits in scientific form: "d[.ddd]e[+-]X".
  char sci[40];
  auto res = std::to_chars(sci, sci + sizeof(sci), v, std::chars_format::scientific);
  std::string_view s(sci, res.ptr - sci);
  bool negative = false;
  if (s.front() == '-') {
    negative = true;
    s.remove_prefix(1);
  }
  size_t epos = s.find('e');
  std::string digits;
  for (char c : s.substr(0, epos))
    if (c != '.') digits.push_back(c);
  int exp10 = 0;
  std::string_view es = s.substr(epos + 1);
  if (es.front() == '+') es.remove_prefix(1);
  std::from_chars(es.data(), es.data() + es.size(), exp10);
  // ECMAScript: value = 0.d1d2...dk x 10^n with k digits.
  const int k = static_cast<int>(digits.size());
  const int n = exp10 + 1;
  std::string out;
  if (negative) out.push_back('-');
  if (k <= n && n <= 21) {
    out += digits;
    out.append(n - k, '0');
  } else if (0 < n && n <= 21) {
    out.append(digits, 0, n);
    out.push_back('.');
    out.append(digits, n, std::string::npos);
  } else if (-6 < n && n <= 0) {
    out += "0.";
    out.append(-n, '0');
    out += digits;
  } else {
    out.push_back(digits[0]);
    if (k > 1) {
      out.push_back('.');
      out.append(digits, 1, std::string::npos);
    }
    out.push_back('e');
    out.push_back(n - 1 >= 0 ? '+' : '-');
    out += std::to_string(std::abs(n - 1));
  }
  return out;
}

Status AppendCanonical(const Json& value, std::string* out) { return AppendValue(value, out); }

namespace json_internal {

// Json::dump()'s forms differ from RFC 8785 only in numbers (integers as
// they are held, floats by nlohmann's Grisu2 with ".0" and "e+XX" forms,
// non-finite as null) and in key order (the map's, never re-sorted);
// strings are escaped alike.
Status AppendDump(const Json& v, std::string* out) {
  switch (v.type()) {
    case Json::value_t::null: out->append("null"); return Status::OK();
    case Json::value_t::boolean: out->append(v.get<bool>() ? "true" : "false"); return Status::OK();
    case Json::value_t::number_unsigned: {
      char buf[24];
      char* p = std::to_chars(buf, buf + sizeof(buf), v.get<uint64_t>()).ptr;
      out->append(buf, p);
      return Status::OK();
    }
    case Json::value_t::number_integer: {
      char buf[24];
      char* p = std::to_chars(buf, buf + sizeof(buf), v.get<int64_t>()).ptr;
      out->append(buf, p);
      return Status::OK();
    }
    case Json::value_t::number_float: {
      double d = v.get<double>();
      if (!std::isfinite(d)) {
        out->append("null");
        return Status::OK();
      }
      std::array<char, 64> buf;
      char* end = ::nlohmann::detail::to_chars(buf.data(), buf.data() + buf.size(), d);
      out->append(buf.data(), end);
      return Status::OK();
    }
    case Json::value_t::string: return AppendString(v.get_ref<const std::string&>(), out);
    case Json::value_t::array: {
      out->push_back('[');
      bool first = true;
      for (const auto& e : v.get_ref<const Json::array_t&>()) {
        if (!first) out->push_back(',');
        first = false;
        KI_RETURN_IF_ERROR(AppendDump(e, out));
      }
      out->push_back(']');
      return Status::OK();
    }
    case Json::value_t::object: {
      out->push_back('{');
      bool first = true;
      for (const auto& [k, val] : v.get_ref<const Json::object_t&>()) {
        if (!first) out->push_back(',');
        first = false;
        KI_RETURN_IF_ERROR(AppendString(k, out));
        out->push_back(':');
        KI_RETURN_IF_ERROR(AppendDump(val, out));
      }
      out->push_back('}');
      return Status::OK();
    }
    default: return Status::InvalidInput("value has no JSON form (binary or discarded)");
  }
}

}  // namespace json_internal

Result<std::string> Canonicalize(const Json& value) {
  std::string out;
  KI_RETURN_IF_ERROR(AppendValue(value, &out));
  return out;
}

}  // namespace ki
