#include "ki/ingest.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstring>
#include <memory>
#include <thread>

#include "ki/blob_stream.h"
#include "ki/store_env.h"

namespace ki {
namespace {

std::string Extension(const std::string& name) {
  auto slash = name.rfind('/');
  auto dot = name.rfind('.');
  if (dot == std::string::npos || (slash != std::string::npos && dot < slash)) return "";
  std::string ext = name.substr(dot + 1);
  std::transform(ext.begin(), ext.end(), ext.begin(), ::tolower);
  return ext;
}

bool IsYamlName(const std::string& name) {
  std::string ext = Extension(name);
  return ext == "yaml" || ext == "yml";
}

// RFC 6838 section 4.2 restricted-name-chars after the first character.
bool RestrictedNameChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$&-^_.+").find(c) != std::string_view::npos;
}

// RFC 9110 tchar.
bool TokenChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Reads a restricted-name (RFC 6838 4.2) at s[*i]; false when there is none.
bool RestrictedName(std::string_view s, size_t* i) {
  size_t start = *i;
  if (*i >= s.size() || !std::isalnum(static_cast<unsigned char>(s[*i]))) return false;
  while (*i < s.size() && RestrictedNameChar(s[*i])) ++*i;
  return *i - start <= 127;
}

size_t Token(std::string_view s, size_t i) {
  while (i < s.size() && TokenChar(s[i])) ++i;
  return i;
}

bool Ows(char c) { return c == ' ' || c == '\t'; }

// At most 100 bytes of `s` for a message, other than printable ASCII as '?'.
std::string Printable(std::string_view s) {
  std::string out(s.substr(0, 100));
  for (char& c : out)
    if (c < 0x20 || c >= 0x7f) c = '?';
  return out;
}

}  // namespace

bool IsValidMediaType(std::string_view s) {
  // Non-ASCII is refused even inside a quoted-string (RFC 9110 allows
  // obs-text there): it may not be UTF-8, which JSON, and so a push, cannot
  // carry.
  if (s.size() > 255) return false;
  size_t i = 0;
  if (!RestrictedName(s, &i) || i >= s.size() || s[i++] != '/' || !RestrictedName(s, &i)) return false;
  // *( OWS ";" OWS [ token "=" ( token / quoted-string ) ] )
  while (i < s.size()) {
    while (i < s.size() && Ows(s[i])) ++i;
    if (i >= s.size() || s[i++] != ';') return false;
    while (i < s.size() && Ows(s[i])) ++i;
    if (i >= s.size() || s[i] == ';') continue;  // an empty parameter
    size_t name_end = Token(s, i);
    if (name_end == i || name_end >= s.size() || s[name_end] != '=') return false;
    i = name_end + 1;
    if (i < s.size() && s[i] == '"') {
      for (++i;; ++i) {
        if (i >= s.size()) return false;  // unterminated
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c == '"') break;
        if (c == '\\') {
          if (++i >= s.size()) return false;
          c = static_cast<unsigned char>(s[i]);
          if (!(c == '\t' || (c >= 0x20 && c < 0x7f))) return false;
        } else if (!(c == '\t' || (c >= 0x20 && c < 0x7f))) {
          return false;
        }
      }
      ++i;
    } else {
      size_t value_end = Token(s, i);
      if (value_end == i) return false;
      i = value_end;
    }
  }
  return true;
}

Status CheckMediaType(std::string_view media_type, std::string_view where) {
  if (IsValidMediaType(media_type)) return Status::OK();
  return Status::InvalidInput(std::string(where) + ": media type '" + Printable(media_type) +
                              "' is not a type/subtype with optional `; name=value` parameters "
                              "(RFC 6838, RFC 9110; ASCII, at most 255 bytes)");
}

bool IsBlobInput(const AddInput& in) {
  if (in.type == InputType::kBlob) return true;
  std::string ext = Extension(in.source);
  return !ext.empty() && ext != "json" && ext != "yaml" && ext != "yml";
}

