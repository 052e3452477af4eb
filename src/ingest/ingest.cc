#include "ki/ingest.h"

#include <algorithm>
#include <atomic>
#include <thread>

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

}  // namespace

bool LooksLikeManifestInput(const AddInput& in) {
  if (in.type == InputType::kBlob) return false;
  std::string ext = Extension(in.source);
  if (ext == "json" || ext == "yaml" || ext == "yml") return true;
  if (!ext.empty()) return false;
  // No extension (stdin, say): a document if it starts like one.
  size_t i = in.bytes.find_first_not_of(" \t\r\n");
  if (i == std::string::npos) return false;
  std::string_view head = std::string_view(in.bytes).substr(i, 16);
  return head[0] == '{' || head.substr(0, 3) == "---" || head.substr(0, 11) == "apiVersion:";
}

namespace {

// One manifest of an input with the document it is stored with.
struct ManifestWithDocument {
  Manifest manifest;
  std::string document;
  std::string_view document_type;
};

// The manifests an input holds, or the parse error, phrased for `ki add`.
Result<std::vector<ManifestWithDocument>> ParseInput(const AddInput& in) {
  auto parsed = ParseManifestInput(in.bytes, DocFormat::kAuto, in.source);
  if (!parsed.ok()) {
    Status s = parsed.status();
    if (Extension(in.source) == "json" || Extension(in.source) == "yaml" || Extension(in.source) == "yml") {
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
      KI_ASSIGN_OR_RETURN(PutResult r, batch->PutBlob(in.bytes, mt));
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
