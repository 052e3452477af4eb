// ki pull REMOTE REF... [--insecure] [--jobs N] [--json]
#include <iostream>

#include "command.h"
#include "ki/remote.h"

namespace ki::cli {

std::function<void(const TransferProgress&)> ProgressMeter(const char* verb);  // cmd_push.cc

namespace {

struct Options {
  std::string remote;
  std::vector<std::string> refs;
  bool insecure = false;
  bool json = false;
  int jobs = 4;
};

RunFn Setup(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<Options>();
  sub->add_option("remote", o->remote, "remote name, or a URL (oci://HOST/REPO, oci-layout:DIR)")->required();
  sub->add_option("refs", o->refs, "tags, ki names, ki digests or OCI manifest digests")->required();
  sub->add_flag("--insecure", o->insecure, "plain http (loopback registries only)");
  sub->add_option("-j,--jobs", o->jobs, "parallel downloads (default 4)")->check(CLI::Range(1, 64));
  sub->add_flag("--json", o->json, "print a JSON report");
  return [o, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
    KI_ASSIGN_OR_RETURN(RemoteUrl url, LookupRemote(*store, o->remote, o->insecure));
    TransferOptions opts;
    opts.parallelism = o->jobs;
    opts.progress = ProgressMeter("pull");
    KI_ASSIGN_OR_RETURN(PullReport rep, Pull(*store, url, o->refs, opts));
    for (const auto& r : rep.refs)
      for (const auto& w : r.warnings) std::cerr << "ki: warning: " << w << "\n";
    if (o->json) {
      Json refs = Json::array();
      for (const auto& r : rep.refs) {
        refs.push_back({{"ref", r.ref}, {"root", r.root ? r.root->str() : ""}, {"manifest", r.manifest.str()},
                        {"objects", r.objects}, {"received", r.received}, {"present", r.present},
                        {"bytesReceived", r.bytes_received}, {"attestations", r.attestations},
                        {"warnings", r.warnings}});
      }
      PrintJson({{"remote", url.str()},
                 {"refs", refs},
                 {"httpRequests", rep.http_requests},
                 {"blobsReceived", rep.blobs_received},
                 {"bytesReceived", rep.bytes_received}});
      return 0;
    }
    for (const auto& r : rep.refs) {
      std::cout << "pulled\t" << r.ref << "\t" << (r.root ? r.root->str() : "-") << "\t" << r.received
                << " received (" << r.bytes_received << " bytes), " << r.present << " already here";
      if (r.attestations) std::cout << ", " << r.attestations << " attestations";
      std::cout << "\n";
    }
    return 0;
  };
}

KI_REGISTER_COMMAND(pull, {"pull", "Pull objects and their closure from a remote", Setup, 82});

}  // namespace
}  // namespace ki::cli
