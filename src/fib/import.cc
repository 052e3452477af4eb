// flashinfer-bench dataset import: definitions -> OperationSpec, workloads ->
// WorkloadCase, with KernelIndex's mapping (checked against the catalog
// export's digests in tests/run/fib_import_test.cc).
#include <algorithm>
#include <filesystem>
#include <set>

#include "fib/solutions.h"
#include "ki/flashinfer.h"
#include "ki/store_env.h"
#include "json/fields.h"

namespace ki::fib {
namespace {

namespace fs = std::filesystem;
using OJson = OrderedJson;

// Type checks before nlohmann's value()/get() (json/fields.h): those throw
// type_error for a field of another type (a workload's "uuid": 12345, a line
// `[1,2]`), which ended the import with exit 5 and no file or line. Dataset
// files are local input: a wrong type is InvalidInput naming `where`
// (file:line), the place in the document and the field.

// A definition's shape, checked once so the mapping below may read it with
// value()/get() without throwing.
Status CheckDefinition(const OJson& def, std::string_view where) {
  if (!def.is_object() || !def.contains("name") || !def["name"].is_string())
    return Status::InvalidInput(std::string(where) + ": a definition needs a \"name\"");
  const std::string at(where);
  KI_RETURN_IF_ERROR(GetString(def, "op_type", at).status());
  KI_RETURN_IF_ERROR(CheckObjectOfObjects(def, "axes", at));
  if (def.contains("axes"))
    for (const auto& [k, a] : def["axes"].items()) {
      KI_ASSIGN_OR_RETURN(std::string type, GetString(a, "type", at + ": axes." + k));
      if (type == "const" && !(a.contains("value") && a["value"].is_number_integer()))
        return Status::InvalidInput(std::string(where) + ": constant axis " + k + " needs an integer value");
    }
  for (const char* list : {"inputs", "outputs"}) {
    KI_RETURN_IF_ERROR(CheckObjectOfObjects(def, list, at));
    if (!def.contains(list)) continue;
    for (const auto& [k, t] : def[list].items()) {
      const std::string tensor = at + ": " + list + "." + k;
      KI_RETURN_IF_ERROR(GetString(t, "dtype", tensor).status());
      auto sh = t.find("shape");
      if (sh == t.end() || sh->is_null()) continue;
      if (!sh->is_array()) return WrongType(tensor, "shape", *sh, "an array of axis names");
      for (const auto& a : *sh)
        if (!a.is_string()) return WrongType(tensor, "shape[]", a, "an axis name (a string)");
    }
  }
  return Status::OK();
}

// A workload (the line's "workload", or the line itself): the fields the
// mapping and the import read, with their types.
Status CheckWorkload(const Json& w, std::string_view where) {
  const std::string at = std::string(where) + ": workload";
  KI_RETURN_IF_ERROR(CheckObject(w, at));
  KI_RETURN_IF_ERROR(GetString(w, "uuid", at).status());
  KI_RETURN_IF_ERROR(CheckObjectOfObjects(w, "inputs", at));
  if (!w.contains("inputs")) return Status::OK();
  for (const auto& [k, in] : w["inputs"].items())
    for (const char* f : {"type", "path", "tensor_key"})
      KI_RETURN_IF_ERROR(GetString(in, f, at + ".inputs." + k).status());
  return Status::OK();
}

constexpr std::string_view kOperationsTable = "fib.operations";
constexpr std::string_view kWorkloadsTable = "fib.workloads";
constexpr std::string_view kSolutionsTable = "fib.solutions";        // source digest (32) -> facts JSON
constexpr std::string_view kSolutionNamesTable = "fib.solution_names";  // solution name -> implementation digest
constexpr std::string_view kTracesTable = "fib.traces";  // workload (32) + solution name -> implementation digest

// Definitions keep their key order (inputs and outputs are lists in the
// OperationSpec, in the order the definition gives them), so they are read
// with an order-preserving parser, after the strict parser has accepted them.
Result<OJson> ParseOrdered(std::string_view text, std::string_view source) {
  KI_RETURN_IF_ERROR(ParseDocument(text, DocFormat::kJson, source).status());
  try {
    return OJson::parse(text.begin(), text.end());
  } catch (const OJson::exception& e) {
    return Status::InvalidInput(std::string(source) + ": " + e.what());
  }
}

std::string Slug(std::string_view name) {
  std::string s;
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') s.push_back(char(c - 'A' + 'a'));
    else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-') s.push_back(c);
    else s.push_back('-');
  }
  return s;
}

std::string Family(std::string_view op_type) {
  std::string s(op_type);
  std::replace(s.begin(), s.end(), '_', '-');
  return s;
}

bool IsScalar(const OJson& t) {
  auto it = t.find("shape");
  return it == t.end() || it->is_null() || (it->is_array() && it->empty());
}

Json TensorList(const OJson& tensors, std::string_view source, Status* bad) {
  Json out = Json::array();
  if (!tensors.is_object()) {
    *bad = Status::InvalidInput(std::string(source) + ": inputs/outputs must be objects");
    return out;
  }
  for (auto it = tensors.begin(); it != tensors.end(); ++it) {
    const OJson& t = it.value();
    std::string dtype = KernelIndexDtype(t.value("dtype", ""));
    if (IsScalar(t)) {
      out.push_back({{"name", it.key()}, {"scalar", {{"dtype", dtype}}}});
    } else {
      Json shape = Json::array();
      for (const auto& a : t["shape"]) {
        if (!a.is_string()) {
          *bad = Status::InvalidInput(std::string(source) + ": shape of " + it.key() + " must name axes");
          return out;
        }
        shape.push_back(a.get<std::string>());
      }
      out.push_back({{"name", it.key()}, {"tensor", {{"dtype", dtype}, {"shape", shape}}}});
    }
  }
  return out;
}

Result<Digest> PutBlob(Batch& b, std::string_view bytes, std::string_view media) {
  KI_ASSIGN_OR_RETURN(auto r, b.PutBlob(bytes, media));
  return r.digest;
}

}  // namespace

