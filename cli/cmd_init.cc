// ki init [DIR]: create DIR/.ki.
#include <iostream>

#include "command.h"

namespace ki::cli {
namespace {

RunFn Setup(CLI::App* sub, GlobalOptions*) {
  auto dir = std::make_shared<std::string>(".");
  sub->add_option("dir", *dir, "directory to hold the store (default: the current directory)");
  return [dir]() -> Result<int> {
    KI_ASSIGN_OR_RETURN(StoreOptions opts, StoreOptionsFromEnvironment());
    KI_ASSIGN_OR_RETURN(auto store, Store::Init(*dir, opts));
    std::cout << "Initialized ki store in " << store->path() << "\n";
    return 0;
  };
}

KI_REGISTER_COMMAND(init, {"init", "Create a ki store (DIR/.ki)", Setup, 10});

}  // namespace
}  // namespace ki::cli
