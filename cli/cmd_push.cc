// ki push REMOTE REF... [--insecure] [--jobs N] [--bundle TAG] [--digest-tags] [--recheck] [--json]
#include <unistd.h>

#include <cstdio>
#include <iostream>

#include "command.h"
#include "ki/remote.h"

namespace ki::cli {

// Shared by push and pull: a one-line progress meter on a terminal.
std::function<void(const TransferProgress&)> ProgressMeter(const char* verb) {
  if (::isatty(STDERR_FILENO) != 1) return nullptr;
  return [verb](const TransferProgress& p) {
    if (p.objects_done != p.objects_total && p.objects_done % 16 != 0) return;
    std::fprintf(stderr, "\r%s: %llu/%llu objects, %.1f MB%s", verb, (unsigned long long)p.objects_done,
                 (unsigned long long)p.objects_total, double(p.bytes_done) / 1e6,
                 p.objects_done == p.objects_total ? "\n" : "");
  };
}

namespace {

struct Options {
  std::string remote;
  std::vector<std::string> refs;
  bool insecure = false;
  bool json = false;
  bool digest_tags = false;
  bool recheck = false;
  std::string bundle;
  int jobs = 4;
};

RunFn Setup(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<Options>();
  sub->add_option("remote", o->remote, "remote name, or a URL (oci://HOST/REPO, oci-layout:DIR)")->required();
  sub->add_option("refs", o->refs, "objects to push with everything they reach")->required();
  sub->add_flag("--insecure", o->insecure, "plain http (loopback registries only)");
  sub->add_option("-j,--jobs", o->jobs, "parallel uploads (default 4)")->check(CLI::Range(1, 64));
  sub->add_option("--bundle", o->bundle, "push every closure as one bundle under this tag (few manifests, not one per ref)");
  sub->add_flag("--digest-tags", o->digest_tags, "also tag named roots ki-<hex of the ki digest>");
  sub->add_flag("--recheck", o->recheck, "ask the registry about every blob and tag again (ignore remote.state)");
  sub->add_flag("--json", o->json, "print a JSON report");
  return [o, g]() -> Result<int> {
    // Read-write: what the registry now holds is recorded in remote.state.
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
    KI_ASSIGN_OR_RETURN(RemoteUrl url, LookupRemote(*store, o->remote, o->insecure));
    TransferOptions opts;
    opts.parallelism = o->jobs;
    opts.progress = ProgressMeter("push");
    opts.digest_tags = o->digest_tags;
    opts.bundle_tag = o->bundle;
    opts.use_remote_state = !o->recheck;
    KI_ASSIGN_OR_RETURN(PushReport rep, Push(*store, url, o->refs, opts));
    for (const auto& w : rep.warnings) std::cerr << "ki: warning: " << w << "\n";
    if (o->json) {
      Json refs = Json::array();
      for (const auto& r : rep.refs) {
        refs.push_back({{"ref", r.ref}, {"root", r.root.str()}, {"tag", r.tag}, {"manifest", r.manifest.str()},
                        {"objects", r.objects}, {"sent", r.sent}, {"skipped", r.skipped},
                        {"bytesSent", r.bytes_sent}, {"attestations", r.attestations}});
      }
      PrintJson({{"remote", url.str()},
                 {"refs", refs},
                 {"httpRequests", rep.http_requests},
                 {"blobs",
                  {{"known", rep.blobs_known},
                   {"checked", rep.blobs_checked},
                   {"sent", rep.blobs_sent},
                   {"sentUnasked", rep.blobs_sent_unasked},
                   {"bytesSent", rep.bytes_sent}}}});
      return 0;
    }
    for (const auto& r : rep.refs) {
      std::cout << "pushed\t" << r.tag << "\t" << r.manifest.str() << "\t" << r.sent << " sent (" << r.bytes_sent
                << " bytes), " << r.skipped << " already there";
      if (r.attestations) std::cout << ", " << r.attestations << " attestations";
      std::cout << "\n";
    }
    return 0;
  };
}

KI_REGISTER_COMMAND(push, {"push", "Push objects and their closure to a remote", Setup, 81});

}  // namespace
}  // namespace ki::cli
