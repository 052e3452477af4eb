// A remote's listing (docs/format.md, "Listing"): what ki pushed there,
// root by root, so that `ki remote ls` and `ki pull` by any name ki prints
// cost a bounded number of requests instead of one per tag.
//
// The listing is a blob of JSON rows (tag, manifest, root, kind, name,
// bundle, roots, pushed-at) referenced by a small image manifest under the
// tag `ki-listing`; every push merges its rows in (by tag) and rewrites it
// only when a row changed. A cache of what the tags say: two pushes that
// race may drop each other's rows, which the next push of those refs puts
// back; `ki remote ls` also shows tags the listing does not name.
//
// Thread-safety: functions of one Conn's thread.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ki/remote.h"
#include "remote/mapping.h"
#include "remote/target.h"

namespace ki::remote {

inline constexpr std::string_view kListingTag = "ki-listing";

// Rows as read (empty when the remote has no listing, or an unreadable
// one: it is a cache; `*note` then says why, for a warning).
Result<std::vector<RemoteEntry>> ReadListing(Conn& conn, const TransferOptions& opts, std::string* note);
// Merges `rows` (by tag; a row whose tag and manifest are unchanged keeps
// its first pushed-at) and writes the listing when something changed.
Status UpdateListing(Conn& conn, std::vector<RemoteEntry> rows, const TransferOptions& opts);

// A bundle's table of contents, read by its tag or index digest: the
// index, its pack manifest (an untyped index's entries are fetched until
// one is the pack's), the table. nullopt for a format 1 bundle (it has
// none).
Result<std::optional<BundleToc>> ReadBundleToc(Conn& conn, std::string_view ref, const TransferOptions& opts);

// ListRemote over an open connection (pull reads names against it).
Result<RemoteListing> ReadRemoteListing(Conn& conn, const TransferOptions& opts, bool bundle_roots);

}  // namespace ki::remote
