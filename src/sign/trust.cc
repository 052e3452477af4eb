// The local trust list ($KI_HOME/trust.json; docs/format.md, "Trust").
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <ctime>
#include <map>
#include <memory>

#include "json/fields.h"
#include "ki/sign.h"
#include "sign/internal.h"
#include "ki/utc.h"

namespace ki {

namespace sign_internal {

}  // namespace sign_internal

std::string_view RoleName(Role r) { return r == Role::kRunner ? "runner" : "reviewer"; }

std::optional<Role> ParseRole(std::string_view s) {
  if (s == "runner") return Role::kRunner;
  if (s == "reviewer") return Role::kReviewer;
  return std::nullopt;
}

namespace {

constexpr std::string_view kTrustFormat = "ki-trust/v1";

// `path`: the file and the entry, "PATH: keys[2]".
Result<TrustEntry> EntryFromJson(const Json& j, const std::string& path, bool revoked) {
  if (!j.is_object() || !j.contains("publicKey") || !j["publicKey"].is_string() || !j.contains("name") ||
      !j["name"].is_string()) {
    return Status::InvalidInput(path + ": a trust entry lacks publicKey or name");
  }
  KI_ASSIGN_OR_RETURN(PublicKey key, PublicKey::Parse(j["publicKey"].get<std::string>()));
  TrustEntry e;
  e.key = key;
  e.keyid = key.KeyId();
  if (j.contains("keyid") && j["keyid"] != e.keyid) {
    return Status::InvalidInput(path + ": entry `" + j["name"].get<std::string>() +
                                "`: keyid does not match its public key");
  }
  e.name = j["name"].get<std::string>();
  // value() would throw on a role of another type ("role": 1, hand-edited).
  KI_ASSIGN_OR_RETURN(std::string role, GetString(j, "role", path, "reviewer"));
  auto r = ParseRole(role);
  if (!r) return Status::InvalidInput(path + ": unknown role `" + role + "`");
  e.role = *r;
  KI_ASSIGN_OR_RETURN(e.when, GetString(j, revoked ? "removedAt" : "addedAt", path));
  return e;
}

Json EntryToJson(const TrustEntry& e, bool revoked) {
  return {{"keyid", e.keyid},
          {"publicKey", e.key.ToString()},
          {"name", e.name},
          {"role", std::string(RoleName(e.role))},
          {revoked ? "removedAt" : "addedAt", e.when}};
}

}  // namespace

Result<TrustStore> TrustStore::Load(const std::string& path, Env* env) {
  TrustStore ts;
  ts.path_ = path;
  ts.env_ = env ? env : Env::Default();
  auto opened = ts.env_->NewSequentialFile(path, SequentialFileOptions{.regular_only = true});
  if (!opened.ok()) {
    if (opened.status().IsNotFound()) return ts;  // no file yet: nothing is trusted
    // Anything else (no permission, not a regular file) is not "no trust
    // list": `ki trust add` would otherwise replace a list it could not read.
    return opened.status();
  }
  // Checked on the open file, so the file checked is the file read.
  KI_ASSIGN_OR_RETURN(FileStat st, (*opened)->Stat());
  // Whoever can write the trust list decides what counts as verified: its
  // owner (root aside) and, through the mode, its group and others. A list
  // someone else made where ours was expected (a shared or world-writable
  // KI_HOME) is refused, as a secret key file of theirs is.
  if ((st.mode & 022) != 0) {
    return Status::IOError("refusing to use the trust list " + path +
                           ": it is writable by group or others; run `chmod go-w " + path + "`");
  }
  if (st.uid != uint32_t(::geteuid()) && st.uid != 0) {
    return Status::IOError("refusing to use the trust list " + path + ": it belongs to another user (uid " +
                           std::to_string(st.uid) + "), who decides what it trusts");
  }
  KI_ASSIGN_OR_RETURN(std::string text, ReadAll(**opened, path, 16 << 20));
  ParseLimits limits;
  limits.max_bytes = 16 << 20;
  KI_ASSIGN_OR_RETURN(Json doc, ParseDocument(text, DocFormat::kJson, path, limits));
  if (!doc.is_object() || !doc.contains("format") || doc["format"] != kTrustFormat) {
    return Status::InvalidInput(path + ": not a ki trust list, or a version this ki does not know");
  }
  // Where each key id and trusted name was first seen: a key listed twice
  // (two roles, or trusted and revoked at once) has no one meaning, and
  // which entry won would depend on the order of the file.
  std::map<std::string, std::string> seen_keyid, seen_name;
  for (const char* list : {"keys", "revoked"}) {
    if (!doc.contains(list)) continue;
    if (!doc[list].is_array()) return Status::InvalidInput(path + ": `" + list + "` is not an array");
    const bool revoked = list[0] == 'r';
    size_t i = 0;
    for (const Json& j : doc[list]) {
      const std::string entry = std::string(list) + "[" + std::to_string(i++) + "]";
      const std::string where = path + ": " + entry;
      KI_ASSIGN_OR_RETURN(TrustEntry e, EntryFromJson(j, where, revoked));
      if (auto [it, fresh] = seen_keyid.emplace(e.keyid, entry); !fresh) {
        return Status::InvalidInput(where + ": key " + ShortKeyId(e.keyid) + " is also listed at " + it->second +
                                    " (a key is trusted once, or revoked)");
      }
      if (!revoked) {
        if (auto [it, fresh] = seen_name.emplace(e.name, entry); !fresh) {
          return Status::InvalidInput(where + ": the name `" + e.name + "` is also trusted at " + it->second +
                                      " for another key");
        }
      }
      (revoked ? ts.revoked_ : ts.trusted_).push_back(std::move(e));
    }
  }
  return ts;
}

namespace {

// An exclusive flock(2) on a lock file, released when destroyed (closing
// the descriptor releases it, also when the process dies, so a killed ki
// never leaves the list locked). The lock file is never removed: removing
// it would let a second process lock a new file while the first holds the
// old one. Plain POSIX rather than Env: a lock is no data that a fault
// could lose, and Env has no locking.
class FileLock {
 public:
  explicit FileLock(int fd) : fd_(fd) {}
  ~FileLock() { ::close(fd_); }
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_;
};

Result<std::shared_ptr<const FileLock>> LockExclusive(const std::string& path) {
  // O_NOFOLLOW: a link put there by someone else is not followed to a file of ours.
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return ErrnoStatus("open the lock file", path, errno);
  auto lock = std::make_shared<const FileLock>(fd);
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno != EINTR) return ErrnoStatus("lock", path, errno);
  }
  return lock;
}

}  // namespace

