// Tags: local names a user gives to any object (a blob or a manifest), kept
// in the store's `tags` table (docs/format.md, "Tags"). A tag is recorded
// state, like a git ref: no object carries it, so reindex keeps it and
// never rebuilds it. Tags keep their targets alive in `ki gc` (ki/gc.h), and
// a REF may name an object by its tag (`tag:NAME`, or NAME alone when no
// other reading of it matches another object: docs/cli.md, "References").
// Push and pull carry them when asked (ki/tag_sync.h).
//
// Thread-safety: as Store's (one Batch at a time).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ki/digest.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki {

// The prefix that makes a REF a tag and nothing else.
inline constexpr std::string_view kTagRefPrefix = "tag:";

// OK, or InvalidInput saying what is wrong with `name` as a tag name: 1 to
// 128 bytes of [A-Za-z0-9._+@/-]; starting with a letter or digit; no "..",
// "//", "/." or "@{"; not ending in "/", "." or ".lock"; not all hex digits
// (4 or more: a digest prefix); not `<Kind>/...` for a KernelIndex kind
// (a manifest name). Rules: docs/format.md, "Tags".
Status CheckTagName(std::string_view name);

enum class TagReplace { kNo, kYes };

// Points tag `name` at `target`, which the store must hold (checked inside
// the batch that writes the tag, so that no concurrent `ki gc` can have
// removed it in between). A tag that exists already and points elsewhere is
// InvalidInput unless `replace` is kYes. Returns the digest it pointed at
// before, if any.
Result<std::optional<Digest>> SetTag(Store& store, std::string_view name, const Digest& target,
                                     TagReplace replace = TagReplace::kNo);
// Removes tag `name`; NotFound when there is no such tag. Returns what it
// pointed at.
Result<Digest> DeleteTag(Store& store, std::string_view name);
// The tag's target, or nullopt when there is no such tag.
Result<std::optional<Digest>> LookupTag(Store& store, std::string_view name);
// Every tag, by name (byte order).
Result<std::vector<std::pair<std::string, Digest>>> ListTags(Store& store);

}  // namespace ki
