// ki ls [--kind K] [--operation X] [--hardware Y] [--implementation Z] [--name GLOB] [--since T] [--json]
#include <fnmatch.h>

#include <iostream>

#include "command.h"
#include "ki/catalog.h"
#include "ki/dictionary.h"

namespace ki::cli {
namespace {

struct LsOptions {
  std::string kind, name;
  catalog::RunFilter runs;
  bool json = false;
};

RunFn SetupLs(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<LsOptions>();
  sub->add_option("--kind", o->kind, "only manifests of this kind (e.g. BenchmarkRun), or 'blob'");
  sub->add_option("--operation", o->runs.operation, "runs of this operation (name, substring or glob; or digest prefix)");
  sub->add_option("--hardware", o->runs.hardware, "runs on this hardware (any part of its product name, e.g. H200)");
  sub->add_option("--implementation", o->runs.implementation, "runs of this implementation (name or digest prefix)");
  sub->add_option("--name", o->name, "objects whose name matches this glob");
  sub->add_option("--since", o->runs.since, "runs observed at or after this time (RFC 3339, or a date)");
  sub->add_flag("--json", o->json, "print a JSON array");
  return [o, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    std::optional<Kind> kind;
    bool blobs_only = o->kind == "blob";
    if (!o->kind.empty() && !blobs_only) {
      // Any capitalisation, as a REF's <Kind>/<name> takes it.
      kind = ParseKindAnyCase(o->kind);
      if (!kind) return Status::Usage("unknown kind '" + o->kind + "' (--kind takes a manifest kind, e.g. BenchmarkRun, or 'blob')");
    }
    struct Row {
      Digest d;
      std::string what, name;
      uint64_t size;
    };
    std::vector<Row> rows;
    Status filter_error;
    auto add_row = [&](const ObjectInfo& info) {
      Row r{info.digest, info.kind ? std::string(KindName(*info.kind)) : "blob", "", info.size};
      auto names = store->NamesOf(info);
      if (names.ok() && !names->empty()) r.name = names->front().substr(names->front().find('/') + 1);
      if (!o->name.empty() && fnmatch(o->name.c_str(), r.name.c_str(), 0) != 0) return;
      auto pass = catalog::RunMatches(*store, info.digest, o->runs);
      if (!pass.ok()) {
        filter_error = pass.status();
        return;
      }
      if (*pass) rows.push_back(std::move(r));
    };
    if (kind) {
      std::vector<Digest> ds;
      KI_RETURN_IF_ERROR(store->ForEachOfKind(*kind, [&](const Digest& d) {
        ds.push_back(d);
        return true;
      }));
      for (const auto& d : ds) {
        KI_ASSIGN_OR_RETURN(auto info, store->Stat(d));
        if (info) add_row(*info);
      }
    } else {
      KI_RETURN_IF_ERROR(store->ForEachObject([&](const ObjectInfo& info) {
        // The store's own zstd dictionaries are not what a user stored.
        if (IsDictionary(info)) return true;
        if (!blobs_only || info.type == ObjectType::kBlob) add_row(info);
        return true;
      }));
    }
    KI_RETURN_IF_ERROR(filter_error);
    if (o->json) {
      Json arr = Json::array();
      for (const auto& r : rows) {
        arr.push_back({{"digest", r.d.str()}, {"kind", r.what},
                       {"name", r.name.empty() ? Json(nullptr) : Json(r.name)}, {"size", r.size}});
      }
      PrintJson(arr);
      return 0;
    }
    std::string out;
    out.reserve(rows.size() * 120);
    for (const auto& r : rows) out += r.d.str() + "\t" + r.what + "\t" + (r.name.empty() ? "-" : r.name) + "\n";
    std::cout << out;
    return 0;
  };
}

KI_REGISTER_COMMAND(ls, {"ls", "List stored objects", SetupLs, 45});

}  // namespace
}  // namespace ki::cli
