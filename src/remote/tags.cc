// ListTags: every tag of a remote in one request (or one file read).
#include "ki/remote.h"
#include "remote/target.h"

namespace ki {

Result<std::vector<std::string>> ListTags(const RemoteUrl& remote, const TransferOptions& opts) {
  const bool layout = remote.scheme == RemoteUrl::Scheme::kLayout;
  // No store: the process's Env reads a layout's files.
  Env& env = *Env::Default();
  auto target = layout ? remote::OpenLayout(remote, opts, remote::Access::kPull, env)
                       : remote::OpenRegistry(remote, opts, remote::Access::kPull, env);
  // A layout that does not exist yet holds no tags, as an unknown
  // repository of a registry does.
  if (!target.ok() && layout && target.status().code() == Code::kNotFound) return std::vector<std::string>();
  if (!target.ok()) return target.status();
  KI_ASSIGN_OR_RETURN(auto conn, (*target)->Connect());
  KI_ASSIGN_OR_RETURN(auto tags, conn->ListTags());
  if (!tags) return Status::IOError(remote.str() + " cannot list its tags (no tags/list API)");
  return std::move(*tags);
}

}  // namespace ki
