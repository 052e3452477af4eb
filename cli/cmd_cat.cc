// ki cat REF: the exact stored bytes.
#include <cstdio>

#include "command.h"

namespace ki::cli {
namespace {

RunFn Setup(CLI::App* sub, GlobalOptions* g) {
  auto ref = std::make_shared<std::string>();
  sub->add_option("ref", *ref, "object: digest, prefix, KIND/NAME or name")->required();
  return [ref, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    KI_ASSIGN_OR_RETURN(Digest d, store->Resolve(*ref));
    KI_ASSIGN_OR_RETURN(std::string bytes, store->Read(d));
    if (std::fwrite(bytes.data(), 1, bytes.size(), stdout) != bytes.size() || std::fflush(stdout) != 0) {
      return Status::IOError("write to standard output failed");
    }
    return 0;
  };
}

KI_REGISTER_COMMAND(cat, {"cat", "Print an object's exact stored bytes", Setup, 40});

}  // namespace
}  // namespace ki::cli
