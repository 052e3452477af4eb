// Remote URLs, tag and title rules, the remote.config table, credentials.
#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "ki/env.h"
#include "ki/json.h"
#include "ki/remote.h"
#include "remote/http.h"
#include "remote/target.h"
#include "remote/state.h"

namespace ki {

namespace {

bool IsTagChar(char c, bool first) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') return true;
  return !first && (c == '.' || c == '-');
}

// Distribution-spec repository name: path components of [a-z0-9]+ joined by
// one '.', '_', '__' or any number of '-', separated by '/'.
bool IsValidRepository(std::string_view repo) {
  if (repo.empty() || repo.size() > 255) return false;
  size_t start = 0;
  while (start <= repo.size()) {
    size_t end = repo.find('/', start);
    if (end == std::string_view::npos) end = repo.size();
    std::string_view comp = repo.substr(start, end - start);
    if (comp.empty()) return false;
    auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
    if (!alnum(comp.front()) || !alnum(comp.back())) return false;
    for (size_t i = 0; i < comp.size(); ++i) {
      char c = comp[i];
      if (alnum(c) || c == '-') continue;
      if (c == '.' && alnum(comp[i + 1])) continue;
      if (c == '_' && (alnum(comp[i + 1]) || (comp[i + 1] == '_' && alnum(comp[i + 2])))) {
        if (comp[i + 1] == '_') ++i;
        continue;
      }
      return false;
    }
    start = end + 1;
  }
  return true;
}

// HOST[:PORT] cut at the port's ':' (a bracketed IPv6 host keeps its
// brackets; `rest` is what follows it, "" or ":PORT" when well formed).
struct HostPort {
  std::string_view host, rest;
};
HostPort SplitHostPort(std::string_view host_port) {
  if (!host_port.empty() && host_port.front() == '[') {
    const size_t close = host_port.find(']');
    if (close == std::string_view::npos) return {host_port, ""};
    return {host_port.substr(0, close + 1), host_port.substr(close + 1)};
  }
  const size_t colon = host_port.find(':');
  if (colon == std::string_view::npos) return {host_port, ""};
  return {host_port.substr(0, colon), host_port.substr(colon)};
}

// HOST is a name, an IPv4 address or a bracketed IPv6 one; PORT, when a
// ':' says there is one, is 1 to 65535 (an empty one went to port 80).
Status CheckHostPort(std::string_view url, const std::string& host_port) {
  const auto bad = [&](const std::string& why) {
    return Status::Usage("'" + std::string(url) + "': bad host '" + host_port + "'" + why);
  };
  const auto [host, rest] = SplitHostPort(host_port);
  if (!host.empty() && host.front() == '[') {
    if (host.back() != ']' || host.size() == 2) return bad(" (an IPv6 address is [ADDRESS])");
    for (char c : host.substr(1, host.size() - 2)) {
      if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') return bad("");
    }
    if (!rest.empty() && rest.front() != ':') return bad("");
  } else {
    if (host.empty()) return Status::Usage("'" + std::string(url) + "': no host before the port");
    for (char c : host) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') return bad("");
    }
  }
  if (rest.empty()) return Status::OK();
  const std::string_view port = rest.substr(1);
  if (port.empty()) {
    return Status::Usage("'" + std::string(url) + "': empty port after ':' (oci://HOST[:PORT]/REPO; leave out "
                         "the ':' for the default port)");
  }
  bool digits = port.size() <= 5;
  for (char c : port) digits = digits && c >= '0' && c <= '9';
  const long n = digits ? std::stol(std::string(port)) : 0;
  if (n < 1 || n > 65535) {
    return Status::Usage("'" + std::string(url) + "': bad port '" + std::string(port) + "' (1 to 65535)");
  }
  return Status::OK();
}

}  // namespace

std::string RemoteUrl::str() const {
  if (scheme == Scheme::kLayout) return "oci-layout:" + dir;
  return "oci://" + host + "/" + repository;
}

std::string RemoteUrl::base() const { return (insecure ? "http://" : "https://") + host; }

bool IsLoopbackHost(std::string_view host_port) {
  const std::string_view host = SplitHostPort(host_port).host;
  if (!host.empty() && host.front() == '[') return host == "[::1]";
  if (host == "localhost") return true;
  if (host.substr(0, 4) != "127.") return false;
  int dots = 0;
  for (char c : host) {
    if (c == '.') dots++;
    else if (c < '0' || c > '9') return false;
  }
  return dots == 3;
}

TransferOptions WithOverallDeadline(TransferOptions opts) {
  if (opts.timeouts.total_s > 0 && !opts.timeouts.end) {
    opts.timeouts.end = std::chrono::steady_clock::now() + std::chrono::seconds(opts.timeouts.total_s);
  }
  return opts;
}