bool LooksLikeManifestInput(const AddInput& in) {
  if (IsBlobInput(in)) return false;
  std::string ext = Extension(in.source);
  if (!ext.empty()) return true;  // .json, .yaml, .yml
  // No extension (stdin, say): a document if it starts like one.
  size_t i = in.bytes.find_first_not_of(" \t\r\n");
  if (i == std::string::npos) return false;
  std::string_view head = std::string_view(in.bytes).substr(i, 16);
  return head[0] == '{' || head.substr(0, 3) == "---" || head.substr(0, 11) == "apiVersion:";
}

namespace {

// A streamed input of which the first bytes (`in.prefix`) were already read.
Result<PutResult> StoreWithPrefix(Store& store, Batch& batch, const AddInput& in, SequentialFile& rest,
                                  const std::string& media_type) {
  KI_ASSIGN_OR_RETURN(auto writer, OpenBlobWriter(store, in.source));
  KI_RETURN_IF_ERROR(writer->Append(in.prefix));
  std::string buf(1 << 20, '\0');
  for (;;) {
    KI_ASSIGN_OR_RETURN(size_t n, rest.Read(buf.data(), buf.size()));
    if (n == 0) break;
    KI_RETURN_IF_ERROR(writer->Append(std::string_view(buf.data(), n)));
  }
  return writer->Finish(batch, media_type);
}

// One manifest of an input with the document it is stored with.
struct ManifestWithDocument {
  Manifest manifest;
  std::string document;
  std::string_view document_type;
};

// Whether `bytes` reads as a document with apiVersion or kind (a manifest)
// or with run (a bundle): the user meant it as one, whatever is wrong with it.
bool LooksLikeManifest(std::string_view bytes, std::string_view source) {
  auto docs = ParseDocuments(bytes, DocFormat::kAuto, source);
  if (!docs.ok() || docs->empty()) return false;
  const Json& d = docs->front();
  return d.is_object() && (d.contains("apiVersion") || d.contains("kind") || d.contains("run"));
}

// The manifests an input holds, or the parse error, phrased for `ki add`.
Result<std::vector<ManifestWithDocument>> ParseInput(const AddInput& in) {
  auto parsed = ParseManifestInput(in.bytes, DocFormat::kAuto, in.source);
  if (!parsed.ok()) {
    Status s = parsed.status();
    // The --blob hint only for a file that is not meant as a manifest: a
    // document without apiVersion or kind (a config, a results file). A
    // manifest the schema refuses needs fixing, not storing as a blob.
    if ((Extension(in.source) == "json" || Extension(in.source) == "yaml" || Extension(in.source) == "yml") &&
        !LooksLikeManifest(in.bytes, in.source)) {
      return Status::InvalidInput(s.message() + " (use `ki add --blob` to store the file as a blob)");
    }
    return s;
  }
  std::vector<ManifestWithDocument> out;
  for (size_t i = 0; i < parsed->manifests.size(); ++i) {
    ManifestWithDocument m{std::move(parsed->manifests[i]), {}, {}};
    if (parsed->form == InputForm::kSingle) {
      // The original bytes, exactly as the user wrote them.
      m.document = in.bytes;
      size_t first = in.bytes.find_first_not_of(" \t\r\n");
      bool json = first != std::string::npos && in.bytes[first] == '{';
      m.document_type = json && !IsYamlName(in.source) ? kDocumentMediaTypeJson : kDocumentMediaTypeYaml;
    } else {
      m.document = parsed->documents[i].dump(2) + "\n";
      m.document_type = kDocumentMediaTypeJson;
    }
    out.push_back(std::move(m));
  }
  return out;
}

// An input made ready for the writer: parsed, hashed and compressed.
struct PreparedInput {
  Status status;
  bool blob = false;
  std::vector<EncodedManifest> manifests;
};

PreparedInput Prepare(const Store& store, const AddInput& in) {
  PreparedInput p;
  if (!LooksLikeManifestInput(in)) {
    p.blob = true;
    return p;
  }
  try {
    auto parsed = ParseInput(in);
    if (!parsed.ok()) {
      p.status = parsed.status();
      return p;
    }
    for (const auto& m : *parsed) p.manifests.push_back(store.EncodeManifest(m.manifest, m.document, m.document_type));
  } catch (const std::exception& e) {  // a worker thread must not throw
    p.status = Status::IOError(in.source + ": " + e.what());
  }
  return p;
}

}  // namespace

