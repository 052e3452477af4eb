// Tags over push and pull (docs/format.md, "Tags on a remote"): `ki push
// REMOTE --tags` pushes each local tag's object and tags its image manifest
// `kitag-<encoded name>` on the remote; `ki pull REMOTE --tags` pulls every
// such tag's object and sets the local tag.
#pragma once

#include <string>
#include <vector>

#include "ki/remote.h"
#include "ki/store.h"
#include "ki/tag.h"

namespace ki {

// `kitag-` + the name with `_` -> `_u`, `/` -> `_s`, `+` -> `_p`, `@` ->
// `_a` (the OCI tag grammar has none of `/ + @`); InvalidInput when that is
// longer than an OCI tag may be (128).
Result<std::string> RemoteTagOf(std::string_view tag_name);
// The tag name a remote tag encodes; nullopt when it is not a `kitag-` tag
// or does not decode to a valid tag name.
std::optional<std::string> TagNameOfRemote(std::string_view remote_tag);

struct TagTransfer {
  std::string name;         // the local tag
  std::string remote_tag;   // kitag-...
  Digest object;
  bool set = true;          // pull: false when a local tag of that name names another object (kept)
};

// Pushes every local tag (objects and remote tags). `pushed` gets the
// push's own report.
Result<std::vector<TagTransfer>> PushTags(Store& store, const RemoteUrl& remote, const TransferOptions& opts,
                                          PushReport* pushed);
// Pulls every `kitag-` tag of the remote and sets the local tags (one
// naming another object already is replaced only with `replace`).
Result<std::vector<TagTransfer>> PullTags(Store& store, const RemoteUrl& remote, const TransferOptions& opts,
                                          TagReplace replace, PullReport* pulled);

}  // namespace ki
