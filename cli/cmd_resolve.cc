// ki resolve REF: the full digest.
#include <iostream>

#include "command.h"

namespace ki::cli {
namespace {

RunFn SetupResolve(CLI::App* sub, GlobalOptions* g) {
  auto ref = std::make_shared<std::string>();
  sub->add_option("ref", *ref, "digest, hex prefix (>= 4), KIND/NAME or a unique name")->required();
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "print {ref, digest} as JSON");
  return [ref, json, g]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    KI_ASSIGN_OR_RETURN(Digest d, store->Resolve(*ref));
    if (*json) PrintJson({{"ref", *ref}, {"digest", d.str()}});
    else std::cout << d.str() << "\n";
    return 0;
  };
}

KI_REGISTER_COMMAND(resolve, {"resolve", "Print the full digest a reference names", SetupResolve, 50});

}  // namespace
}  // namespace ki::cli
