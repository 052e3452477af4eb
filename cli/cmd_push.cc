// ki push REMOTE REF... [--insecure] [--jobs N] [--bundle TAG [--no-pack]] [--digest-tags] [--recheck] [--buffer-mib N] [--json]
#include <iostream>

#include "ki/tag_sync.h"
#include "transfer_args.h"

namespace ki::cli {
namespace {

struct PushOptions {
  TransferArgs t;
  bool digest_tags = false;
  bool recheck = false;
  bool no_pack = false;
  bool all = false;
  bool tags = false;
  std::string bundle;
};

RunFn SetupPush(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<PushOptions>();
  AddTransferArgs(sub, &o->t, "objects to push with everything they reach", TransferOptions{}.push_jobs,
                  "parallel uploads", TransferOptions{}.push_buffer_bytes,
                  "object bytes read for upload at once, across the uploads; a larger object goes alone");
  sub->add_option("--bundle", o->bundle, "push every closure as one bundle under this tag (few manifests, not one per ref)");
  sub->add_flag("--no-pack", o->no_pack, "with --bundle: a format 1 bundle, every object its own blob and no pack (pulls fetch each object on its own)");
  sub->add_flag("--digest-tags", o->digest_tags, "also tag named roots ki-<hex of the ki digest>");
  sub->add_flag("--recheck", o->recheck, "ask the registry about every blob and tag again (ignore remote.state)");
  sub->add_flag("--all", o->all, "with --bundle: every object of the store (a clone answers what this store answers)");
  sub->add_flag("--tags", o->tags, "also push every local tag (its object, and the remote tag kitag-NAME)");
  o->t.refs_option->required(false);
  return [o, g]() -> Result<int> {
    if (o->all && o->bundle.empty()) return Status::Usage("--all needs --bundle TAG (the whole store travels as one bundle)");
    if (o->all && !o->t.refs.empty()) return Status::Usage("--all takes no REF: it pushes every object");
    if (!o->all && !o->tags && o->t.refs.empty()) {
      return Status::Usage("refs is required (or --bundle TAG --all for the whole store, or --tags)");
    }
    KI_ASSIGN_OR_RETURN(TransferSetup s, OpenTransfer(*g, o->t, "push", StoreAccess::kWriteIfPossible));
    if (o->tags) {
      // Tags first, on their own: then REFs (if any) as usual.
      s.opts.push_jobs = o->t.jobs;
      s.opts.use_remote_state = !o->recheck;
      KI_ASSIGN_OR_RETURN(auto sent, PushTags(*s.store, s.url, s.opts, nullptr));
      if (o->t.json && o->t.refs.empty()) {
        Json tags = Json::array();
        for (const auto& t : sent) tags.push_back({{"tag", t.name}, {"remoteTag", t.remote_tag}, {"digest", t.object.str()}});
        PrintJson({{"remote", s.url.str()}, {"tags", tags}});
        return 0;
      }
      for (const auto& t : sent) std::cout << "tag\t" << t.name << "\t" << t.remote_tag << "\t" << t.object.str() << "\n";
      if (o->t.refs.empty()) return 0;
    }
    TransferOptions& opts = s.opts;
    opts.digest_tags = o->digest_tags;
    opts.bundle_tag = o->bundle;
    opts.use_remote_state = !o->recheck;
    opts.use_pack = !o->no_pack;
    opts.push_jobs = o->t.jobs;
    opts.push_buffer_bytes = o->t.buffer_mib << 20;
    KI_ASSIGN_OR_RETURN(PushReport rep,
                        o->all ? PushAll(*s.store, s.url, opts) : Push(*s.store, s.url, o->t.refs, opts));
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
    // A bundle is one line (its tag and index digest, then the sums over
    // its roots); -v adds a line per root.
    const bool summary = !o->bundle.empty() && (o->all || rep.refs.size() > 1);
    if (summary) {
      uint64_t sent = 0, skipped = 0, bytes = 0, atts = 0;
      for (const auto& r : rep.refs) sent += r.sent, skipped += r.skipped, bytes += r.bytes_sent, atts += r.attestations;
      std::cout << "pushed\t" << o->bundle << "\t" << (rep.refs.empty() ? std::string("-") : rep.refs[0].manifest.str())
                << "\t" << rep.refs.size() << (o->all ? " objects as roots: " : " roots: ") << sent << " sent (" << bytes
                << " bytes), " << skipped << " already there";
      if (atts) std::cout << ", " << atts << " attestations";
      std::cout << "\n";
    }
    for (const auto& r : rep.refs) {
      if (summary && !o->t.verbose) break;
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

KI_REGISTER_COMMAND(push, {"push", "Push objects and their closure to a remote", SetupPush, 81});

}  // namespace
}  // namespace ki::cli
