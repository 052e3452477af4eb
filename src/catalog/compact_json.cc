// EncodeCompactJson / DecodeStoredJson (compact_json.h). The layout is
// docs/format.md's ("Catalog tables", the compact JSON form); the codes
// below are part of it: never renumber, never reuse.
#include "catalog/compact_json.h"

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "util/coding.h"
#include "util/utf8.h"

namespace ki::catalog::tables {
namespace {

constexpr char kMagic = 0x02;
// Deepest nesting the binary form holds (Get refuses deeper, so that a
// damaged value cannot recurse without bound). Put keeps a deeper tree, which
// a catalog value never is but an export row's event could be, as JSON text.
constexpr int kMaxDepth = 32;

enum Tag : uint8_t {
  kNull = 0,
  kFalse = 1,
  kTrue = 2,
  kUint = 3,      // varint
  kNegInt = 4,    // varint of -(v + 1)
  kDouble = 5,    // IEEE double, little-endian
  kString = 6,    // length-prefixed UTF-8
  kDigest = 7,    // 32 bytes: "sha256:" + 64 lowercase hex
  kUuid = 8,      // 16 bytes: lowercase hex 8-4-4-4-12
  kTime = 9,      // varint ms since 1970: "YYYY-MM-DDTHH:MM:SS.mmmZ"
  kCoded = 10,    // one byte: a string of kStrings
  kArray = 11,    // varint count, then the values
  kObject = 12,   // varint count, then per member its name and value
};

// Member names (a name is one byte, its index here; 0: the name follows,
// length-prefixed) and string values the catalog's values repeat.
constexpr std::string_view kNames[] = {
    "",           "kind",        "metric",   "protocol",      "runs",          "workload", "correctness",
    "environment", "operation",  "sourceNative", "model",     "qualityPolicy", "tokenizer", "topology",
    "at",         "cause",       "comparisonKey", "createdAt", "id",           "policyVersion",
    "previousRunId", "runId",
};
constexpr std::string_view kStrings[] = {"kernel", "serving", "new_run", "ranking-v1"};
constexpr size_t kNameCount = sizeof(kNames) / sizeof(kNames[0]);
constexpr size_t kStringCount = sizeof(kStrings) / sizeof(kStrings[0]);
static_assert(kNameCount < 256 && kStringCount < 256);

constexpr char kHex[] = "0123456789abcdef";

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;  // upper case is not lowercase hex: kept as a string
}

// Lowercase hex of `n` bytes into raw bytes, with '-' expected at the
// offsets `dashes` marks (of the text); false on anything else.
bool Unhex(std::string_view s, std::string* out, std::string_view dashes = "") {
  std::string raw;
  size_t i = 0;
  while (i < s.size()) {
    if (dashes.find(char(i)) != std::string_view::npos) {
      if (s[i] != '-') return false;
      ++i;
      continue;
    }
    if (i + 1 >= s.size()) return false;
    int hi = HexDigit(s[i]), lo = HexDigit(s[i + 1]);
    if (hi < 0 || lo < 0) return false;
    raw.push_back(char(hi << 4 | lo));
    i += 2;
  }
  *out = std::move(raw);
  return true;
}

void AppendHex(std::string* out, std::string_view raw) {
  for (unsigned char c : raw) {
    out->push_back(kHex[c >> 4]);
    out->push_back(kHex[c & 15]);
  }
}

constexpr char kUuidDashes[] = {8, 13, 18, 23};

std::string UuidText(std::string_view raw) {
  std::string s;
  AppendHex(&s, raw.substr(0, 4));
  for (size_t at : {4, 6, 8, 10}) {
    s.push_back('-');
    AppendHex(&s, raw.substr(at, at == 10 ? 6 : 2));
  }
  return s;
}

// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's
// days_from_civil) and back.
int64_t DaysFromCivil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = unsigned(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + int64_t(doe) - 719468;
}
void CivilFromDays(int64_t z, int64_t* y, unsigned* m, unsigned* d) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = unsigned(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  *d = doy - (153 * mp + 2) / 5 + 1;
  *m = mp < 10 ? mp + 3 : mp - 9;
  *y = int64_t(yoe) + era * 400 + (*m <= 2);
}

std::string TimeText(uint64_t ms) {
  int64_t days = int64_t(ms / 86400000), y;
  unsigned m, d;
  CivilFromDays(days, &y, &m, &d);
  const uint64_t rest = ms % 86400000;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02u:%02u:%02u.%03uZ", (long long)y, m, d,
                unsigned(rest / 3600000), unsigned(rest / 60000 % 60), unsigned(rest / 1000 % 60),
                unsigned(rest % 1000));
  return buf;
}

