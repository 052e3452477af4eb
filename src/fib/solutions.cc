// flashinfer-bench Solution JSON -> ImplementationRevision, and a
// definition's reference as one (flashinfer.h).
#include <filesystem>
#include <set>

#include "fib/solutions.h"
#include "json/fields.h"

namespace ki::fib {
namespace {

namespace fs = std::filesystem;

// KernelIndex's name for a solution: lower case, `_` as `-`
// ("flashinfer_wrapper_78fd04" -> "flashinfer-wrapper-78fd04").
std::string NameSlug(std::string_view name) {
  std::string s;
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') s.push_back(char(c - 'A' + 'a'));
    else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-') s.push_back(c);
    else s.push_back('-');
  }
  while (!s.empty() && !((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= '0' && s[0] <= '9'))) s.erase(0, 1);
  if (s.size() > 200) s.resize(200);
  return s.empty() ? "solution" : s;
}

// A label value or identifier: lower case letters, digits and `_`.
std::string Identifier(std::string_view text) {
  std::string s;
  for (char c : text) {
    if (c >= 'A' && c <= 'Z') s.push_back(char(c - 'A' + 'a'));
    else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) s.push_back(c);
    else s.push_back('_');
  }
  return s;
}

// The source path rules of flashinfer-bench's Solution: relative, no `..`,
// (checked here) and unique (by the caller). Returns the normalised path.
Result<std::string> CheckSourcePath(const std::string& path, const std::string& where) {
  if (path.empty()) return Status::InvalidInput(where + ": a source has an empty `path`");
  if (path[0] == '/' || path.find('\\') != std::string::npos)
    return Status::InvalidInput(where + ": source path `" + path + "` is not relative");
  const fs::path p = fs::path(path).lexically_normal();
  for (const auto& part : p)
    if (part == "..") return Status::InvalidInput(where + ": source path `" + path + "` leaves the solution (`..`)");
  const std::string n = p.generic_string();
  if (n.empty() || n == "." || n.back() == '/')
    return Status::InvalidInput(where + ": source path `" + path + "` names no file");
  return n;
}

Json DtypesOf(const Json& operation_spec) {
  Json dtypes = Json::array();
  std::set<std::string> seen;
  for (const char* side : {"inputs", "outputs"}) {
    for (const auto& t : operation_spec.value(side, Json::array())) {
      for (const char* k : {"tensor", "scalar"}) {
        if (!t.contains(k) || !t[k].contains("dtype") || !t[k]["dtype"].is_string()) continue;
        std::string d = t[k]["dtype"];
        if (seen.insert(d).second) dtypes.push_back(d);
      }
    }
  }
  return dtypes;
}

}  // namespace

Result<ParsedSolution> ParseSolution(std::string_view text, const std::string& where) {
  KI_ASSIGN_OR_RETURN(Json j, ParseDocument(text, DocFormat::kJson, where));
  KI_RETURN_IF_ERROR(CheckObject(j, where));
  ParsedSolution s;
  KI_ASSIGN_OR_RETURN(s.name, GetString(j, "name", where));
  KI_ASSIGN_OR_RETURN(s.definition, GetString(j, "definition", where));
  KI_ASSIGN_OR_RETURN(s.author, GetString(j, "author", where));
  KI_ASSIGN_OR_RETURN(s.description, GetString(j, "description", where));
  if (s.name.empty()) return Status::InvalidInput(where + ": a solution needs a `name`");
  if (s.definition.empty()) return Status::InvalidInput(where + ": solution " + s.name + " names no `definition`");
  if (!j.contains("spec")) return Status::InvalidInput(where + ": solution " + s.name + " has no `spec`");
  const Json& spec = j["spec"];
  const std::string at = where + ": spec";
  KI_RETURN_IF_ERROR(CheckObject(spec, at));
  KI_ASSIGN_OR_RETURN(s.language, GetString(spec, "language", at));
  if (s.language.empty()) return Status::InvalidInput(at + " names no `language`");
  s.language = Identifier(s.language);
  KI_ASSIGN_OR_RETURN(std::string entry, GetString(spec, "entry_point", at));
  const size_t sep = entry.find("::");
  if (sep == std::string::npos || entry.find("::", sep + 2) != std::string::npos || sep == 0 ||
      sep + 2 == entry.size())
    return Status::InvalidInput(at + ": `entry_point` is `" + entry + "`, not `<file>::<function>`");
  s.function = entry.substr(sep + 2);
  KI_ASSIGN_OR_RETURN(s.entry_file, CheckSourcePath(entry.substr(0, sep), at + ".entry_point"));
  if (spec.contains("destination_passing_style")) {
    if (!spec["destination_passing_style"].is_boolean())
      return WrongType(at, "destination_passing_style", spec["destination_passing_style"], "a boolean");
    s.destination_passing = spec["destination_passing_style"].get<bool>();
  }
  if (spec.contains("binding") && !spec["binding"].is_null()) {
    KI_ASSIGN_OR_RETURN(s.binding, GetString(spec, "binding", at));
  }
  for (const char* list : {"target_hardware", "dependencies"}) {
    if (!spec.contains(list)) continue;
    if (!spec[list].is_array()) return WrongType(at, list, spec[list], "an array of strings");
    for (const auto& v : spec[list]) {
      if (!v.is_string()) return WrongType(at, std::string(list) + "[]", v, "a string");
      (std::string_view(list) == "target_hardware" ? s.target_hardware : s.dependencies).push_back(v.get<std::string>());
    }
  }
  if (!j.contains("sources") || !j["sources"].is_array() || j["sources"].empty())
    return Status::InvalidInput(where + ": solution " + s.name + " has no `sources`");
  for (size_t i = 0; i < j["sources"].size(); ++i) {
    const Json& src = j["sources"][i];
    const std::string sat = where + ": sources[" + std::to_string(i) + "]";
    KI_RETURN_IF_ERROR(CheckObject(src, sat));
    KI_ASSIGN_OR_RETURN(std::string path, GetString(src, "path", sat));
    if (!src.contains("content") || !src["content"].is_string())
      return Status::InvalidInput(sat + ": `content` must be a string");
    KI_ASSIGN_OR_RETURN(std::string clean, CheckSourcePath(path, sat));
    if (!s.files.emplace(clean, src["content"].get<std::string>()).second)
      return Status::InvalidInput(sat + ": source path `" + path + "` appears twice in solution " + s.name);
  }
  if (!s.files.count(s.entry_file))
    return Status::InvalidInput(where + ": the entry point's file `" + s.entry_file + "` is not among the sources of " +
                                s.name);
  return s;
}

