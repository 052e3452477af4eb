// ki push REMOTE REF... [--insecure] [--jobs N] [--bundle TAG [--no-pack]] [--digest-tags] [--recheck] [--buffer-mib N] [--json]
#include <iostream>

#include "transfer_args.h"

namespace ki::cli {
namespace {

struct Options {
  TransferArgs t;
  bool digest_tags = false;
  bool recheck = false;
  bool no_pack = false;
  std::string bundle;
};

RunFn Setup(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<Options>();
  AddTransferArgs(sub, &o->t, "objects to push with everything they reach", TransferOptions{}.push_jobs,
                  "parallel uploads", TransferOptions{}.push_buffer_bytes,
                  "object bytes read for upload at once, across the uploads; a larger object goes alone");
  sub->add_option("--bundle", o->bundle, "push every closure as one bundle under this tag (few manifests, not one per ref)");
  sub->add_flag("--no-pack", o->no_pack, "with --bundle: write no pack (pulls then fetch each object on its own)");
  sub->add_flag("--digest-tags", o->digest_tags, "also tag named roots ki-<hex of the ki digest>");
  sub->add_flag("--recheck", o->recheck, "ask the registry about every blob and tag again (ignore remote.state)");
  return [o, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(TransferSetup s, OpenTransfer(*g, o->t, "push", StoreAccess::kWriteIfPossible));
    TransferOptions& opts = s.opts;
    opts.digest_tags = o->digest_tags;
    opts.bundle_tag = o->bundle;
    opts.use_remote_state = !o->recheck;
    opts.use_pack = !o->no_pack;
    opts.push_jobs = o->t.jobs;
    opts.push_buffer_bytes = o->t.buffer_mib << 20;
    KI_ASSIGN_OR_RETURN(PushReport rep, Push(*s.store, s.url, o->t.refs, opts));
    for (const auto& w : rep.warnings) std::cerr << "ki: warning: " << w << "\n";
    if (o->t.json) {
      Json refs = Json::array();
      for (const auto& r : rep.refs) {
        refs.push_back({{"ref", r.ref}, {"root", r.root.str()}, {"tag", r.tag}, {"manifest", r.manifest.str()},
                        {"objects", r.objects}, {"sent", r.sent}, {"skipped", r.skipped},
                        {"bytesSent", r.bytes_sent}, {"attestations", r.attestations}});
      }
      Json pack = nullptr;
      if (rep.pack) {
        pack = {{"digest", rep.pack->digest.str()}, {"size", rep.pack->size}, {"objects", rep.pack->objects},
                {"sent", rep.pack->sent}};
      }
      PrintJson({{"remote", s.url.str()},
                 {"refs", refs},
                 {"pack", pack},
                 {"httpRequests", rep.http_requests},
                 {"blobs",
                  {{"known", rep.blobs_known},
                   {"checked", rep.blobs_checked},
                   {"sent", rep.blobs_sent},
                   {"sentUnasked", rep.blobs_sent_unasked},
                   {"streamed", rep.blobs_streamed},
                   {"bytesSent", rep.bytes_sent}}}});
      return 0;
    }
    for (const auto& r : rep.refs) {
      std::cout << "pushed\t" << r.tag << "\t" << r.manifest.str() << "\t" << r.sent << " sent (" << r.bytes_sent
                << " bytes), " << r.skipped << " already there";
      if (r.attestations) std::cout << ", " << r.attestations << " attestations";
      std::cout << "\n";
    }
    if (rep.pack) {
      std::cout << "pack\t" << rep.pack->digest.str() << "\t" << rep.pack->objects << " objects in " << rep.pack->size
                << " bytes, " << (rep.pack->sent ? "sent" : "already there") << "\n";
    }
    return 0;
  };
}

KI_REGISTER_COMMAND(push, {"push", "Push objects and their closure to a remote", Setup, 81});

}  // namespace
}  // namespace ki::cli
