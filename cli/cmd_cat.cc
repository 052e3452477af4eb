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

KI_REGISTER_COMMAND(cat, {"cat", "Print an object's exact stored bytes", Setup, 40});

}  // namespace
}  // namespace ki::cli