std::string KernelIndexDtype(std::string_view d) {
  static const std::pair<std::string_view, std::string_view> kMap[] = {
      {"bfloat16", "bf16"}, {"float16", "fp16"}, {"float32", "fp32"}, {"float64", "fp64"},
      {"float8_e4m3fn", "fp8_e4m3"}, {"float8_e5m2", "fp8_e5m2"}};
  for (const auto& [a, b] : kMap)
    if (d == a) return std::string(b);
  return std::string(d);
}

Result<Json> OperationDocument(std::string_view text, std::string_view source) {
  KI_ASSIGN_OR_RETURN(OJson def, ParseOrdered(text, source));
  KI_RETURN_IF_ERROR(CheckDefinition(def, source));
  const std::string name = def["name"];
  Json axes = Json::object();
  if (def.contains("axes")) {
    for (auto it = def["axes"].begin(); it != def["axes"].end(); ++it) {
      const OJson& a = it.value();
      bool is_const = a.value("type", "") == "const";
      Json ax = {{"role", is_const ? "constant" : "variable"}, {"type", "integer"}};
      if (is_const) {
        if (!a.contains("value") || !a["value"].is_number_integer())
          return Status::InvalidInput(std::string(source) + ": constant axis " + it.key() + " needs an integer value");
        ax["value"] = a["value"].get<int64_t>();
      }
      axes[it.key()] = ax;
    }
  }
  Status bad;
  Json spec = {{"axes", axes},
               {"family", Family(def.value("op_type", name))},
               {"inputs", TensorList(def.value("inputs", OJson::object()), source, &bad)},
               {"outputs", TensorList(def.value("outputs", OJson::object()), source, &bad)},
               {"reference", {{"language", "python"}}},
               {"semantics", {{"mutation", "none"}, {"determinism", "unspecified"}}}};
  KI_RETURN_IF_ERROR(bad);
  Json meta = {{"name", Slug(name)}, {"title", name}};
  if (def.contains("description") && def["description"].is_string()) {
    std::string d = def["description"];
    if (d.size() > 2000) d.resize(2000);
    meta["description"] = d;
  }
  return Json{{"apiVersion", kApiVersion}, {"kind", "OperationSpec"}, {"metadata", meta}, {"spec", spec}};
}

