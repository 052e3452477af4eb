// ki pull REMOTE REF... [--insecure] [--jobs N] [--no-pack] [--buffer-mib N] [--json]
#include <iostream>

#include "ki/sign.h"
#include "ki/tag_sync.h"
#include "transfer_args.h"

namespace ki::cli {
namespace {

RunFn SetupPull(CLI::App* sub, GlobalOptions* g) {
  struct PullOptions {
    TransferArgs t;
    bool no_pack = false;
    bool tags = false, force = false;
  };
  auto opt = std::make_shared<PullOptions>();
  TransferArgs* o = &opt->t;
  AddTransferArgs(sub, o, "tags, ki names, ki digests or OCI manifest digests", TransferOptions{}.pull_jobs,
                  "parallel downloads", TransferOptions{}.pull_buffer_bytes,
                  "verified blobs held in memory before they are written in a batch of their own");
  sub->add_flag("--tags", opt->tags, "also pull every kitag-NAME tag of the remote and set the local tag NAME");
  sub->add_flag("-f,--force", opt->force, "with --tags: replace a local tag that names another object");
  o->refs_option->required(false);
  sub->add_flag("--no-pack", opt->no_pack, "fetch a format 1 bundle's objects one by one even where its pack would be cheaper (a packed bundle's small objects are only in its pack)");
  return [opt, o, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(TransferSetup s, OpenTransfer(*g, *o, "pull", StoreAccess::kWrite));
    s.opts.pull_jobs = o->jobs;
    s.opts.use_pack = !opt->no_pack;
    s.opts.pull_buffer_bytes = o->buffer_mib << 20;
    // Attestations are checked with the keys `ki sign --envelope` uses. Keys
    // that cannot be loaded (no $KI_HOME or $HOME, a trust list writable by
    // others) do not stop a pull of records: attestations are then checked
    // without them, which stores nothing a check with them would refuse for
    // a key reason (a signature by an unknown key is no fault either way).
    Result<KeySources> keys = KeySources::LoadDefault();
    if (keys.ok()) {
      s.opts.attestation_keys = &*keys;
    } else {
      std::cerr << "ki: warning: " << keys.status().message()
                << "; attestations are checked without the local keys and trust list\n";
    }
    if (opt->tags) {
      KI_ASSIGN_OR_RETURN(auto got, PullTags(*s.store, s.url, s.opts, opt->force ? TagReplace::kYes : TagReplace::kNo, nullptr));
      if (o->json && o->refs.empty()) {
        Json tags = Json::array();
        for (const auto& t : got) {
          tags.push_back({{"tag", t.name}, {"remoteTag", t.remote_tag}, {"digest", t.object.str()}, {"set", t.set}});
        }
        PrintJson({{"remote", s.url.str()}, {"tags", tags}});
        return 0;
      }
      for (const auto& t : got) {
        if (t.set) {
          std::cout << "tag\t" << t.name << "\t" << t.remote_tag << "\t" << t.object.str() << "\n";
        } else {
          std::cerr << "ki: warning: tag " << t.name << " names another object here; kept (ki pull --tags -f replaces it)\n";
        }
      }
      if (o->refs.empty()) return 0;
    } else if (o->refs.empty()) {
      return Status::Usage("refs is required (or --tags)");
    }
    KI_ASSIGN_OR_RETURN(PullReport rep, Pull(*s.store, s.url, o->refs, s.opts));
    for (const auto& r : rep.refs)
      for (const auto& w : r.warnings) std::cerr << "ki: warning: " << w << "\n";
    if (o->json) {
      Json refs = Json::array();
      for (const auto& r : rep.refs) {
        refs.push_back({{"ref", r.ref}, {"root", r.root ? r.root->str() : ""}, {"manifest", r.manifest.str()},
                        {"objects", r.objects}, {"received", r.received}, {"fromPack", r.from_pack}, {"present", r.present},
                        {"bytesReceived", r.bytes_received}, {"attestations", r.attestations},
                        {"warnings", r.warnings}});
      }
      PrintJson({{"remote", s.url.str()},
                 {"refs", refs},
                 {"httpRequests", rep.http_requests},
                 {"blobsReceived", rep.blobs_received},
                 {"blobsFromPack", rep.blobs_from_pack},
                 {"packsReceived", rep.packs_received},
                 {"packBytesReceived", rep.pack_bytes_received},
                 {"bytesReceived", rep.bytes_received},
                 {"blobsWrittenEarly", rep.blobs_written_early},
                 {"blobsStreamed", rep.blobs_streamed}});
      return 0;
    }
    for (const auto& r : rep.refs) {
      std::cout << "pulled\t" << r.ref << "\t" << (r.root ? r.root->str() : "-") << "\t" << r.received
                << " received (" << r.bytes_received << " bytes";
      if (r.from_pack) std::cout << "; " << r.from_pack << " from the pack";
      std::cout << "), " << r.present << " already here";
      if (r.attestations) std::cout << ", " << r.attestations << " attestations";
      std::cout << "\n";
    }
    return 0;
  };
}

KI_REGISTER_COMMAND(pull, {"pull", "Pull objects and their closure from a remote", SetupPull, 82});

}  // namespace
}  // namespace ki::cli
