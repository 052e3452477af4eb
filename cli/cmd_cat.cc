// ki cat REF: the exact stored bytes.
#include <cstdio>

#include "command.h"

namespace ki::cli {
namespace {

RunFn SetupCat(CLI::App* sub, GlobalOptions* g) {
  auto ref = std::make_shared<std::string>();
  sub->add_option("ref", *ref, "object: digest, prefix, KIND/NAME or name")->required();
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json,
                "print what the bytes are, not the bytes: {digest, type, kind, mediaType, size} as JSON");
  return [ref, json, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    KI_ASSIGN_OR_RETURN(Digest d, store->Resolve(*ref));
    if (*json) {
      // The bytes themselves are not JSON; their metadata is, from the
      // index entry (nothing is read or re-hashed: that is ki verify).
      KI_ASSIGN_OR_RETURN(auto info, store->Stat(d));
      if (!info) return Status::NotFound(d.str() + ": known, but its bytes are not in this store");
      Json j = {{"digest", d.str()}, {"size", info->size}};
      if (info->type == ObjectType::kBlob) {
        j["type"] = "blob";
        j["mediaType"] = info->media_type;
      } else {
        j["type"] = "manifest";
        KI_ASSIGN_OR_RETURN(Manifest m, store->ReadManifest(d));
        j["kind"] = std::string(KindName(m.kind));
      }
      PrintJson(j);
      return 0;
    }
    // Streamed: a loose object of any size goes out a piece at a time, and
    // its hash is checked at the end (docs/cli.md: corrupt bytes may have
    // been written by then).
    KI_RETURN_IF_ERROR(store->ReadStream(d, [](std::string_view b) -> Status {
      if (std::fwrite(b.data(), 1, b.size(), stdout) != b.size()) {
        return Status::IOError("write to standard output failed");
      }
      return Status::OK();
    }));
    if (std::fflush(stdout) != 0) return Status::IOError("write to standard output failed");
    return 0;
  };
}

KI_REGISTER_COMMAND(cat, {"cat", "Print an object's exact stored bytes", SetupCat, 40});

}  // namespace
}  // namespace ki::cli
