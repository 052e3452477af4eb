// ki add [--blob [--media-type T]] FILE... | -
#include <iostream>

#include "command.h"
#include "ki/ingest.h"

namespace ki::cli {
namespace {

struct Options {
  std::vector<std::string> files;
  bool blob = false;
  std::string media_type;
  bool json = false;
};

RunFn Setup(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<Options>();
  sub->add_option("files", o->files, "files to store; - reads standard input")->required();
  sub->add_flag("--blob", o->blob, "store the files as blobs, even if they look like manifests");
  sub->add_option("--media-type", o->media_type, "media type of blobs (default: from the extension)");
  sub->add_flag("--json", o->json, "print a JSON array of {digest, kind, name, existed}");
  return [o, g]() -> Result<int> {
    if (!o->media_type.empty() && !o->blob) return Status::Usage("--media-type needs --blob");
    // Read everything first: a bad file means nothing is stored.
    std::vector<AddInput> inputs;
    Env* env = Env::Default();
    for (const auto& f : o->files) {
      AddInput in;
      in.source = f;
      in.type = o->blob ? InputType::kBlob : InputType::kDetect;
      in.media_type = o->media_type;
      // Manifests are capped at 1 MiB by the parser, with a clear message;
      // blobs may be large.
      KI_ASSIGN_OR_RETURN(in.bytes, env->ReadFile(f == "-" ? "/dev/stdin" : f, StoreOptions{}.max_object_size));
      inputs.push_back(std::move(in));
    }
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
    KI_ASSIGN_OR_RETURN(auto added, AddInputs(*store, inputs));
    if (o->json) {
      Json arr = Json::array();
      for (const auto& a : added) {
        arr.push_back({{"digest", a.digest.str()}, {"kind", a.kind},
                       {"name", a.name.empty() ? Json(nullptr) : Json(a.name)}, {"existed", a.existed}});
      }
      PrintJson(arr);
      return 0;
    }
    std::string out;
    for (const auto& a : added) {
      out += a.digest.str() + "\t" + a.kind + "\t" + (a.name.empty() ? "-" : a.name) + "\t" +
             (a.existed ? "existed" : "new") + "\n";
    }
    std::cout << out;
    return 0;
  };
}

KI_REGISTER_COMMAND(add, {"add", "Store manifests, bundles and blobs", Setup, 20});

}  // namespace
}  // namespace ki::cli
