// Ingest: turning user files into stored objects (what `ki add` does).
//
// A file is a manifest input (one manifest, a {run, protocol, environment}
// bundle, or multi-document YAML) or a blob. Everything one call receives
// is stored in one Batch: if any input is bad, nothing is stored.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ki/store.h"

namespace ki {

enum class InputType { kDetect, kBlob };

struct AddInput {
  std::string source;      // file name, or "-" for standard input
  std::string bytes;
  InputType type = InputType::kDetect;
  std::string media_type;  // blobs: empty = guessed from the source name
  // A blob (IsBlobInput) left unread: AddInputs opens `source` itself and
  // stores it with Batch::PutBlobStream, a piece at a time, so that its
  // size is not bounded by memory. `bytes` is unused.
  bool stream = false;
  // With `stream`: bytes already read from `source` (standard input read
  // that far to tell a manifest from a blob), stored before the rest.
  std::string prefix;
};

struct AddedObject {
  Digest digest;
  std::string kind;  // manifest kind, or "blob"
  std::string name;  // metadata.name, or "" (blobs)
  bool existed = false;
};

// True for a media type ki stores a blob under, and so carries through push
// and pull unchanged: an RFC 6838 type/subtype (restricted names: a letter
// or digit, then letters, digits and !#$&-^_.+; at most 127 each) followed
// by any number of RFC 9110 parameters (`; charset=utf-8`, a token or a
// quoted-string value, spaces or tabs around the `;`), in ASCII, at most 255
// bytes. `ki add --media-type` refuses anything else, and so does a pull (a
// remote's layer annotations are input like any other).
bool IsValidMediaType(std::string_view media_type);
// OK for a valid media type, else InvalidInput "<where>: media type '...'
// is not ..." (the type shown as printable ASCII, at most 100 bytes): the
// one message for `ki add` and a pull alike.
Status CheckMediaType(std::string_view media_type, std::string_view where);

// True when the input is a blob whatever its bytes say: InputType::kBlob,
// or a name with an extension other than .json/.yaml/.yml.
bool IsBlobInput(const AddInput& in);

// True when the input would be parsed as a manifest: a .json/.yaml/.yml
// file, or (for stdin and other names) text starting like a document.
bool LooksLikeManifestInput(const AddInput& in);

// Results in input order (a bundle or multi-document input gives several).
Result<std::vector<AddedObject>> AddInputs(Store& store, const std::vector<AddInput>& inputs);

}  // namespace ki