Result<TrustStore> TrustStore::LoadForUpdate(const std::string& path, Env* env) {
  Env* e = env ? env : Env::Default();
  size_t slash = path.rfind('/');
  KI_RETURN_IF_ERROR(e->CreateDirs(slash == std::string::npos ? "." : path.substr(0, slash)));
  // The lock is taken before the read: the list read is the latest saved,
  // and no other update saves until this one is done.
  KI_ASSIGN_OR_RETURN(auto lock, LockExclusive(path + ".lock"));
  KI_ASSIGN_OR_RETURN(TrustStore ts, Load(path, env));
  ts.update_lock_ = std::move(lock);
  return ts;
}

Result<TrustStore> TrustStore::LoadDefault() {
  auto home = KiHome();
  if (!home.ok()) {
    TrustStore empty;
    return empty;
  }
  return Load(DefaultPath(*home));
}

const TrustEntry* TrustStore::FindTrusted(std::string_view keyid) const {
  for (const auto& e : trusted_)
    if (e.keyid == keyid) return &e;
  return nullptr;
}

const TrustEntry* TrustStore::FindRevoked(std::string_view keyid) const {
  for (const auto& e : revoked_)
    if (e.keyid == keyid) return &e;
  return nullptr;
}

Result<bool> TrustStore::Add(const PublicKey& key, std::string_view name, Role role) {
  if (!IsValidKeyName(name)) {
    return Status::InvalidInput("trust name `" + std::string(name) +
                                "`: use 1-64 letters, digits, '.', '_' or '-', not starting with '.' or '-'");
  }
  std::string keyid = key.KeyId();
  for (const auto& e : trusted_) {
    if (e.name == name && e.keyid != keyid) {
      return Status::InvalidInput("the name `" + std::string(name) + "` is already trusted for key " +
                                  ShortKeyId(e.keyid) + " (remove it first)");
    }
  }
  revoked_.erase(std::remove_if(revoked_.begin(), revoked_.end(), [&](const auto& e) { return e.keyid == keyid; }),
                 revoked_.end());
  for (auto& e : trusted_) {
    if (e.keyid == keyid) {
      e.name = std::string(name);
      e.role = role;
      return false;
    }
  }
  trusted_.push_back({key, keyid, std::string(name), role, UtcNow()});
  return true;
}

