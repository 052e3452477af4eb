// flashinfer-bench datasets in a ki store (`ki import flashinfer-bench DIR`).
//
// A flashinfer-bench dataset tree holds definitions/**/*.json (one operation
// each, with Python reference code), workloads/**/*.jsonl (one workload per
// line) and, in the Hugging Face copy, traces/**/*.jsonl (a workload plus a
// solution's evaluation per line). ki maps them onto KernelIndex kinds
// exactly as KernelIndex's own importer does, so the digests agree with the
// catalog export (docs/format.md, "flashinfer-bench mapping"):
//   definition -> OperationSpec  (axes, family, inputs, outputs, reference
//                                 language, semantics; the reference code is
//                                 kept as a blob)
//   workload   -> WorkloadCase   (axes, scalars, tensors with their
//                                 generator, correctness, operationSpecDigest)
//   solution   -> ImplementationRevision (named as KernelIndex names it; its
//                                 sources one object: the file itself when it
//                                 is one file, else a ki source bundle; the
//                                 entry point and calling style in `callable`)
//   reference  -> ImplementationRevision `<definition>.reference`
//                                 (reference.py::run, returning its outputs)
// Trace lines are linked to their solutions by name (table fib.traces).
// Inputs stored as safetensors files that the tree lacks are recorded as
// missing; `ki run` generates them from its seed instead, and says so.
//
// Thread-safety: pure functions, and functions taking a Store follow the
// Store's rules (one writer).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ki/json.h"
#include "ki/manifest.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki::fib {

// The OperationSpec document (metadata included) KernelIndex derives from a
// definition JSON text.
Result<Json> OperationDocument(std::string_view definition_json, std::string_view source);
// The WorkloadCase document of one workload (a JSON text: a trace line or a
// bare workload object), given its definition and operation digest.
Result<Json> WorkloadDocument(std::string_view definition_json, std::string_view workload_json,
                              const Digest& operation, std::string_view source);

// flashinfer-bench dtype names to KernelIndex's ("bfloat16" -> "bf16").
std::string KernelIndexDtype(std::string_view fib_dtype);

// What the store keeps about an imported definition and workload (tables
// fib.operations and fib.workloads).
struct OperationFacts {
  std::string definition;     // the definition's name, e.g. gqa_paged_decode_h32_kv4_d128_ps1
  Digest definition_blob;     // the definition JSON file, verbatim
  std::optional<Digest> reference_blob;  // its reference code
};
struct MissingInput {
  std::string input;       // e.g. kv_indptr
  std::string path;        // as the workload names it
  std::string tensor_key;
};
struct WorkloadFacts {
  std::string uuid;
  std::string definition;
  Digest workload_blob;    // the workload object, as the dataset has it (JSON)
  std::vector<MissingInput> missing;
};
Result<std::optional<OperationFacts>> LookupOperation(Store& store, const Digest& operation);
// The fib.operations row of an operation as stored, and writing one: the
// facts are a table, not an object a pull brings, so `ki fleet` carries an
// operation's row to a node's scratch store beside its definition blobs.
Result<std::optional<std::string>> OperationFactsRow(Store& store, const Digest& operation);
// Checks the row as LookupOperation reads it (InvalidInput otherwise).
Status PutOperationFactsRow(Batch& batch, const Digest& operation, std::string_view row);
// What the store keeps about an imported solution, by the digest of its
// source object (table fib.solutions): a KernelIndex record of the same
// solution names the same source digest, and its callable says less.
struct SolutionFacts {
  std::string solution;     // flashinfer-bench's name
  std::string definition;
  std::string language;
  bool destination_passing = true;
  Digest implementation;    // the ImplementationRevision ki made of it
};
Result<std::optional<SolutionFacts>> LookupSolution(Store& store, const Digest& source);
Result<std::optional<WorkloadFacts>> LookupWorkload(Store& store, const Digest& workload);

struct ImportReport {
  std::string root;
  uint64_t definitions = 0, workloads = 0, traces = 0;
  uint64_t operations_new = 0, operations_existing = 0;
  uint64_t workloads_new = 0, workloads_existing = 0;
  uint64_t missing_inputs = 0;     // safetensors inputs the tree lacks
  uint64_t skipped_lines = 0;      // trace lines whose definition is not in the tree
  uint64_t solutions = 0;          // solutions/**/*.json read
  uint64_t implementations_new = 0, implementations_existing = 0;  // solutions and references
  uint64_t skipped_solutions = 0;  // solutions whose definition is not in the tree
  uint64_t traces_linked = 0;      // trace lines whose solution is imported (now or before)
  std::vector<std::pair<std::string, Digest>> operations;  // definition name -> OperationSpec
};

// Imports a dataset tree in one Batch: nothing is stored if any file is bad.
Result<ImportReport> ImportDataset(Store& store, const std::string& root);

}  // namespace ki::fib