std::string SolutionInterface(const ParsedSolution& s) {
  if (s.language == "python" || s.language == "triton")
    return std::string(s.destination_passing ? "flashinfer_bench_destination_passing" : "flashinfer_bench_returning");
  // C++/CUDA solutions are built for a binding (flashinfer-bench's default:
  // TVM-FFI).
  return "flashinfer_bench_binding_" + Identifier(s.binding.empty() ? "tvm-ffi" : s.binding);
}

Result<StoredSolution> SourceBlob(const ParsedSolution& s) {
  StoredSolution out;
  // One file at the top: stored as itself, so that its digest is the file's
  // (as KernelIndex's records name a solution's main.py). Else ki's source
  // bundle (run.h, kBundleFormat).
  if (s.files.size() == 1 && s.entry_file.find('/') == std::string::npos) {
    out.bytes = s.files.begin()->second;
    out.media_type = s.language == "cuda" ? "text/x-cuda" : s.language == "cpp" ? "text/x-c++src" : "text/x-python";
    return out;
  }
  Json files = Json::object();
  for (const auto& [p, b] : s.files) files[p] = b;
  Json j = {{"format", "ki.source-bundle/v1"}, {"main", s.entry_file}, {"units", {s.entry_file}}, {"files", files}};
  auto c = Canonicalize(j);
  if (!c.ok()) return Status::InvalidInput("solution " + s.name + ": sources must be UTF-8 text: " + c.status().message());
  out.bytes = std::move(*c);
  out.media_type = "application/vnd.ki.source-bundle+json";
  return out;
}

Json ImplementationDocument(const ParsedSolution& s, const Digest& operation, const Json& operation_spec,
                            const Digest& source, uint64_t source_bytes) {
  Json meta = {{"name", NameSlug(s.name)}, {"title", s.name.substr(0, 200)}};
  if (!s.author.empty()) meta["authors"] = Json::array({{{"name", s.author.substr(0, 200)}}});
  if (!s.description.empty()) meta["description"] = s.description.substr(0, 2000);
  Json products = Json::array();
  for (const auto& t : s.target_hardware) products.push_back(t.substr(0, 100));
  Json support = {{"hardwareArchitectures", Json::array({"unknown"})}, {"dtypes", DtypesOf(operation_spec)}};
  if (!products.empty()) support["productsTested"] = products;
  Json spec = {{"projectRevision", Json::object()},
               {"operation", {{"specDigest", operation.str()}}},
               {"callable", {{"language", s.language}, {"path", s.entry_file}, {"symbol", s.function},
                             {"interface", SolutionInterface(s)}}},
               {"support", support},
               {"source", {{"contentDigest", source.str()}, {"fileName", s.entry_file}, {"sizeBytes", source_bytes}}},
               {"licensing", Json::object()}};
  return Json{{"apiVersion", kApiVersion}, {"kind", "ImplementationRevision"}, {"metadata", meta}, {"spec", spec}};
}

ParsedSolution ReferenceSolution(std::string_view definition_name, std::string_view reference_code) {
  ParsedSolution s;
  s.name = std::string(definition_name) + ".reference";
  s.definition = definition_name;
  s.author = "flashinfer-bench definition";
  s.description = "The reference code of definition " + std::string(definition_name) + ", run as an implementation";
  s.language = "python";
  s.entry_file = "reference.py";
  s.function = "run";
  s.destination_passing = false;  // a reference returns its outputs
  s.files[s.entry_file] = std::string(reference_code);
  return s;
}

}  // namespace ki::fib
