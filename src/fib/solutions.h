// flashinfer-bench solutions as ImplementationRevisions. Internal to src/fib.
//
// A Solution (flashinfer-bench's Solution JSON: name, definition, author,
// description, spec {language, target_hardware, entry_point
// "<file>::<function>", dependencies, destination_passing_style, binding},
// sources [{path, content}]) becomes an ImplementationRevision named as
// KernelIndex names it, its sources one stored object. Source paths must be
// relative, without `..`, and unique; the entry point's file must be among
// them.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "ki/digest.h"
#include "ki/json.h"
#include "ki/manifest.h"
#include "ki/status.h"

namespace ki::fib {

struct ParsedSolution {
  std::string name, definition, author, description;
  std::string language;  // python, triton, cuda, cpp, tilelang, ...
  std::string entry_file, function;
  bool destination_passing = true;  // flashinfer-bench's default
  std::string binding;              // C++/CUDA: tvm-ffi (default) or torch
  std::vector<std::string> target_hardware, dependencies;
  std::map<std::string, std::string> files;  // normalised path -> content
};
// InvalidInput naming `where` and the field for anything malformed.
Result<ParsedSolution> ParseSolution(std::string_view text, const std::string& where);

// The callable's interface: how ki calls it (run/python.h names the Python
// ones; `flashinfer_bench_binding_<binding>` for C++/CUDA).
std::string SolutionInterface(const ParsedSolution& s);

struct StoredSolution {
  std::string bytes;
  std::string media_type;
};
Result<StoredSolution> SourceBlob(const ParsedSolution& s);

Json ImplementationDocument(const ParsedSolution& s, const Digest& operation, const Json& operation_spec,
                            const Digest& source, uint64_t source_bytes);

// A definition's reference code as a solution: reference.py::run, returning
// its outputs.
ParsedSolution ReferenceSolution(std::string_view definition_name, std::string_view reference_code);

}  // namespace ki::fib