Result<Json> WorkloadDocument(std::string_view definition_json, std::string_view line_json, const Digest& operation,
                              std::string_view source) {
  KI_ASSIGN_OR_RETURN(OJson def, ParseOrdered(definition_json, source));
  KI_RETURN_IF_ERROR(CheckDefinition(def, source));
  KI_ASSIGN_OR_RETURN(Json line, ParseDocument(line_json, DocFormat::kJson, source));
  KI_RETURN_IF_ERROR(CheckObject(line, std::string(source) + ": a workload line"));
  const Json& w = line.contains("workload") ? line["workload"] : line;
  KI_RETURN_IF_ERROR(CheckWorkload(w, source));
  if (!w.contains("axes") || !w["axes"].is_object())
    return Status::InvalidInput(std::string(source) + ": a workload needs \"axes\"");
  const std::string name = def.value("name", "");
  std::map<std::string, int64_t> values;
  for (auto it = def["axes"].begin(); it != def["axes"].end(); ++it)
    if (it.value().value("type", "") == "const") values[it.key()] = it.value().value("value", int64_t{0});
  Json axes = Json::object();
  for (const auto& [k, v] : w["axes"].items()) {
    if (!v.is_number_integer()) return Status::InvalidInput(std::string(source) + ": axis " + k + " is not an integer");
    axes[k] = v.get<int64_t>();
    values[k] = v.get<int64_t>();
  }
  const Json inputs = w.value("inputs", Json::object());
  Json tensors = Json::object(), scalars = Json::object();
  for (auto it = def["inputs"].begin(); it != def["inputs"].end(); ++it) {
    const OJson& t = it.value();
    const std::string dtype = KernelIndexDtype(t.value("dtype", ""));
    const Json in = inputs.value(it.key(), Json::object());
    if (IsScalar(t)) {
      if (in.contains("value")) scalars[it.key()] = {{"dtype", dtype}, {"value", in["value"]}};
      continue;
    }
    Json shape = Json::array();
    for (const auto& a : t["shape"]) {
      auto v = values.find(a.get<std::string>());
      if (v == values.end())
        return Status::InvalidInput(std::string(source) + ": workload gives no value for axis " + a.get<std::string>());
      shape.push_back(v->second);
    }
    Json entry = {{"dtype", dtype}, {"shape", shape}};
    if (in.contains("type") && in["type"].is_string()) entry["data"] = {{"generator", in["type"]}};
    tensors[it.key()] = entry;
  }
  Json spec = {{"axes", axes},
               {"tensors", tensors},
               {"correctness", {{"comparator", "sol_execbench_eval"}}},
               {"operationSpecDigest", operation.str()}};
  if (!scalars.empty()) spec["scalars"] = scalars;
  // The title lists the axes in the workload's own order.
  std::string title = name + " ·";
  {
    KI_ASSIGN_OR_RETURN(OJson ow, ParseOrdered(line_json, source));
    const OJson& oax = ow.contains("workload") ? ow["workload"]["axes"] : ow["axes"];
    bool first = true;
    for (auto it = oax.begin(); it != oax.end(); ++it) {
      title += std::string(first ? " " : ", ") + it.key() + "=" + it.value().dump();
      first = false;
    }
  }
  std::string uuid = w.value("uuid", "");
  Json meta = {{"name", Slug(name) + (uuid.empty() ? "" : "-" + uuid.substr(0, 8))}, {"title", title}};
  return Json{{"apiVersion", kApiVersion}, {"kind", "WorkloadCase"}, {"metadata", meta}, {"spec", spec}};
}

Result<std::optional<std::string>> OperationFactsRow(Store& store, const Digest& operation) {
  return store.Get(kOperationsTable, operation.raw());
}

Status PutOperationFactsRow(Batch& batch, const Digest& operation, std::string_view row) {
  Json j = Json::parse(row, nullptr, false);
  if (!j.is_object() || !j.contains("definitionBlob") || !j["definitionBlob"].is_string() ||
      !Digest::IsValid(j["definitionBlob"].get<std::string>()) ||
      (j.contains("referenceBlob") && (!j["referenceBlob"].is_string() ||
                                       !Digest::IsValid(j["referenceBlob"].get<std::string>())))) {
    return Status::InvalidInput("the facts of operation " + operation.str() + " are not a fib.operations row");
  }
  return batch.Put(kOperationsTable, operation.raw(), row);
}

