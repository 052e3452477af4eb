// Implementation sources: collecting a kernel's files, the stored bundle
// form, and the ImplementationRevision that names them.
#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <set>
#include <sstream>

#include "ki/manifest.h"
#include "ki/run.h"
#include "ki/store_env.h"

namespace ki::run {
namespace {

namespace fs = std::filesystem;

// A normalised relative path inside a bundle; empty when it would escape.
std::string CleanRelative(const fs::path& p) {
  fs::path n = p.lexically_normal();
  if (n.empty() || n.is_absolute()) return "";
  for (const auto& part : n)
    if (part == "..") return "";
  return n.generic_string();
}

// The targets of #include "..." lines (angle-bracket includes are the
// compiler's business). Conditional compilation is ignored: a header named
// under an #if is collected too, which is harmless.
std::vector<std::string> QuotedIncludes(std::string_view text) {
  std::vector<std::string> out;
  std::istringstream in{std::string(text)};
  for (std::string line; std::getline(in, line);) {
    size_t i = line.find_first_not_of(" \t");
    if (i == std::string::npos || line[i] != '#') continue;
    i = line.find_first_not_of(" \t", i + 1);
    if (i == std::string::npos || line.compare(i, 7, "include") != 0) continue;
    i = line.find_first_not_of(" \t", i + 7);
    if (i == std::string::npos || line[i] != '"') continue;
    size_t j = line.find('"', i + 1);
    if (j == std::string::npos) continue;
    out.push_back(line.substr(i + 1, j - i - 1));
  }
  return out;
}

bool IsRegularFile(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

std::string_view LanguageName(Language l) {
  switch (l) {
    case Language::kCuda: return "cuda";
    case Language::kCpp: return "cpp";
    case Language::kPython: return "python";
    case Language::kTriton: return "triton";
  }
  return "cpp";
}

std::optional<Language> LanguageNamed(std::string_view name) {
  for (Language l : {Language::kCuda, Language::kCpp, Language::kPython, Language::kTriton})
    if (name == LanguageName(l)) return l;
  return std::nullopt;
}

std::optional<Language> LanguageOfFile(std::string_view filename) {
  std::string ext = fs::path(std::string(filename)).extension().string();
  if (ext == ".cu") return Language::kCuda;
  if (ext == ".cc" || ext == ".cpp" || ext == ".cxx" || ext == ".c") return Language::kCpp;
  return std::nullopt;
}

std::vector<std::string> DefaultCudaArchs() {
  std::string v = "90a;100a";
  if (const char* e = std::getenv("KI_CUDA_ARCHS"); e && *e) v = e;
  std::vector<std::string> out;
  std::stringstream ss(v);
  for (std::string a; std::getline(ss, a, ';');)
    if (!a.empty()) out.push_back(a);
  return out;
}

namespace {

// CollectSources, reading through `env` (an added implementation's
// sources go through its store's).
Result<SourceBundle> CollectSourcesWith(Env* env, const std::string& main, const std::vector<std::string>& extra_units,
                                        const std::vector<std::string>& include_dirs,
                                        std::vector<std::string>* unresolved) {
  SourceBundle b;
  // Where each bundle path came from on disk, to find its neighbours.
  std::map<std::string, fs::path> origin;
  std::vector<std::string> queue;
  std::set<std::string> missing;
  auto add = [&](const std::string& path, const fs::path& disk) -> Status {
    if (auto it = origin.find(path); it != origin.end()) {
      std::error_code ec;
      if (!fs::equivalent(it->second, disk, ec))
        return Status::InvalidInput("two files would be stored as " + path + ": " + it->second.string() + " and " +
                                    disk.string());
      return Status::OK();
    }
    KI_ASSIGN_OR_RETURN(std::string bytes, env->ReadFile(disk.string(), 64 << 20));
    b.files[path] = std::move(bytes);
    origin[path] = disk;
    queue.push_back(path);
    return Status::OK();
  };
  std::vector<std::string> units = {main};
  units.insert(units.end(), extra_units.begin(), extra_units.end());
  for (const auto& u : units) {
    if (!IsRegularFile(u)) return Status::NotFound("no source file " + u);
    if (!LanguageOfFile(u)) return Status::InvalidInput(u + ": not a .cu, .cc, .cpp, .cxx or .c file");
    std::string path = fs::path(u).filename().string();
    KI_RETURN_IF_ERROR(add(path, fs::path(u)));
    b.units.push_back(path);
  }
  b.main = b.units.front();
  while (!queue.empty()) {
    std::string path = queue.back();
    queue.pop_back();
    const fs::path disk = origin[path];
    for (const std::string& inc : QuotedIncludes(b.files[path])) {
      // As the compiler looks: next to the including file, then the -I dirs.
      fs::path beside = disk.parent_path() / inc;
      if (IsRegularFile(beside)) {
        std::string rel = CleanRelative(fs::path(path).parent_path() / inc);
        if (rel.empty()) return Status::InvalidInput(path + ": #include \"" + inc + "\" leaves the source tree");
        KI_RETURN_IF_ERROR(add(rel, beside));
        continue;
      }
      bool found = false;
      for (const auto& dir : include_dirs) {
        fs::path cand = fs::path(dir) / inc;
        if (!IsRegularFile(cand)) continue;
        std::string rel = CleanRelative(inc);
        if (rel.empty()) return Status::InvalidInput(path + ": #include \"" + inc + "\" leaves the include root");
        KI_RETURN_IF_ERROR(add(rel, cand));
        found = true;
        break;
      }
      if (!found) missing.insert(inc);
    }
  }
  if (unresolved) unresolved->assign(missing.begin(), missing.end());
  return b;
}

}  // namespace

// The public call has no store: the process's Env reads the files.
Result<SourceBundle> CollectSources(const std::string& main, const std::vector<std::string>& extra_units,
                                    const std::vector<std::string>& include_dirs,
                                    std::vector<std::string>* unresolved) {
  return CollectSourcesWith(Env::Default(), main, extra_units, include_dirs, unresolved);
}

Result<std::string> EncodeBundle(const SourceBundle& b, std::string* media_type) {
  if (b.files.size() == 1 && b.units.size() == 1) {
    if (media_type) *media_type = LanguageOfFile(b.main) == Language::kCuda ? "text/x-cuda" : "text/x-c++src";
    return b.files.begin()->second;
  }
  Json files = Json::object();
  for (const auto& [p, bytes] : b.files) files[p] = bytes;
  Json j = {{"format", kBundleFormat}, {"main", b.main}, {"units", b.units}, {"files", files}};
  auto c = Canonicalize(j);
  if (!c.ok()) return Status::InvalidInput("sources must be UTF-8 text: " + c.status().message());
  if (media_type) *media_type = std::string(kBundleMediaType);
  return std::move(c).value();
}

Result<SourceBundle> DecodeBundle(std::string_view bytes, std::string_view file_name) {
  SourceBundle b;
  Json j = Json::parse(bytes, nullptr, false);
  if (j.is_object() && j.value("format", "") == kBundleFormat) {
    b.main = j.value("main", "");
    for (const auto& u : j.value("units", Json::array())) b.units.push_back(u.get<std::string>());
    for (const auto& [p, v] : j["files"].items()) {
      if (CleanRelative(p) != p) return Status::Corruption("source bundle names an unsafe path: " + p);
      b.files[p] = v.get<std::string>();
    }
    if (b.units.empty() || !b.files.count(b.main)) return Status::Corruption("source bundle without its main file");
    return b;
  }
  std::string name = fs::path(std::string(file_name)).filename().string();
  if (name.empty()) name = "kernel.cu";
  b.main = name;
  b.units = {name};
  b.files[name] = std::string(bytes);
  return b;
}

Result<AddedImplementation> AddImplementation(Store& store, const ImplementationOptions& o) {
  auto lang = LanguageOfFile(o.main);
  if (!lang) return Status::InvalidInput(o.main + ": not a .cu, .cc, .cpp, .cxx or .c file");
  KI_ASSIGN_OR_RETURN(Digest op, store.Resolve(o.operation));
  KI_ASSIGN_OR_RETURN(auto opinfo, store.Stat(op));
  if (!opinfo || opinfo->kind != Kind::kOperationSpec)
    return Status::InvalidInput(o.operation + " is not an OperationSpec");
  KI_ASSIGN_OR_RETURN(Manifest opm, store.ReadManifest(op));

  AddedImplementation out;
  KI_ASSIGN_OR_RETURN(SourceBundle b,
                      CollectSourcesWith(&EnvOf(store), o.main, o.extra_units, o.include_dirs, &out.unresolved));
  std::string media;
  KI_ASSIGN_OR_RETURN(std::string blob, EncodeBundle(b, &media));

  // support.dtypes: every dtype the operation's inputs and outputs use.
  Json dtypes = Json::array();
  for (const char* side : {"inputs", "outputs"}) {
    for (const auto& t : opm.spec.value(side, Json::array())) {
      for (const char* k : {"tensor", "scalar"})
        if (t.contains(k) && (*t.find(k)).contains("dtype")) dtypes.push_back(t[k]["dtype"]);
    }
  }
  Json archs = Json::array();
  if (*lang == Language::kCuda) {
    for (const auto& a : o.archs.empty() ? DefaultCudaArchs() : o.archs) archs.push_back("sm_" + a);
  } else {
    std::string m = "x86_64";
#if defined(__aarch64__)
    m = "aarch64";
#endif
    archs.push_back(m);
  }
  const Digest source = Sha256Of(blob);
  Json callable = {{"language", LanguageName(*lang)}, {"path", b.main}, {"interface", "ki_kernel_abi_v1"}};
  if (!o.symbol.empty()) callable["symbol"] = o.symbol;
  Json spec = {{"projectRevision", Json::object()},
               {"operation", {{"specDigest", op.str()}}},
               {"callable", callable},
               {"support", {{"hardwareArchitectures", archs}, {"dtypes", dtypes}}},
               {"source", {{"contentDigest", source.str()}, {"fileName", b.main}, {"sizeBytes", blob.size()}}},
               {"licensing", Json::object()}};
  std::string name = o.name;
  if (name.empty()) {
    name = o.symbol.empty() ? fs::path(o.main).stem().string() : o.symbol;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) {
      if (c >= 'A' && c <= 'Z') return char(c - 'A' + 'a');
      return (std::isalnum(c) || c == '.' || c == '-') ? char(c) : '-';
    });
    if (name.empty() || !std::isalnum(static_cast<unsigned char>(name[0]))) name = "impl-" + name;
  }
  Json doc = {{"apiVersion", kApiVersion},
              {"kind", "ImplementationRevision"},
              {"metadata", {{"name", name}, {"title", b.main + (o.symbol.empty() ? "" : " (" + o.symbol + ")")}}},
              {"spec", spec}};
  KI_ASSIGN_OR_RETURN(Manifest m, ManifestFromJson(doc, o.main));
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  KI_ASSIGN_OR_RETURN(auto pb, batch->PutBlob(blob, media));
  KI_ASSIGN_OR_RETURN(auto pm, batch->PutManifest(m, doc.dump(), kDocumentMediaTypeJson));
  KI_RETURN_IF_ERROR(batch->Commit());
  out.digest = pm.digest;
  out.source = pb.digest;
  out.name = name;
  out.language = std::string(LanguageName(*lang));
  out.existed = pm.existed;
  return out;
}

}  // namespace ki::run
