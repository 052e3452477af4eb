// Tags (ki/tag.h): the `tags` table, name -> 32-byte digest.
#include "ki/tag.h"

#include "odb/tables.h"

namespace ki {

namespace {

bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

bool Allowed(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
         c == '+' || c == '@' || c == '/' || c == '-';
}

std::string Quoted(std::string_view name) {
  // Control bytes are shown escaped: the message must not carry them.
  std::string out = "'";
  for (char c : name) {
    if (uint8_t(c) < 0x20 || c == 0x7f) {
      static const char kHex[] = "0123456789abcdef";
      out += "\\x";
      out += kHex[uint8_t(c) >> 4];
      out += kHex[uint8_t(c) & 15];
    } else {
      out += c;
    }
  }
  return out + "'";
}

Status Bad(std::string_view name, std::string_view why) {
  return Status::InvalidInput("tag name " + Quoted(name) + " " + std::string(why) + " (docs/format.md, \"Tags\")");
}

Result<Digest> TagValue(std::string_view name, std::string_view v) {
  if (v.size() != 32) return Status::Corruption("tag '" + std::string(name) + "': malformed entry in the tags table");
  return Digest::FromRaw(v);
}

}  // namespace

Status CheckTagName(std::string_view name) {
  if (name.empty()) return Bad(name, "is empty");
  if (name.size() > 128) return Bad(name.substr(0, 40), "is longer than 128 bytes");
  for (char c : name) {
    if (uint8_t(c) < 0x20 || c == 0x7f) return Bad(name, "contains a control character");
    if (c == ' ') return Bad(name, "contains a space");
    if (!Allowed(c)) {
      return Bad(name, std::string("contains '") + c + "' (allowed: letters, digits and . _ + @ / -)");
    }
  }
  const char first = name.front();
  if (!((first >= 'a' && first <= 'z') || (first >= 'A' && first <= 'Z') || (first >= '0' && first <= '9'))) {
    return Bad(name, "must start with a letter or a digit");
  }
  for (std::string_view bad : {"..", "//", "/.", "@{"}) {
    if (name.find(bad) != std::string_view::npos) return Bad(name, "contains '" + std::string(bad) + "'");
  }
  if (name.back() == '/' || name.back() == '.') return Bad(name, "must not end in '/' or '.'");
  if (name.size() >= 5 && name.substr(name.size() - 5) == ".lock") return Bad(name, "must not end in '.lock'");
  bool all_hex = true;
  for (char c : name) all_hex = all_hex && IsHex(c);
  if (all_hex && name.size() >= 4) return Bad(name, "looks like a digest prefix (all hex digits)");
  if (auto slash = name.find('/'); slash != std::string_view::npos && ParseKindAnyCase(name.substr(0, slash))) {
    return Bad(name, "starts with a manifest kind and would read as KIND/NAME");
  }
  return Status::OK();
}

Result<std::optional<Digest>> SetTag(Store& store, std::string_view name, const Digest& target, TagReplace replace) {
  KI_RETURN_IF_ERROR(CheckTagName(name));
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  // Checked in the batch's own transaction: ki gc deletes in a write
  // transaction too, so the object cannot go between this check and the
  // commit that makes the tag keep it.
  KI_ASSIGN_OR_RETURN(bool held, batch->Has(target));
  if (!held) return Status::NotFound(target.str() + " is not held by this store (a tag names an object it holds)");
  KI_ASSIGN_OR_RETURN(auto old, batch->Get(odb::kTags, name));
  std::optional<Digest> before;
  if (old) {
    KI_ASSIGN_OR_RETURN(Digest d, TagValue(name, *old));
    before = d;
    if (d == target) return before;
    if (replace == TagReplace::kNo) {
      return Status::InvalidInput("tag '" + std::string(name) + "' exists and names " + d.str() +
                                  " (ki tag -f replaces it, ki tag -d removes it)");
    }
  }
  KI_RETURN_IF_ERROR(batch->Put(odb::kTags, name, target.raw()));
  KI_RETURN_IF_ERROR(batch->Commit());
  return before;
}

Result<Digest> DeleteTag(Store& store, std::string_view name) {
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  KI_ASSIGN_OR_RETURN(auto old, batch->Get(odb::kTags, name));
  if (!old) return Status::NotFound("no tag named '" + std::string(name) + "'");
  KI_ASSIGN_OR_RETURN(Digest d, TagValue(name, *old));
  KI_RETURN_IF_ERROR(batch->Delete(odb::kTags, name));
  KI_RETURN_IF_ERROR(batch->Commit());
  return d;
}

Result<std::optional<Digest>> LookupTag(Store& store, std::string_view name) {
  if (name.empty()) return std::optional<Digest>();
  KI_ASSIGN_OR_RETURN(auto v, store.Get(odb::kTags, name));
  if (!v) return std::optional<Digest>();
  KI_ASSIGN_OR_RETURN(Digest d, TagValue(name, *v));
  return std::optional<Digest>(d);
}

Result<std::vector<std::pair<std::string, Digest>>> ListTags(Store& store) {
  std::vector<std::pair<std::string, Digest>> out;
  Status bad;
  KI_RETURN_IF_ERROR(store.Scan(odb::kTags, "", [&](std::string_view k, std::string_view v) {
    auto d = TagValue(k, v);
    if (!d.ok()) {
      bad = d.status();
      return false;
    }
    out.emplace_back(std::string(k), *d);
    return true;
  }));
  KI_RETURN_IF_ERROR(bad);
  return out;
}

}  // namespace ki
