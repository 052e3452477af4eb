// Lookups shared by ki run and ki rerun (task.h).
#include "run/task.h"

#include <charconv>

#include "ki/flashinfer.h"

namespace ki::run::internal {

Result<Manifest> ReadKind(Store& store, const Digest& d, Kind kind, std::string_view ref) {
  KI_ASSIGN_OR_RETURN(auto info, store.Stat(d));
  if (!info) return Status::NotFound(std::string(ref) + " (" + d.str() + ") is not in the store");
  if (info->kind != kind)
    return Status::InvalidInput(std::string(ref) + " is a " + (info->kind ? std::string(KindName(*info->kind)) : "blob") +
                                ", not a " + std::string(KindName(kind)));
  return store.ReadManifest(d);
}

Result<Digest> ResolveKind(Store& store, std::string_view ref, Kind kind, Manifest* m) {
  KI_ASSIGN_OR_RETURN(Digest d, store.Resolve(ref));
  KI_ASSIGN_OR_RETURN(*m, ReadKind(store, d, kind, ref));
  return d;
}

std::string NameOf(Store& store, const Digest& d) {
  auto doc = store.ReadDocument(d);
  if (doc.ok() && *doc && (**doc).contains("metadata")) return (**doc)["metadata"].value("name", "");
  return "";
}

std::string Lower(std::string s) {
  for (char& c : s)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return s;
}

Result<Task> LoadTask(Store& store, const Digest& workload, const Manifest& wm, std::vector<std::string>* missing) {
  Task t;
  t.workload_spec = wm.spec;
  auto op = Digest::Parse(wm.spec.value("operationSpecDigest", ""));
  if (!op.ok()) return Status::InvalidInput("workload " + workload.str() + " names no operation");
  KI_ASSIGN_OR_RETURN(auto facts, fib::LookupOperation(store, *op));
  if (!facts) {
    missing->push_back("the flashinfer-bench definition of operation " + op->str() +
                       " (ki runs need it: `ki import flashinfer-bench DIR`)");
    return Status::NotFound("");
  }
  auto def_text = store.Read(facts->definition_blob);
  if (!def_text.ok()) {
    missing->push_back("the definition file " + facts->definition_blob.str() + " of " + facts->definition);
    return Status::NotFound("");
  }
  KI_ASSIGN_OR_RETURN(t.def, harness::ParseDefinition(*def_text, facts->definition));
  KI_ASSIGN_OR_RETURN(auto wfacts, fib::LookupWorkload(store, workload));
  std::string wtext;
  if (wfacts) {
    auto b = store.Read(wfacts->workload_blob);
    if (b.ok()) wtext = *b;
  }
  if (wtext.empty()) {
    Json w = {{"uuid", NameOf(store, workload)}, {"axes", wm.spec.value("axes", Json::object())}};
    Json inputs = Json::object();
    // (Named copies: items() of a temporary would dangle.)
    const Json scalars = wm.spec.value("scalars", Json::object()), tensors = wm.spec.value("tensors", Json::object());
    for (const auto& [name, s] : scalars.items())
      inputs[name] = {{"type", "scalar"}, {"value", s["value"]}};
    for (const auto& [name, s] : tensors.items())
      inputs[name] = {{"type", s.value("/data/generator"_json_pointer, std::string("random"))}};
    w["inputs"] = inputs;
    wtext = w.dump();
  }
  KI_ASSIGN_OR_RETURN(t.workload, harness::ParseWorkload(wtext, "workload " + workload.str()));
  for (const auto& [name, src] : t.workload.inputs)
    if (src.kind == harness::InputSource::Kind::kSafetensors) t.generated.push_back(name);
  return t;
}

Result<Device> ParseDevice(const std::string& text, Language lang) {
  Device d;
  // Python defaults to the GPU, as flashinfer-bench runs it; it may run on
  // the CPU too (torch on the CPU). Triton needs a GPU.
  d.cuda = lang != Language::kCpp;
  if (!text.empty()) {
    if (text == "cpu") {
      d.cuda = false;
    } else if (text.rfind("cuda", 0) == 0) {
      d.cuda = true;
      if (text.size() > 4) {
        // from_chars, not stoi: an index past int's range is a usage error
        // naming the option, not an out_of_range exception (exit 5).
        const char* first = text.data() + 5;
        const char* last = text.data() + text.size();
        auto [end, ec] = std::from_chars(first, last, d.index);
        if (text[4] != ':' || first == last || *first == '-' || *first == '+' || ec != std::errc() || end != last)
          return Status::Usage("--device: expected cpu or cuda:N with N a device index, got '" + text + "'");
      }
    } else {
      return Status::Usage("--device: expected cpu or cuda:N, got '" + text + "'");
    }
  }
  if (lang == Language::kPython) return d;
  if (d.cuda != (lang == Language::kCuda || lang == Language::kTriton))
    return Status::Usage(std::string("a ") + std::string(LanguageName(lang)) + " implementation runs on " +
                         (lang != Language::kCpp ? "a CUDA device" : "the CPU") + ", not on " + d.str());
  return d;
}

}  // namespace ki::run::internal