Result<std::vector<AddedObject>> AddInputs(Store& store, const std::vector<AddInput>& inputs) {
  // Parsing, canonical JSON, hashing and compression are two thirds of a
  // bulk add and need no store, so they run on worker threads ahead of the
  // one LMDB writer. The first bad input in command-line order is reported,
  // as a sequential add would, and nothing is written.
  // A media type that push and pull could not carry is refused here, before
  // anything is read, rather than stored and found out at the pull.
  for (const AddInput& in : inputs) {
    if (!in.media_type.empty()) KI_RETURN_IF_ERROR(CheckMediaType(in.media_type, in.source));
    if (in.stream && !IsBlobInput(in)) {
      return Status::InvalidInput(in.source + ": only a blob can be stored without being read first");
    }
  }
  std::vector<PreparedInput> prepared(inputs.size());
  size_t nthreads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 4);
  if (inputs.size() < 32) nthreads = 1;  // not worth a thread
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < inputs.size();) prepared[i] = Prepare(store, inputs[i]);
  };
  std::vector<std::thread> workers;
  for (size_t t = 1; t < nthreads; ++t) workers.emplace_back(work);
  work();
  for (auto& t : workers) t.join();
  for (const auto& p : prepared) KI_RETURN_IF_ERROR(p.status);

  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  // Blobs in input order, then every manifest in one PutEncodedManifests
  // (written table by table in key order); output in input order.
  std::vector<PutResult> blobs;  // one per blob input, in input order
  std::vector<EncodedManifest> all;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const AddInput& in = inputs[i];
    if (prepared[i].blob) {
      std::string mt = in.media_type.empty() ? GuessMediaType(in.source) : in.media_type;
      PutResult r;
      if (in.stream) {
        // Read through the store's Env, as the store writes its copy.
        Env* env = &EnvOf(store);
        std::unique_ptr<SequentialFile> file;
        if (in.source == "-") {
          file = env->StandardInput();
        } else {
          KI_ASSIGN_OR_RETURN(file, env->NewSequentialFile(in.source));
        }
        if (in.prefix.empty()) {
          KI_ASSIGN_OR_RETURN(r, batch->PutBlobStream(*file, mt, in.source));
        } else {
          // What was read to tell a blob from a manifest, then the rest:
          // into a scratch file of the store, stored from there.
          KI_ASSIGN_OR_RETURN(r, StoreWithPrefix(store, *batch, in, *file, mt));
        }
      } else {
        KI_ASSIGN_OR_RETURN(r, batch->PutBlob(in.bytes, mt));
      }
      blobs.push_back(r);
    } else {
      // Moved out element by element: the vector keeps its size, which the
      // output pass below counts on.
      for (auto& m : prepared[i].manifests) all.push_back(std::move(m));
    }
  }
  KI_ASSIGN_OR_RETURN(std::vector<PutResult> put, batch->PutEncodedManifests(all));
  std::vector<AddedObject> out;
  out.reserve(blobs.size() + all.size());
  size_t b = 0, k = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (prepared[i].blob) {
      out.push_back({blobs[b].digest, "blob", "", blobs[b].existed});
      ++b;
      continue;
    }
    for (size_t j = 0; j < prepared[i].manifests.size(); ++j, ++k) {
      out.push_back({put[k].digest, std::string(KindName(all[k].kind)), all[k].name, put[k].existed});
    }
  }
  KI_RETURN_IF_ERROR(batch->Commit());
  return out;
}

}  // namespace ki
