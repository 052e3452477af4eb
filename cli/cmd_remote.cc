// ki remote add NAME URL [--insecure] | list [--json] | remove NAME
#include <iostream>

#include "command.h"
#include "ki/remote.h"

namespace ki::cli {
namespace {

struct Options {
  std::string name, url;
  bool insecure = false;
  bool json = false;
};

RunFn Setup(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<Options>();
  sub->require_subcommand(1);
  CLI::App* add = sub->add_subcommand("add", "Add a remote: oci://HOST[:PORT]/REPO or oci-layout:DIR");
  add->add_option("name", o->name, "remote name")->required();
  add->add_option("url", o->url, "oci://HOST[:PORT]/REPO or oci-layout:DIR")->required();
  add->add_flag("--insecure", o->insecure, "plain http (loopback registries only)");
  add->add_flag("--json", o->json, "print {action, name, url, insecure} as JSON");
  CLI::App* list = sub->add_subcommand("list", "List remotes");
  list->add_flag("--json", o->json, "print a JSON array");
  CLI::App* remove = sub->add_subcommand("remove", "Remove a remote");
  remove->add_option("name", o->name, "remote name")->required();
  remove->add_flag("--json", o->json, "print {action, name} as JSON");
  return [o, g, add, list, remove]() -> Result<int> {
    if (add->parsed()) {
      KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
      KI_RETURN_IF_ERROR(AddRemote(*store, {o->name, o->url, o->insecure}));
      if (o->json) PrintJson({{"action", "added"}, {"name", o->name}, {"url", o->url}, {"insecure", o->insecure}});
      return 0;
    }
    if (remove->parsed()) {
      KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
      KI_RETURN_IF_ERROR(RemoveRemote(*store, o->name));
      if (o->json) PrintJson({{"action", "removed"}, {"name", o->name}});
      return 0;
    }
    (void)list;
    KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
    KI_ASSIGN_OR_RETURN(auto remotes, ListRemotes(*store));
    if (o->json) {
      Json arr = Json::array();
      for (const auto& r : remotes) arr.push_back({{"name", r.name}, {"url", r.url}, {"insecure", r.insecure}});
      PrintJson(arr);
      return 0;
    }
    for (const auto& r : remotes) std::cout << r.name << "\t" << r.url << (r.insecure ? "\tinsecure" : "") << "\n";
    return 0;
  };
}

KI_REGISTER_COMMAND(remote, {"remote", "Manage remotes (OCI registries and image layouts)", Setup, 80});

}  // namespace
}  // namespace ki::cli