// A timestamp as the export writes them, when TimeText gives it back
// exactly (so a value never changes by being stored).
bool TimeMs(std::string_view s, uint64_t* ms) {
  if (s.size() != 24 || s[4] != '-' || s[7] != '-' || s[10] != 'T' || s[13] != ':' || s[16] != ':' ||
      s[19] != '.' || s[23] != 'Z')
    return false;
  auto num = [&](size_t at, size_t n, unsigned* v) {
    *v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (s[i] < '0' || s[i] > '9') return false;
      *v = *v * 10 + unsigned(s[i] - '0');
    }
    return true;
  };
  unsigned y, mo, d, h, mi, se, ml;
  if (!num(0, 4, &y) || !num(5, 2, &mo) || !num(8, 2, &d) || !num(11, 2, &h) || !num(14, 2, &mi) ||
      !num(17, 2, &se) || !num(20, 3, &ml))
    return false;
  if (y < 1970 || mo < 1 || mo > 12 || d < 1 || d > 31 || h > 23 || mi > 59 || se > 59) return false;
  const int64_t days = DaysFromCivil(y, mo, d);
  *ms = uint64_t(days) * 86400000 + uint64_t(h) * 3600000 + mi * 60000 + se * 1000 + ml;
  return TimeText(*ms) == s;
}

void PutString(std::string* out, const std::string& s) {
  for (size_t i = 0; i < kStringCount; ++i) {
    if (s == kStrings[i]) {
      out->push_back(char(kCoded));
      out->push_back(char(i));
      return;
    }
  }
  std::string raw;
  uint64_t ms;
  if (s.size() == 71 && s.compare(0, 7, "sha256:") == 0 && Unhex(std::string_view(s).substr(7), &raw)) {
    out->push_back(char(kDigest));
    out->append(raw);
  } else if (s.size() == 36 && Unhex(s, &raw, std::string_view(kUuidDashes, 4))) {
    out->push_back(char(kUuid));
    out->append(raw);
  } else if (TimeMs(s, &ms)) {
    out->push_back(char(kTime));
    coding::PutVarint64(out, ms);
  } else {
    out->push_back(char(kString));
    coding::PutLengthPrefixed(out, s);
  }
}

bool Put(std::string* out, const Json& j, int depth) {
  if (depth > kMaxDepth) return false;
  switch (j.type()) {
    case Json::value_t::null: out->push_back(char(kNull)); return true;
    case Json::value_t::boolean: out->push_back(char(j.get<bool>() ? kTrue : kFalse)); return true;
    case Json::value_t::number_unsigned:
      out->push_back(char(kUint));
      coding::PutVarint64(out, j.get<uint64_t>());
      return true;
    case Json::value_t::number_integer: {
      const int64_t v = j.get<int64_t>();
      // A non-negative one reads back unsigned, as JSON text parses it.
      out->push_back(char(v >= 0 ? kUint : kNegInt));
      coding::PutVarint64(out, v >= 0 ? uint64_t(v) : uint64_t(-(v + 1)));
      return true;
    }
    case Json::value_t::number_float:
      out->push_back(char(kDouble));
      coding::PutDouble(out, j.get<double>());
      return true;
    case Json::value_t::string: PutString(out, j.get_ref<const std::string&>()); return true;
    case Json::value_t::array:
      out->push_back(char(kArray));
      coding::PutVarint64(out, j.size());
      for (const Json& v : j)
        if (!Put(out, v, depth + 1)) return false;
      return true;
    case Json::value_t::object: {
      out->push_back(char(kObject));
      coding::PutVarint64(out, j.size());
      for (auto it = j.begin(); it != j.end(); ++it) {
        size_t code = 1;
        while (code < kNameCount && kNames[code] != it.key()) ++code;
        if (code < kNameCount) {
          out->push_back(char(code));
        } else {
          out->push_back(0);
          coding::PutLengthPrefixed(out, it.key());
        }
        if (!Put(out, it.value(), depth + 1)) return false;
      }
      return true;
    }
    default: return false;  // binary, discarded
  }
}

