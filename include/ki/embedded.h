// Files compiled into the library by cmake/Embed.cmake (JSON Schemas).
#pragma once

#include <cstddef>
#include <string_view>

namespace ki {

struct EmbeddedFile {
  const char* name;  // file name without directory, e.g. "benchmark-run.v1alpha1.schema.json"
  const char* data;
  size_t size;
};

}  // namespace ki

// The KernelIndex JSON Schemas, sorted by name.
const ki::EmbeddedFile* ki_embedded_schemas(size_t* count);
// The zstd dictionaries frames are compressed with (src/odb/dictionaries,
// trained by bench/catalog/train_dicts.sh), sorted by name.
const ki::EmbeddedFile* ki_embedded_dictionaries(size_t* count);
