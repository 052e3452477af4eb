// AuditWholeStore (include/ki/audit.h).
#include "ki/audit.h"

#include <map>
#include <tuple>

#include "ki/catalog.h"

namespace ki {

namespace {

// One entry per (state, object, what): the derived-index comparison and the
// catalog's format check both find a damaged catalog entry; a user counts
// one damaged entry.
void MergeSameEntries(std::vector<CheckEntry>* entries) {
  std::map<std::tuple<int, Digest, std::string, std::string>, size_t> first;
  std::vector<CheckEntry> out;
  out.reserve(entries->size());
  for (auto& e : *entries) {
    auto key = std::make_tuple(static_cast<int>(e.state), e.digest, e.what, e.via);
    auto [it, inserted] = first.emplace(std::move(key), out.size());
    if (inserted) {
      out.push_back(std::move(e));
    } else if (!e.detail.empty() && out[it->second].detail.find(e.detail) == std::string::npos) {
      auto& d = out[it->second].detail;
      d += d.empty() ? e.detail : "; " + e.detail;
    }
  }
  *entries = std::move(out);
}

}  // namespace

Result<WholeStoreAudit> AuditWholeStore(Store& store, bool reindex) {
  WholeStoreAudit out;
  KI_ASSIGN_OR_RETURN(out.store, reindex ? store.Reindex() : store.Audit());
  KI_ASSIGN_OR_RETURN(catalog::TableCheck tables, catalog::CheckTables(store));
  for (auto& e : tables.faults) out.store.faults.push_back(std::move(e));
  for (auto& e : tables.missing) out.store.missing.push_back(std::move(e));
  MergeSameEntries(&out.store.faults);
  MergeSameEntries(&out.store.missing);
  bool any_signed = false;
  KI_RETURN_IF_ERROR(store.Scan(kAttestationTable, "", [&](std::string_view, std::string_view) {
    any_signed = true;
    return false;
  }));
  KeySources keys;
  if (any_signed) {
    KI_ASSIGN_OR_RETURN(keys, KeySources::LoadDefault());
  }
  KI_ASSIGN_OR_RETURN(out.attestations, AuditAttestations(store, keys));
  return out;
}

}  // namespace ki