Result<RemoteUrl> ParseRemoteUrl(std::string_view url, bool insecure) {
  RemoteUrl r;
  if (url.substr(0, 11) == "oci-layout:") {
    r.scheme = RemoteUrl::Scheme::kLayout;
    r.dir = std::string(url.substr(11));
    if (r.dir.empty()) return Status::Usage("'" + std::string(url) + "': oci-layout: needs a directory");
    if (insecure) return Status::Usage("--insecure applies to oci:// remotes only");
    return r;
  }
  if (url.substr(0, 6) != "oci://") {
    return Status::Usage("'" + std::string(url) + "' is not a remote URL (oci://HOST[:PORT]/REPO or oci-layout:DIR)");
  }
  std::string_view rest = url.substr(6);
  auto slash = rest.find('/');
  if (slash == std::string_view::npos || slash == 0) {
    return Status::Usage("'" + std::string(url) + "': expected oci://HOST[:PORT]/REPO");
  }
  r.host = std::string(rest.substr(0, slash));
  r.repository = std::string(rest.substr(slash + 1));
  KI_RETURN_IF_ERROR(CheckHostPort(url, r.host));
  for (auto& c : r.host) c = char(std::tolower(static_cast<unsigned char>(c)));
  if (!IsValidRepository(r.repository)) {
    return Status::Usage("'" + std::string(url) + "': bad repository name '" + r.repository +
                         "' (lower-case letters, digits and . _ - separators, components joined by /)");
  }
  if (insecure && !IsLoopbackHost(r.host)) {
    return Status::Usage("--insecure (plain http) is allowed for loopback registries only, not " + r.host);
  }
  r.insecure = insecure;
  return r;
}

bool IsValidTag(std::string_view tag) {
  if (tag.empty() || tag.size() > 128) return false;
  for (size_t i = 0; i < tag.size(); ++i)
    if (!IsTagChar(tag[i], i == 0)) return false;
  return true;
}

std::string SanitizeTag(std::string_view ki_name) {
  std::string out;
  for (size_t i = 0; i < ki_name.size(); ++i) {
    char c = ki_name[i] == '/' ? '.' : ki_name[i];
    out.push_back(IsTagChar(c, out.empty()) ? c : '_');
  }
  if (out.empty()) out = "_";
  if (out.size() > 128) {
    out = out.substr(0, 115) + "-" + Sha256Of(ki_name).hex().substr(0, 12);
  }
  return out;
}

bool IsSafeTitle(std::string_view title) {
  if (title.empty() || title.size() > 255 || title.front() == '/') return false;
  size_t start = 0;
  while (start <= title.size()) {
    size_t end = title.find('/', start);
    if (end == std::string_view::npos) end = title.size();
    std::string_view comp = title.substr(start, end - start);
    if (comp.empty() || comp == "." || comp == "..") return false;
    start = end + 1;
  }
  for (unsigned char c : title)
    if (c < 0x20 || c == 0x7f || c == '\\' || c == ':') return false;
  return true;
}

// ---------------------------------------------------------------- config

Status AddRemote(Store& store, const RemoteConfig& remote) {
  if (remote.name.empty() || remote.name.size() > 100 ||
      remote.name.find_first_of("/: \t\n") != std::string::npos) {
    return Status::Usage("'" + remote.name + "' is not a usable remote name");
  }
  KI_RETURN_IF_ERROR(ParseRemoteUrl(remote.url, remote.insecure).status());
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  KI_ASSIGN_OR_RETURN(auto old, batch->Get(kRemoteConfigTable, remote.name));
  if (old) return Status::InvalidInput("a remote named '" + remote.name + "' exists already (ki remote remove it first)");
  Json v = {{"url", remote.url}, {"insecure", remote.insecure}};
  KI_RETURN_IF_ERROR(batch->Put(kRemoteConfigTable, remote.name, v.dump()));
  return batch->Commit();
}

Status RemoveRemote(Store& store, std::string_view name) {
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  KI_ASSIGN_OR_RETURN(auto old, batch->Get(kRemoteConfigTable, name));
  if (!old) return Status::NotFound("no remote named '" + std::string(name) + "'");
  KI_RETURN_IF_ERROR(batch->Delete(kRemoteConfigTable, name));
  return batch->Commit();
}

Status SetRemoteUrl(Store& store, const RemoteConfig& remote) {
  KI_RETURN_IF_ERROR(ParseRemoteUrl(remote.url, remote.insecure).status());
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  KI_ASSIGN_OR_RETURN(auto old, batch->Get(kRemoteConfigTable, remote.name));
  if (!old) return Status::NotFound("no remote named '" + remote.name + "' (ki remote add creates one)");
  Json v = {{"url", remote.url}, {"insecure", remote.insecure}};
  KI_RETURN_IF_ERROR(batch->Put(kRemoteConfigTable, remote.name, v.dump()));
  return batch->Commit();
}