namespace {

// `who` is the entry's name, key id, or a key id prefix of 8+ hex digits.
bool Names(const TrustEntry& e, std::string_view who) {
  const bool prefix = who.size() >= 8 && e.keyid.compare(0, who.size(), who) == 0;
  return e.name == who || e.keyid == who || prefix;
}

}  // namespace

std::vector<const TrustEntry*> TrustStore::RevokedMatching(std::string_view who) const {
  std::vector<const TrustEntry*> out;
  for (const auto& e : revoked_)
    if (Names(e, who)) out.push_back(&e);
  return out;
}

Result<TrustEntry> TrustStore::Remove(std::string_view who) {
  std::vector<size_t> hits;
  for (size_t i = 0; i < trusted_.size(); ++i) {
    if (Names(trusted_[i], who)) hits.push_back(i);
  }
  if (hits.empty()) return Status::NotFound("no trusted key named or with key id `" + std::string(who) + "`");
  if (hits.size() > 1) {
    std::string list;
    for (size_t i : hits) list += "\n  " + ShortKeyId(trusted_[i].keyid) + "  " + trusted_[i].name;
    std::string msg = "`";
    msg.append(who).append("` matches several trusted keys:").append(list);
    return Status::Ambiguous(std::move(msg));
  }
  TrustEntry e = trusted_[hits[0]];
  trusted_.erase(trusted_.begin() + long(hits[0]));
  e.when = UtcNow();
  revoked_.erase(std::remove_if(revoked_.begin(), revoked_.end(), [&](const auto& r) { return r.keyid == e.keyid; }),
                 revoked_.end());
  revoked_.push_back(e);
  return e;
}

Status TrustStore::Save() const {
  if (path_.empty()) return Status::IOError("the trust list has no file (set KI_HOME)");
  Json keys = Json::array(), revoked = Json::array();
  for (const auto& e : trusted_) keys.push_back(EntryToJson(e, false));
  for (const auto& e : revoked_) revoked.push_back(EntryToJson(e, true));
  Json doc = {{"format", kTrustFormat}, {"keys", keys}, {"revoked", revoked}};
  size_t slash = path_.rfind('/');
  std::string dir = slash == std::string::npos ? "." : path_.substr(0, slash);
  Env* env = env_ ? env_ : Env::Default();
  KI_RETURN_IF_ERROR(env->CreateDirs(dir));
  KI_RETURN_IF_ERROR(env->WriteFileAtomic(path_, doc.dump(2) + "\n", Durability::kSync));
  // After the rename the new list is what every reader sees; only its
  // durability is in doubt. Saying so tells the user that the change was
  // made and that running the command again (which saves again) is safe.
  return env->SyncDir(dir).WithContext("the trust list " + path_ +
                                       " was changed, but may not survive a crash (run the command again)");
}

}  // namespace ki
