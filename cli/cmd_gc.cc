// ki gc [--dry-run] [--grace D] [--json]: remove what nothing keeps alive
// (ki/gc.h) and compact the index file.
#include <ctime>
#include <iostream>

#include "command.h"
#include "ki/gc.h"
#include "ki/human.h"
#include "ki/utc.h"

namespace ki::cli {
namespace {

Json SizesJson(const GcSizes& s) {
  return {{"indexBytes", s.index_bytes}, {"looseFiles", s.loose_files}, {"looseBytes", s.loose_bytes}};
}

RunFn SetupGc(CLI::App* sub, GlobalOptions* g) {
  struct Options {
    bool dry_run = false, json = false;
    std::string grace = "2w";
  };
  auto o = std::make_shared<Options>();
  sub->add_flag("--dry-run", o->dry_run, "list what would be removed; change nothing");
  sub->add_option("--grace", o->grace,
                  "keep unreachable objects younger than this: a number with s, m, h, d or w (default 2w; 0: none)");
  sub->add_flag("--json", o->json, "print the report as JSON");
  return [o, g]() -> Result<int> {
    auto parsed = ParseGcDuration(o->grace);
    if (!parsed.ok()) return Status::InvalidInput(parsed.status().message() + " (--grace)");
    const int64_t grace = *parsed;
    GcOptions opts;
    opts.grace_seconds = grace;
    opts.dry_run = o->dry_run;
    const bool json = o->json;
    opts.waiting = [json] {
      if (!json) std::cerr << "ki gc: waiting for other ki processes to close the store\n";
    };
    RegisterAllGcRoots();
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, o->dry_run ? OpenMode::kReadOnly : OpenMode::kReadWrite));
    KI_ASSIGN_OR_RETURN(GcReport r, CollectGarbage(std::move(store), opts));
    if (json) {
      Json removed = Json::array();
      for (const auto& x : r.removed) {
        removed.push_back({{"digest", x.digest.str()},
                           {"what", x.what},
                           {"size", x.size},
                           {"storedSize", x.stored_size},
                           {"addedAt", x.added ? Json(UtcText(*x.added)) : Json(nullptr)}});
      }
      PrintJson({{"dryRun", o->dry_run},
                 {"graceSeconds", grace},
                 {"objects", r.objects},
                 {"reachable", r.reachable},
                 {"young", r.young},
                 {"undated", r.undated},
                 {"removed", removed},
                 {"removedBytes", r.removed_bytes},
                 {"removedStoredBytes", r.removed_stored_bytes},
                 {"before", SizesJson(r.before)},
                 {"after", SizesJson(r.after)},
                 {"compacted", r.compacted},
                 {"notes", r.notes}});
      return 0;
    }
    for (const auto& x : r.removed) {
      std::cout << (o->dry_run ? "would remove " : "removed ") << x.digest.str() << "  " << x.what << "  "
                << human::Bytes(x.size) << "  added " << (x.added ? UtcText(*x.added) : std::string("(unknown)"))
                << "\n";
    }
    std::cout << (o->dry_run ? "would remove " : "removed ") << r.removed.size() << " of " << r.objects
              << " objects (" << human::Bytes(r.removed_bytes) << ", " << human::Bytes(r.removed_stored_bytes)
              << " stored)\n";
    std::cout << "kept " << r.reachable << " reachable, " << r.young << " unreachable within the grace period ("
              << o->grace << ")";
    if (r.undated) {
      std::cout << ", " << r.undated << " unreachable of unknown age"
                << (o->dry_run ? "" : " (dated now: they go a grace period from now)");
    }
    std::cout << "\n";
    auto sizes = [](const GcSizes& s) {
      return "index " + human::Bytes(s.index_bytes) + ", loose " + std::to_string(s.loose_files) + " files " +
             human::Bytes(s.loose_bytes);
    };
    std::cout << "store before: " << sizes(r.before) << "\n";
    if (!o->dry_run) std::cout << "store after:  " << sizes(r.after) << (r.compacted ? " (index compacted)" : "") << "\n";
    for (const auto& n : r.notes) std::cout << "note: " << n << "\n";
    return 0;
  };
}

KI_REGISTER_COMMAND(gc, {"gc", "Remove objects nothing keeps alive and compact the store", SetupGc, 56, /*big_heap_min_args=*/0});

}  // namespace
}  // namespace ki::cli
