// Differences between two JSON documents: RFC 6902 patches and field lists.
#include "ki/catalog.h"

namespace ki::catalog {

namespace {

// RFC 6901: "~" -> "~0", "/" -> "~1".
std::string EscapePointer(std::string_view key) {
  std::string out;
  for (char c : key) {
    if (c == '~') out += "~0";
    else if (c == '/') out += "~1";
    else out.push_back(c);
  }
  return out;
}

void Patch(const Json& a, const Json& b, const std::string& path, Json& ops) {
  if (a == b) return;
  if (a.is_object() && b.is_object()) {
    // Removals first, then changes and additions, each in key order.
    for (auto it = a.begin(); it != a.end(); ++it) {
      if (!b.contains(it.key())) ops.push_back({{"op", "remove"}, {"path", path + "/" + EscapePointer(it.key())}});
    }
    for (auto it = b.begin(); it != b.end(); ++it) {
      std::string p = path + "/" + EscapePointer(it.key());
      auto ai = a.find(it.key());
      if (ai == a.end()) {
        ops.push_back({{"op", "add"}, {"path", p}, {"value", *it}});
      } else {
        Patch(*ai, *it, p, ops);
      }
    }
    return;
  }
  if (a.is_array() && b.is_array()) {
    size_t common = std::min(a.size(), b.size());
    for (size_t i = 0; i < common; ++i) Patch(a[i], b[i], path + "/" + std::to_string(i), ops);
    // Extra elements of a are removed from the end backwards, so every
    // index stays valid while the patch is applied in order.
    for (size_t i = a.size(); i > common; --i) {
      ops.push_back({{"op", "remove"}, {"path", path + "/" + std::to_string(i - 1)}});
    }
    for (size_t i = common; i < b.size(); ++i) {
      ops.push_back({{"op", "add"}, {"path", path + "/" + std::to_string(i)}, {"value", b[i]}});
    }
    return;
  }
  ops.push_back({{"op", "replace"}, {"path", path}, {"value", b}});
}

void Fields(const Json& a, const Json& b, const std::string& path, std::vector<FieldDiff>& out) {
  if (a == b) return;
  auto join = [&](const std::string& key) { return path.empty() ? key : path + "." + key; };
  if (a.is_object() && b.is_object()) {
    // Keys of both, in order (both are sorted maps).
    auto ia = a.begin(), ib = b.begin();
    while (ia != a.end() || ib != b.end()) {
      if (ib == b.end() || (ia != a.end() && ia.key() < ib.key())) {
        out.push_back({join(ia.key()), *ia, std::nullopt});
        ++ia;
      } else if (ia == a.end() || ib.key() < ia.key()) {
        out.push_back({join(ib.key()), std::nullopt, *ib});
        ++ib;
      } else {
        Fields(*ia, *ib, join(ia.key()), out);
        ++ia;
        ++ib;
      }
    }
    return;
  }
  if (a.is_array() && b.is_array() && a.size() == b.size()) {
    for (size_t i = 0; i < a.size(); ++i) Fields(a[i], b[i], path + "[" + std::to_string(i) + "]", out);
    return;
  }
  out.push_back({path, a, b});
}

}  // namespace

Json JsonPatch(const Json& a, const Json& b) {
  Json ops = Json::array();
  Patch(a, b, "", ops);
  return ops;
}

std::vector<FieldDiff> FieldDiffs(const Json& a, const Json& b, const std::string& prefix) {
  std::vector<FieldDiff> out;
  Fields(a, b, prefix, out);
  return out;
}

}  // namespace ki::catalog