bool Get(coding::Decoder& in, Json* out, int depth) {
  uint8_t tag;
  if (depth > kMaxDepth || !in.GetByte(&tag)) return false;
  std::string_view bytes;
  uint64_t n;
  switch (tag) {
    case kNull: *out = nullptr; return true;
    case kFalse: *out = false; return true;
    case kTrue: *out = true; return true;
    case kUint:
      if (!in.GetVarint64(&n)) return false;
      *out = n;
      return true;
    case kNegInt:
      if (!in.GetVarint64(&n) || n > uint64_t(INT64_MAX)) return false;
      *out = -int64_t(n) - 1;
      return true;
    case kDouble: {
      // JSON text holds no NaN or Infinity (its parse refuses them): from a
      // damaged value such a double would dump as null, a tree no stored
      // JSON could have been (found by fuzz_compact).
      double v;
      if (!in.GetDouble(&v) || !std::isfinite(v)) return false;
      *out = v;
      return true;
    }
    case kString:
      // Checked as JSON text's parse checks it: a damaged byte must not
      // reach a later dump, which throws on bytes that are not UTF-8.
      if (!in.GetLengthPrefixed(&bytes) || !IsValidUtf8(bytes)) return false;
      *out = std::string(bytes);
      return true;
    case kDigest: {
      if (!in.GetBytes(32, &bytes)) return false;
      std::string s = "sha256:";
      AppendHex(&s, bytes);
      *out = std::move(s);
      return true;
    }
    case kUuid:
      if (!in.GetBytes(16, &bytes)) return false;
      *out = UuidText(bytes);
      return true;
    case kTime:
      if (!in.GetVarint64(&n) || n / 86400000 > 3000000) return false;  // past year 9999: not ours
      *out = TimeText(n);
      return true;
    case kCoded: {
      uint8_t code;
      if (!in.GetByte(&code) || code >= kStringCount) return false;
      *out = std::string(kStrings[code]);
      return true;
    }
    case kArray: {
      if (!in.GetVarint64(&n) || n > in.rest().size()) return false;
      Json a = Json::array();
      for (uint64_t i = 0; i < n; ++i) {
        Json v;
        if (!Get(in, &v, depth + 1)) return false;
        a.push_back(std::move(v));
      }
      *out = std::move(a);
      return true;
    }
    case kObject: {
      if (!in.GetVarint64(&n) || n > in.rest().size()) return false;
      Json o = Json::object();
      for (uint64_t i = 0; i < n; ++i) {
        uint8_t code;
        if (!in.GetByte(&code)) return false;
        std::string name;
        if (code == 0) {
          if (!in.GetLengthPrefixed(&name) || !IsValidUtf8(name)) return false;
        } else if (code < kNameCount) {
          name = kNames[code];
        } else {
          return false;
        }
        Json v;
        if (!Get(in, &v, depth + 1) || o.contains(name)) return false;
        o[name] = std::move(v);
      }
      *out = std::move(o);
      return true;
    }
    default: return false;
  }
}

}  // namespace

std::string EncodeCompactJson(const Json& j) {
  std::string out(1, kMagic);
  if (!Put(&out, j, 0)) return j.dump();
  return out;
}

bool DecodeStoredJson(std::string_view stored, Json* out) {
  if (stored.empty()) return false;
  if (stored.front() != kMagic) {
    *out = Json::parse(stored, nullptr, /*allow_exceptions=*/false);
    return !out->is_discarded();
  }
  coding::Decoder in(stored.substr(1));
  return Get(in, out, 0) && in.done();
}

}  // namespace ki::catalog::tables
