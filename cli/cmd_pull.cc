// ki pull REMOTE REF... [--insecure] [--jobs N] [--json]
#include <iostream>

#include "transfer_args.h"

namespace ki::cli {
namespace {

RunFn Setup(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<TransferArgs>();
  AddTransferArgs(sub, o.get(), "tags, ki names, ki digests or OCI manifest digests", kPullJobs,
                  "parallel downloads");
  return [o, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(TransferSetup s, OpenTransfer(*g, *o, "pull"));
    KI_ASSIGN_OR_RETURN(PullReport rep, Pull(*s.store, s.url, o->refs, s.opts));
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
      PrintJson({{"remote", s.url.str()},
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
