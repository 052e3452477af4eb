// ki init [DIR]: create DIR/.ki.
#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "command.h"
#include "ki/catalog.h"
#include "ki/sign.h"

namespace ki::cli {
namespace {

RunFn SetupInit(CLI::App* sub, GlobalOptions* global) {
  auto dir = std::make_shared<std::string>();
  sub->add_option("dir", *dir, "directory to hold the store (default: --store, else $KI_STORE, else .)");
  auto json = std::make_shared<bool>(false);
  sub->add_flag("--json", *json, "print {path} as JSON");
  return [dir, json, global]() -> Result<int> {
    // Without DIR the store is the one later commands select (--store, then
    // KI_STORE), not ./.ki: otherwise `ki --store s init` reports success
    // and the next `ki --store s add` finds no store.
    std::string target = *dir;
    if (!global->store.empty()) {
      std::error_code ec1, ec2;
      if (!target.empty() && std::filesystem::weakly_canonical(target, ec1) !=
                                 std::filesystem::weakly_canonical(global->store, ec2))
        return Status::Usage("ki init: --store " + global->store + " and DIR " + target +
                             " name different stores; give one");
      target = global->store;
    }
    if (target.empty())
      if (const char* e = std::getenv("KI_STORE"); e && *e) target = e;
    if (target.empty()) target = ".";
    KI_ASSIGN_OR_RETURN(StoreOptions opts, StoreOptionsFromEnvironment());
    catalog::RegisterGroupIndex();
    RegisterAttestationIndex();
    KI_ASSIGN_OR_RETURN(auto store, Store::Init(target, opts));
    if (*json) PrintJson({{"path", store->path()}});
    else std::cout << "Initialized ki store in " << store->path() << "\n";
    return 0;
  };
}

KI_REGISTER_COMMAND(init, {"init", "Create a ki store (DIR/.ki)", SetupInit, 10});

}  // namespace
}  // namespace ki::cli