Result<std::optional<OperationFacts>> LookupOperation(Store& store, const Digest& operation) {
  KI_ASSIGN_OR_RETURN(auto v, store.Get(kOperationsTable, operation.raw()));
  if (!v) return std::optional<OperationFacts>();
  Json j = Json::parse(*v, nullptr, false);
  if (j.is_discarded()) return Status::Corruption("malformed fib.operations entry of " + operation.str());
  OperationFacts f;
  f.definition = j.value("definition", "");
  KI_ASSIGN_OR_RETURN(f.definition_blob, Digest::Parse(j.value("definitionBlob", "")));
  if (j.contains("referenceBlob")) {
    KI_ASSIGN_OR_RETURN(Digest r, Digest::Parse(j.value("referenceBlob", "")));
    f.reference_blob = r;
  }
  return std::optional<OperationFacts>(std::move(f));
}

Result<std::optional<SolutionFacts>> LookupSolution(Store& store, const Digest& source) {
  KI_ASSIGN_OR_RETURN(auto v, store.Get(kSolutionsTable, source.raw()));
  if (!v) return std::optional<SolutionFacts>();
  Json j = Json::parse(*v, nullptr, false);
  if (!j.is_object()) return Status::Corruption("malformed fib.solutions entry of " + source.str());
  SolutionFacts f;
  f.solution = StringOr(j, "solution");
  f.definition = StringOr(j, "definition");
  f.language = StringOr(j, "language");
  f.destination_passing = j.value("destinationPassing", true);
  KI_ASSIGN_OR_RETURN(f.implementation, Digest::Parse(StringOr(j, "implementation")));
  return std::optional<SolutionFacts>(std::move(f));
}

Result<std::optional<WorkloadFacts>> LookupWorkload(Store& store, const Digest& workload) {
  KI_ASSIGN_OR_RETURN(auto v, store.Get(kWorkloadsTable, workload.raw()));
  if (!v) return std::optional<WorkloadFacts>();
  Json j = Json::parse(*v, nullptr, false);
  if (j.is_discarded()) return Status::Corruption("malformed fib.workloads entry of " + workload.str());
  WorkloadFacts f;
  f.uuid = j.value("uuid", "");
  f.definition = j.value("definition", "");
  KI_ASSIGN_OR_RETURN(f.workload_blob, Digest::Parse(j.value("workloadBlob", "")));
  for (const auto& m : j.value("missing", Json::array()))
    f.missing.push_back({m.value("input", ""), m.value("path", ""), m.value("tensorKey", "")});
  return std::optional<WorkloadFacts>(std::move(f));
}

