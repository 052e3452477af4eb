// Helpers shared by the JSON and YAML adapters of src/json.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "ki/json.h"

namespace ki::json_internal {

// "<source>:<line>:<col>: <msg>", line and column 1-based, column counted in
// characters (UTF-8 sequences), from a byte offset into `text`.
std::string ErrorAt(std::string_view source, std::string_view text, size_t offset,
                    std::string_view msg);

// "<source>:<line>:<col>: <msg>" from 0-based line and column.
std::string ErrorAtLineCol(std::string_view source, int line0, int col0, std::string_view msg);

Result<Json> ParseJson(std::string_view text, std::string_view source, const ParseLimits& limits);
Result<std::vector<Json>> ParseYaml(std::string_view text, std::string_view source,
                                    const ParseLimits& limits);

}  // namespace ki::json_internal
