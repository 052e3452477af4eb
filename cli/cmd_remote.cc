// ki remote add NAME URL [--insecure] | list [--json] | remove NAME
//          | set-url NAME URL [--insecure] | show NAME [--json]
//          | ls REMOTE [PATTERN] [--insecure] [--json]
#include <fnmatch.h>

#include <cstdlib>
#include <iostream>

#include "command.h"
#include "ki/remote.h"

namespace ki::cli {
namespace {

struct RemoteOptions {
  std::string name, url, pattern;
  bool insecure = false;
  bool json = false;
};

// Where a push or pull to `url` takes its credentials (remote.h,
// FindCredentials), in words; never the secret itself.
std::string AuthSource(const RemoteUrl& url) {
  if (url.scheme == RemoteUrl::Scheme::kLayout) return "none (a directory)";
  if (std::getenv("KI_REGISTRY_USER") || std::getenv("KI_REGISTRY_PASSWORD")) return "KI_REGISTRY_USER / KI_REGISTRY_PASSWORD";
  auto c = FindCredentials(url.host);
  if (!c.ok()) return "unreadable docker config (" + c.status().message() + ")";
  if (!c->empty()) return "docker config ($DOCKER_CONFIG/config.json or ~/.docker/config.json)";
  return "anonymous";
}

bool Matches(const std::string& pattern, const RemoteEntry& e) {
  if (pattern.empty()) return true;
  for (const std::string& s : {e.name, e.tag, e.root ? e.root->str() : std::string()}) {
    if (s.empty()) continue;
    if (fnmatch(pattern.c_str(), s.c_str(), 0) == 0 || s.find(pattern) != std::string::npos) return true;
  }
  return false;
}

RunFn SetupRemote(CLI::App* sub, GlobalOptions* g) {
  auto o = std::make_shared<RemoteOptions>();
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
  CLI::App* set_url = sub->add_subcommand("set-url", "Point a remote at another URL (or the same one, with or without --insecure)");
  set_url->add_option("name", o->name, "remote name")->required();
  set_url->add_option("url", o->url, "oci://HOST[:PORT]/REPO or oci-layout:DIR")->required();
  set_url->add_flag("--insecure", o->insecure, "plain http (loopback registries only)");
  set_url->add_flag("--json", o->json, "print {action, name, url, insecure} as JSON");
  CLI::App* show = sub->add_subcommand("show", "A remote's URL, kind, transport, credentials source and what remote.state knows");
  show->add_option("name", o->name, "remote name")->required();
  show->add_flag("--json", o->json, "print a JSON object");
  CLI::App* ls = sub->add_subcommand("ls", "What a remote holds: roots (kind, name, ki digest, tag, pushed-at) and bundles");
  ls->add_option("remote", o->name, "remote name, or a URL (oci://HOST/REPO, oci-layout:DIR)")->required();
  ls->add_option("pattern", o->pattern, "only rows whose name, tag or digest matches (a glob, or a substring)");
  ls->add_flag("--insecure", o->insecure, "plain http (loopback registries only)");
  ls->add_flag("--json", o->json, "print a JSON object");
  return [o, g, add, list, remove, set_url, show, ls]() -> Result<int> {
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
    if (set_url->parsed()) {
      KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadWrite));
      KI_RETURN_IF_ERROR(SetRemoteUrl(*store, {o->name, o->url, o->insecure}));
      if (o->json) PrintJson({{"action", "set-url"}, {"name", o->name}, {"url", o->url}, {"insecure", o->insecure}});
      return 0;
    }
    if (show->parsed()) {
      KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
      KI_ASSIGN_OR_RETURN(auto remotes, ListRemotes(*store));
      const RemoteConfig* rc = nullptr;
      for (const auto& r : remotes)
        if (r.name == o->name) rc = &r;
      if (!rc) return Status::NotFound("no remote named '" + o->name + "' (ki remote list shows them)");
      KI_ASSIGN_OR_RETURN(RemoteUrl url, ParseRemoteUrl(rc->url, rc->insecure));
      const bool layout = url.scheme == RemoteUrl::Scheme::kLayout;
      const std::string kind = layout ? "oci-layout" : "registry";
      const std::string transport = layout ? "files" : url.insecure ? "http (insecure, loopback only)" : "https";
      KI_ASSIGN_OR_RETURN(RemoteStateSummary st, SummarizeRemoteState(*store, url));
      const std::string auth = AuthSource(url);
      if (o->json) {
        Json tags = Json::object();
        for (const auto& [t, m] : st.tags) tags[t] = m.str();
        PrintJson({{"name", rc->name},
                   {"url", rc->url},
                   {"insecure", rc->insecure},
                   {"kind", kind},
                   {"transport", transport},
                   {"auth", auth},
                   {"state", {{"blobs", st.blobs}, {"referrers", st.referrers}, {"packs", st.packs}, {"tags", tags}}}});
        return 0;
      }
      std::cout << "name\t" << rc->name << "\nurl\t" << rc->url << "\nkind\t" << kind << "\ntransport\t" << transport
                << "\nauth\t" << auth << "\n";
      if (layout) {
        std::cout << "state\tnone (a layout answers from its own directory)\n";
      } else {
        std::cout << "state\t" << st.blobs << " blobs, " << st.tags.size() << " tags, " << st.referrers << " referrers, "
                  << st.packs << " bundle packs known to be held\n";
        for (const auto& [t, m] : st.tags) std::cout << "tag\t" << t << "\t" << m.str() << "\n";
      }
      return 0;
    }
    if (ls->parsed()) {
      KI_ASSIGN_OR_RETURN(auto store, OpenStore(*g, OpenMode::kReadOnly));
      KI_ASSIGN_OR_RETURN(RemoteUrl url, LookupRemote(*store, o->name, o->insecure));
      TransferOptions opts;
      KI_ASSIGN_OR_RETURN(RemoteListing listing, ListRemote(url, opts));
      for (const auto& w : listing.warnings) std::cerr << "ki: warning: " << w << "\n";
      if (o->json) {
        Json rows = Json::array();
        for (const RemoteEntry& e : listing.entries) {
          if (!Matches(o->pattern, e)) continue;
          Json j = {{"tag", e.tag}, {"manifest", e.manifest.str()}, {"pushedAt", e.pushed_at}};
          if (e.bundle) {
            j["bundle"] = true;
            j["roots"] = e.roots;
          } else {
            j["root"] = e.root ? e.root->str() : "";
            j["kind"] = e.kind;
            j["name"] = e.name;
            j["inBundle"] = e.in_bundle;
          }
          rows.push_back(std::move(j));
        }
        Json unlisted = Json::array();
        for (const std::string& t : listing.unlisted)
          if (o->pattern.empty() || fnmatch(o->pattern.c_str(), t.c_str(), 0) == 0 || t.find(o->pattern) != std::string::npos)
            unlisted.push_back(t);
        PrintJson({{"remote", url.str()}, {"entries", rows}, {"unlisted", unlisted}, {"httpRequests", listing.http_requests}});
        return 0;
      }
      // KIND  NAME  DIGEST  TAG  PUSHED-AT, bundles as "bundle  TAG  ROOTS roots  INDEX  PUSHED-AT".
      for (const RemoteEntry& e : listing.entries) {
        if (!Matches(o->pattern, e)) continue;
        if (e.bundle) {
          std::cout << "bundle\t" << e.tag << "\t" << e.roots << " roots\t" << e.manifest.str() << "\t"
                    << (e.pushed_at.empty() ? "-" : e.pushed_at) << "\n";
          continue;
        }
        std::cout << (e.kind.empty() ? "-" : e.kind) << "\t" << (e.name.empty() ? "-" : e.name) << "\t"
                  << (e.root ? e.root->str() : "-") << "\t" << (e.in_bundle ? "bundle:" : "") << e.tag << "\t"
                  << (e.pushed_at.empty() ? "-" : e.pushed_at) << "\n";
      }
      for (const std::string& t : listing.unlisted) {
        if (!o->pattern.empty() && fnmatch(o->pattern.c_str(), t.c_str(), 0) != 0 && t.find(o->pattern) == std::string::npos) continue;
        std::cout << "-\t-\t-\t" << t << "\t-\n";
      }
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

KI_REGISTER_COMMAND(remote, {"remote", "Manage remotes (OCI registries and image layouts)", SetupRemote, 80});

}  // namespace
}  // namespace ki::cli