namespace {

// The import proper; `at` follows the file (and line) being read, so that a
// JSON access the checks above missed still names its place.
Result<ImportReport> ImportDatasetAt(Store& store, const std::string& root, std::string* at) {
  // The dataset's files are read through the store's Env (the directory
  // walk below is std::filesystem's: Env has no recursive listing).
  Env* env = &EnvOf(store);
  if (!env->IsDirectory(root)) return Status::NotFound("no flashinfer-bench dataset at " + root);
  ImportReport rep;
  rep.root = root;
  // Every file first (sorted, so the import is deterministic).
  std::vector<fs::path> defs, lines_files, solutions;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    if (!it->is_regular_file()) continue;
    const fs::path rel = fs::relative(it->path(), root);
    const std::string top = rel.begin()->string();
    const std::string ext = it->path().extension().string();
    if (top == "definitions" && ext == ".json") defs.push_back(it->path());
    else if ((top == "workloads" || top == "traces") && ext == ".jsonl") lines_files.push_back(it->path());
    else if (top == "solutions" && ext == ".json") solutions.push_back(it->path());
  }
  if (ec) return Status::IOError("reading " + root + ": " + ec.message());
  std::sort(defs.begin(), defs.end());
  std::sort(lines_files.begin(), lines_files.end());
  std::sort(solutions.begin(), solutions.end());
  if (defs.empty()) return Status::InvalidInput(root + ": no definitions/**/*.json (is it a flashinfer-bench dataset?)");

  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  struct Def {
    std::string text;
    Digest op;
    Json spec;  // the OperationSpec's
  };
  // One ImplementationRevision of a solution (or a reference), its source
  // object and the tables that find it again.
  std::map<std::string, Digest> solution_names;  // imported now: name -> implementation
  auto put_solution = [&](const ParsedSolution& sol, const Def& d, const std::string& where) -> Status {
    KI_ASSIGN_OR_RETURN(StoredSolution blob, SourceBlob(sol));
    KI_ASSIGN_OR_RETURN(auto pb, batch->PutBlob(blob.bytes, blob.media_type));
    Json doc = ImplementationDocument(sol, d.op, d.spec, pb.digest, blob.bytes.size());
    KI_ASSIGN_OR_RETURN(Manifest m, ManifestFromJson(doc, where));
    KI_ASSIGN_OR_RETURN(auto pm, batch->PutManifest(m, doc.dump(), kDocumentMediaTypeJson));
    (pm.existed ? rep.implementations_existing : rep.implementations_new)++;
    Json facts = {{"solution", sol.name}, {"definition", sol.definition}, {"language", sol.language},
                  {"destinationPassing", sol.destination_passing}, {"implementation", m.digest.str()},
                  {"source", where}};
    KI_RETURN_IF_ERROR(batch->Put(kSolutionsTable, pb.digest.raw(), facts.dump()));
    KI_RETURN_IF_ERROR(batch->Put(kSolutionNamesTable, sol.name, m.digest.str()));
    solution_names[sol.name] = m.digest;
    return Status::OK();
  };
  std::map<std::string, Def> by_name;
  for (const auto& p : defs) {
    const std::string src = fs::relative(p, root).string();
    *at = src;
    KI_ASSIGN_OR_RETURN(std::string text, env->ReadFile(p.string(), 1 << 20));
    KI_ASSIGN_OR_RETURN(Json doc, OperationDocument(text, src));
    KI_ASSIGN_OR_RETURN(Manifest m, ManifestFromJson(doc, src));
    const std::string docbytes = doc.dump();
    KI_ASSIGN_OR_RETURN(auto put, batch->PutManifest(m, docbytes, kDocumentMediaTypeJson));
    (put.existed ? rep.operations_existing : rep.operations_new)++;
    Json facts = {{"definition", doc["metadata"]["title"]}, {"source", src}};
    KI_ASSIGN_OR_RETURN(Digest dblob, PutBlob(*batch, text, "application/json"));
    facts["definitionBlob"] = dblob.str();
    Json def = ParseDocument(text, DocFormat::kJson, src).value();
    if (def.contains("reference") && def["reference"].is_string()) {
      KI_ASSIGN_OR_RETURN(Digest rblob, PutBlob(*batch, def["reference"].get<std::string>(), "text/x-python"));
      facts["referenceBlob"] = rblob.str();
    }
    KI_RETURN_IF_ERROR(batch->Put(kOperationsTable, m.digest.raw(), facts.dump()));
    const std::string name = def["name"];
    by_name[name] = {text, m.digest, doc["spec"]};
    if (def.contains("reference") && def["reference"].is_string())
      KI_RETURN_IF_ERROR(put_solution(ReferenceSolution(name, def["reference"].get<std::string>()), by_name[name],
                                      src + ": reference"));
    rep.operations.emplace_back(name, m.digest);
    rep.definitions++;
  }

  for (const auto& p : solutions) {
    const std::string src = fs::relative(p, root).string();
    *at = src;
    KI_ASSIGN_OR_RETURN(std::string text, env->ReadFile(p.string(), StoreOptions{}.max_object_size));
    KI_ASSIGN_OR_RETURN(ParsedSolution sol, ParseSolution(text, src));
    rep.solutions++;
    auto d = by_name.find(sol.definition);
    if (d == by_name.end()) {
      rep.skipped_solutions++;
      continue;
    }
    if (solution_names.count(sol.name))
      return Status::InvalidInput(src + ": a second solution named " + sol.name + " in the tree");
    KI_RETURN_IF_ERROR(put_solution(sol, d->second, src));
  }

