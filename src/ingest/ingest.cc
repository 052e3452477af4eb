#include "ki/ingest.h"

#include <algorithm>

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

Result<std::vector<AddedObject>> AddInputsToBatch(Batch& batch, const std::vector<AddInput>& inputs) {
  std::vector<AddedObject> out;
  for (const AddInput& in : inputs) {
    if (!LooksLikeManifestInput(in)) {
      std::string mt = in.media_type.empty() ? GuessMediaType(in.source) : in.media_type;
      KI_ASSIGN_OR_RETURN(PutResult r, batch.PutBlob(in.bytes, mt));
      out.push_back({r.digest, "blob", "", r.existed});
      continue;
    }
    auto parsed = ParseManifestInput(in.bytes, DocFormat::kAuto, in.source);
    if (!parsed.ok()) {
      Status s = parsed.status();
      if (Extension(in.source) == "json" || Extension(in.source) == "yaml" || Extension(in.source) == "yml") {
        return Status::InvalidInput(s.message() + " (use `ki add --blob` to store the file as a blob)");
      }
      return s;
    }
    for (size_t i = 0; i < parsed->manifests.size(); ++i) {
      const Manifest& m = parsed->manifests[i];
      std::string doc;
      std::string_view doc_type;
      if (parsed->form == InputForm::kSingle) {
        // The original bytes, exactly as the user wrote them.
        doc = in.bytes;
        bool json = in.bytes.find_first_not_of(" \t\r\n") != std::string::npos &&
                    in.bytes[in.bytes.find_first_not_of(" \t\r\n")] == '{';
        doc_type = json && !IsYamlName(in.source) ? kDocumentMediaTypeJson : kDocumentMediaTypeYaml;
      } else {
        doc = parsed->documents[i].dump(2) + "\n";
        doc_type = kDocumentMediaTypeJson;
      }
      KI_ASSIGN_OR_RETURN(PutResult r, batch.PutManifest(m, doc, doc_type));
      out.push_back({r.digest, std::string(KindName(m.kind)), m.name(), r.existed});
    }
  }
  return out;
}

Result<std::vector<AddedObject>> AddInputs(Store& store, const std::vector<AddInput>& inputs) {
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  KI_ASSIGN_OR_RETURN(auto out, AddInputsToBatch(*batch, inputs));
  KI_RETURN_IF_ERROR(batch->Commit());
  return out;
}

}  // namespace ki