Result<RemoteStateSummary> SummarizeRemoteState(Store& store, const RemoteUrl& url) {
  RemoteStateSummary out;
  KI_ASSIGN_OR_RETURN(remote::RemoteState st, remote::LoadState(store, url));
  out.blobs = st.blobs.size();
  out.referrers = st.referrers.size();
  out.packs = st.packs.size();
  for (const auto& [tag, m] : st.tags) out.tags.emplace_back(tag, m);
  std::sort(out.tags.begin(), out.tags.end());
  return out;
}

Result<std::vector<RemoteConfig>> ListRemotes(Store& store) {
  std::vector<RemoteConfig> out;
  KI_RETURN_IF_ERROR(store.Scan(kRemoteConfigTable, "", [&](std::string_view k, std::string_view v) {
    Json j = Json::parse(v, nullptr, false);
    RemoteConfig c;
    c.name = std::string(k);
    if (j.is_object()) {
      c.url = j.value("url", std::string());
      c.insecure = j.value("insecure", false);
    }
    out.push_back(std::move(c));
    return true;
  }));
  return out;
}

Result<RemoteUrl> LookupRemote(Store& store, std::string_view name_or_url, bool insecure) {
  KI_ASSIGN_OR_RETURN(auto v, store.Get(kRemoteConfigTable, name_or_url));
  if (v) {
    Json j = Json::parse(*v, nullptr, false);
    if (!j.is_object() || !j.contains("url") || !j["url"].is_string()) {
      return Status::Corruption("remote '" + std::string(name_or_url) + "': malformed configuration");
    }
    return ParseRemoteUrl(j["url"].get<std::string>(), insecure || j.value("insecure", false));
  }
  if (name_or_url.substr(0, 6) == "oci://" || name_or_url.substr(0, 11) == "oci-layout:") {
    return ParseRemoteUrl(name_or_url, insecure);
  }
  return Status::NotFound("no remote named '" + std::string(name_or_url) + "' (ki remote list shows them)");
}

// ---------------------------------------------------------------- credentials

Result<Credentials> CredentialsFromDockerConfig(std::string_view config_json, std::string_view host) {
  Json j = Json::parse(config_json, nullptr, false);
  if (!j.is_object()) return Status::InvalidInput("docker config: not a JSON object");
  Credentials c;
  if (!j.contains("auths") || !j["auths"].is_object()) return c;
  const std::string h(host);
  for (const std::string& key : {h, "https://" + h, "http://" + h, "https://" + h + "/v2/", "https://" + h + "/v1/"}) {
    if (!j["auths"].contains(key) || !j["auths"][key].is_object()) continue;
    const Json& e = j["auths"][key];
    if (e.contains("auth") && e["auth"].is_string() && !e["auth"].get<std::string>().empty()) {
      std::string decoded;
      if (!remote::Base64Decode(e["auth"].get<std::string>(), &decoded) || decoded.find(':') == std::string::npos) {
        return Status::InvalidInput("docker config: the auth entry for " + h + " is not base64 of user:password");
      }
      c.username = decoded.substr(0, decoded.find(':'));
      c.password = decoded.substr(decoded.find(':') + 1);
      return c;
    }
    if (e.contains("username") && e["username"].is_string()) c.username = e["username"];
    if (e.contains("password") && e["password"].is_string()) c.password = e["password"];
    if (!c.empty()) return c;
  }
  return c;
}

// The public call reads the docker config of the process's user through
// the process's Env; push and pull go through FindCredentials(env, host).
Result<Credentials> FindCredentials(std::string_view host) { return remote::FindCredentials(*Env::Default(), host); }

Result<Credentials> remote::FindCredentials(Env& env_ref, std::string_view host) {
  const char* user = std::getenv("KI_REGISTRY_USER");
  const char* pass = std::getenv("KI_REGISTRY_PASSWORD");
  if ((user && *user) || (pass && *pass)) return Credentials{user ? user : "", pass ? pass : ""};
  std::string path;
  if (const char* dc = std::getenv("DOCKER_CONFIG"); dc && *dc) {
    path = std::string(dc) + "/config.json";
  } else if (const char* home = std::getenv("HOME"); home && *home) {
    path = std::string(home) + "/.docker/config.json";
  }
  Env* env = &env_ref;
  if (path.empty() || !env->Exists(path)) return Credentials{};
  KI_ASSIGN_OR_RETURN(std::string text, env->ReadFile(path, 1 << 20));
  auto c = CredentialsFromDockerConfig(text, host);
  if (!c.ok()) return c.status().WithContext(path);
  return c;
}

}  // namespace ki