  std::set<Digest> seen_workloads;
  for (const auto& p : lines_files) {
    const std::string src = fs::relative(p, root).string();
    const bool trace = src.rfind("traces", 0) == 0;
    KI_ASSIGN_OR_RETURN(std::string text, env->ReadFile(p.string(), StoreOptions{}.max_object_size));
    size_t pos = 0;
    int lineno = 0;
    while (pos < text.size()) {
      size_t nl = text.find('\n', pos);
      if (nl == std::string::npos) nl = text.size();
      std::string_view line(text.data() + pos, nl - pos);
      pos = nl + 1;
      ++lineno;
      if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
      const std::string where = src + ":" + std::to_string(lineno);
      *at = where;
      KI_ASSIGN_OR_RETURN(Json j, ParseDocument(line, DocFormat::kJson, where));
      KI_RETURN_IF_ERROR(CheckObject(j, where + ": a workload line"));
      if (trace) rep.traces++;
      else rep.workloads++;
      KI_ASSIGN_OR_RETURN(std::string defname, GetString(j, "definition", where));
      auto d = by_name.find(defname);
      if (d == by_name.end()) {
        rep.skipped_lines++;
        continue;
      }
      KI_ASSIGN_OR_RETURN(Json doc, WorkloadDocument(d->second.text, line, d->second.op, where));
      KI_ASSIGN_OR_RETURN(Manifest m, ManifestFromJson(doc, where));
      // A trace line's solution, when ki has it (imported now or before):
      // what `ki rerun` of the trace's run needs.
      if (trace && j.contains("solution") && j["solution"].is_string()) {
        const std::string sname = j["solution"];
        std::optional<std::string> impl;
        if (auto it = solution_names.find(sname); it != solution_names.end()) impl = it->second.str();
        else {
          KI_ASSIGN_OR_RETURN(impl, store.Get(kSolutionNamesTable, sname));
        }
        if (impl) {
          rep.traces_linked++;
          std::string key(m.digest.raw());
          key += sname;
          KI_RETURN_IF_ERROR(batch->Put(kTracesTable, key, *impl));
        }
      }
      if (!seen_workloads.insert(m.digest).second) continue;
      KI_ASSIGN_OR_RETURN(auto put, batch->PutManifest(m, doc.dump(), kDocumentMediaTypeJson));
      (put.existed ? rep.workloads_existing : rep.workloads_new)++;
      const Json& w = j.contains("workload") ? j["workload"] : j;
      KI_ASSIGN_OR_RETURN(Digest wblob, PutBlob(*batch, w.dump(), "application/json"));
      Json facts = {{"uuid", w.value("uuid", "")}, {"definition", defname}, {"workloadBlob", wblob.str()},
                    {"source", src}};
      Json missing = Json::array();
      const Json inputs = w.value("inputs", Json::object());  // named: items() of a temporary dangles
      for (const auto& [input, spec] : inputs.items()) {
        if (spec.value("type", "") != "safetensors") continue;
        std::string path = spec.value("path", "");
        // Paths are relative to the dataset root ("./blob/workloads/...").
        if (!path.empty() && env->Exists((fs::path(root) / path).lexically_normal().string())) continue;
        missing.push_back({{"input", input}, {"path", path}, {"tensorKey", spec.value("tensor_key", "")}});
        rep.missing_inputs++;
      }
      facts["missing"] = missing;
      KI_RETURN_IF_ERROR(batch->Put(kWorkloadsTable, m.digest.raw(), facts.dump()));
    }
  }
  KI_RETURN_IF_ERROR(batch->Commit());
  return rep;
}

}  // namespace

Result<ImportReport> ImportDataset(Store& store, const std::string& root) {
  std::string at = root;
  try {
    return ImportDatasetAt(store, root, &at);
  } catch (const nlohmann::json::exception& e) {
    // The batch was dropped unwinding: nothing is stored.
    return Status::InvalidInput(at + ": " + e.what());
  }
}

}  // namespace ki::fib
