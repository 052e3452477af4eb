// The binary form of the catalog's JSON values (catalog.cohorts and
// catalog.events since store format 9; docs/format.md, "Catalog tables").
// Those values are read back as JSON trees, so the binary form is a JSON
// tree too, with the strings the catalog repeats (field names, "sha256:"
// digests, row ids, export timestamps) in fewer bytes: the JSON spelled
// a cohort digest as 71 characters and every field's name in every value.
#pragma once

#include <string>
#include <string_view>

#include "ki/catalog.h"

namespace ki::catalog::tables {

// The value's bytes: the byte 0x02 then the tree (format.md). Decodes to
// a tree equal to `j`; a tree the form cannot hold (binary data) is kept
// as JSON text instead, which DecodeStoredJson reads as well.
std::string EncodeCompactJson(const Json& j);
// Reads either form: JSON text (stores before format 9: the first byte is
// `{`) or EncodeCompactJson's. False on malformed bytes.
bool DecodeStoredJson(std::string_view stored, Json* out);

}  // namespace ki::catalog::tables
