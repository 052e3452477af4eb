// Ed25519 key pairs and the local key directory (docs/format.md, "Secret
// key file").
//
// Secret key files go through Env like every other file, with what a secret
// needs: created with mode 0600 (AtomicFileOptions), never replacing a file,
// and read in pieces straight into sodium_malloc memory (SequentialFile), so
// that a secret is neither readable by others for an instant nor passes
// through ordinary heap memory.
#include <fcntl.h>
#include <signal.h>
#include <sodium.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ki/sign.h"
#include "sign/internal.h"
#include "util/process.h"

namespace ki {

using sign_internal::EnsureSodium;

static_assert(crypto_sign_PUBLICKEYBYTES == 32 && crypto_sign_SEEDBYTES == 32 && crypto_sign_BYTES == 64);

// ---------------------------------------------------------------- PublicKey

Result<PublicKey> PublicKey::Parse(std::string_view text) {
  constexpr std::string_view kPrefix = "ed25519:";
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' ')) text.remove_suffix(1);
  if (text.substr(0, kPrefix.size()) != kPrefix) {
    return Status::InvalidInput("a public key is written `ed25519:<base64 of 32 bytes>` (as `ki key export` prints it)");
  }
  KI_ASSIGN_OR_RETURN(std::string raw, Base64Decode(text.substr(kPrefix.size()), "the public key"));
  if (raw.size() != 32) {
    return Status::InvalidInput("the public key has " + std::to_string(raw.size()) + " bytes; Ed25519 keys have 32");
  }
  PublicKey k;
  std::memcpy(k.bytes.data(), raw.data(), 32);
  return k;
}

std::string PublicKey::ToString() const {
  return "ed25519:" + Base64Encode({reinterpret_cast<const char*>(bytes.data()), bytes.size()});
}

std::string PublicKey::KeyId() const {
  return Sha256Of({reinterpret_cast<const char*>(bytes.data()), bytes.size()}).hex();
}

std::string ShortKeyId(std::string_view keyid) { return std::string(keyid.substr(0, 16)); }

// ---------------------------------------------------------------- SigningKey

std::string SigningKey::Sign(std::string_view message) const {
  std::string sig(crypto_sign_BYTES, '\0');
  crypto_sign_detached(reinterpret_cast<unsigned char*>(sig.data()), nullptr,
                       reinterpret_cast<const unsigned char*>(message.data()), message.size(), secret_.data());
  return sig;
}

Result<SigningKey> SigningKey::FromSeed(std::string name, const uint8_t* seed32) {
  EnsureSodium();
  SecretBytes sk(crypto_sign_SECRETKEYBYTES);
  PublicKey pk;
  if (crypto_sign_seed_keypair(pk.bytes.data(), sk.data(), seed32) != 0) {
    return Status::InvalidInput("cannot derive an Ed25519 key pair from this seed");
  }
  return SigningKey(std::move(name), pk, std::move(sk));
}

SigningKey SigningKey::Generate(std::string name) {
  EnsureSodium();
  SecretBytes seed(crypto_sign_SEEDBYTES);
  randombytes_buf(seed.data(), seed.size());
  return std::move(FromSeed(std::move(name), seed.data())).value();
}

// ---------------------------------------------------------------- home

Result<std::string> KiHome() {
  if (const char* h = std::getenv("KI_HOME"); h && *h) return std::string(h);
  if (const char* x = std::getenv("XDG_CONFIG_HOME"); x && *x) return std::string(x) + "/ki";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.config/ki";
  return Status::IOError("ki cannot tell where keys and trust live: set KI_HOME (or HOME)");
}

Result<Keyring> Keyring::Default() {
  KI_ASSIGN_OR_RETURN(std::string home, KiHome());
  return Keyring(home + "/keys");
}

bool IsValidKeyName(std::string_view name) {
  if (name.empty() || name.size() > 64 || name[0] == '.' || name[0] == '-') return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '_' ||
              c == '-';
    if (!ok) return false;
  }
  return true;
}

namespace {

constexpr std::string_view kKeyFileMagic = "ki-secret-key v1";
constexpr std::string_view kProtectionPassphrase = "argon2id13-xsalsa20poly1305";
constexpr size_t kMaxKeyFile = 4096;
constexpr size_t kSaltBytes = crypto_pwhash_SALTBYTES;
constexpr size_t kNonceBytes = crypto_secretbox_NONCEBYTES;
constexpr size_t kSealedSeedBytes = crypto_secretbox_MACBYTES + crypto_sign_SEEDBYTES;

// Appends text to secret memory; the file image of a key is built here.
class SecretText {
 public:
  explicit SecretText(size_t cap) : buf_(cap) {}
  void Add(std::string_view s) {
    if (n_ + s.size() > buf_.size()) return void(overflow_ = true);
    std::memcpy(buf_.data() + n_, s.data(), s.size());
    n_ += s.size();
  }
  // Base64 of secret bytes, encoded straight into the buffer.
  void AddBase64(const uint8_t* p, size_t len) {
    size_t enc = sodium_base64_ENCODED_LEN(len, sodium_base64_VARIANT_ORIGINAL);
    if (n_ + enc > buf_.size()) return void(overflow_ = true);
    sodium_bin2base64(reinterpret_cast<char*>(buf_.data() + n_), enc, p, len, sodium_base64_VARIANT_ORIGINAL);
    n_ += enc - 1;
  }
  bool overflow() const { return overflow_; }
  std::string_view view() const { return {reinterpret_cast<const char*>(buf_.data()), n_}; }

 private:
  SecretBytes buf_;
  size_t n_ = 0;
  bool overflow_ = false;
};

Status MakePrivateDir(Env* env, const std::string& dir) {
  // The home may be shared with other programs; only the keys directory is 0700.
  size_t slash = dir.rfind('/');
  if (slash != std::string::npos && slash > 0) {
    KI_RETURN_IF_ERROR(env->CreateDirs(dir.substr(0, slash)));
  }
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return ErrnoStatus("mkdir", dir, errno);
  struct stat st{};
  if (::stat(dir.c_str(), &st) != 0) return ErrnoStatus("stat", dir, errno);
  if (!S_ISDIR(st.st_mode)) return Status::IOError(dir + " is not a directory");
  return Status::OK();
}

// Creates `path` with mode 0600 from the first byte on, durably, refusing
// to replace an existing file (Env: temporary file, fsync, link, dir fsync).
// Any failure leaves no file at `path`: one whose name may not survive a
// crash (its directory's fsync failed) is removed again, so that the failed
// command has made no key and a retry is not told the key already exists.
Status WriteNewSecretFile(Env* env, const std::string& path, std::string_view data) {
  KI_ASSIGN_OR_RETURN(auto file, env->NewAtomicFile(path, AtomicFileOptions{.mode = 0600, .replace = false}));
  KI_RETURN_IF_ERROR(file->Append(data));
  Status st = file->Commit(Durability::kSync);
  if (st.code() == Code::kInvalidInput) return Status::InvalidInput("a key file already exists at " + path);
  KI_RETURN_IF_ERROR(st);
  size_t slash = path.rfind('/');
  Status synced = env->SyncDir(slash == std::string::npos ? "." : path.substr(0, slash));
  if (!synced.ok()) {
    (void)env->RemoveFile(path);
    return synced.WithContext("the key was not kept");
  }
  return Status::OK();
}

// A key file read into secret memory; the fields view into `text`.
struct KeyFile {
  SecretBytes text;
  std::string path;
  std::string_view name, keyid, pub, protection, opslimit, memlimit, salt, nonce, secret;
};

enum class PermissionCheck { kEnforce, kSkip };

Result<KeyFile> ReadKeyFile(Env* env, const std::string& path, PermissionCheck check) {
  auto opened = env->NewSequentialFile(path, SequentialFileOptions{.no_follow = true, .regular_only = true});
  if (!opened.ok()) {
    if (opened.status().IsNotFound()) return Status::NotFound("no key file " + path);
    return opened.status();
  }
  SequentialFile& file = **opened;
  // Stat of the open file: the file checked is the file read.
  KI_ASSIGN_OR_RETURN(FileStat st, file.Stat());
  if (!st.regular) return Status::IOError("refusing to use " + path + ": not a regular file");
  if (check == PermissionCheck::kEnforce) {
    if ((st.mode & 077) != 0) {
      char mode[16];
      std::snprintf(mode, sizeof mode, "%04o", unsigned(st.mode & 07777));
      return Status::IOError("refusing to use the secret key file " + path +
                             ": it is accessible by group or others (mode " + mode + "); run `chmod 600 " + path +
                             "` if no one else could have read it, else generate a new key");
    }
    if (st.uid != ::geteuid()) {
      return Status::IOError("refusing to use the secret key file " + path + ": it belongs to another user");
    }
  }
  if (st.size > kMaxKeyFile) return Status::InvalidInput(path + ": too large for a ki key file");
  // Read straight into locked memory: the secret never passes through an
  // ordinary buffer.
  KeyFile kf{SecretBytes(kMaxKeyFile), path};
  size_t n = 0;
  while (n < kMaxKeyFile) {
    KI_ASSIGN_OR_RETURN(size_t r, file.Read(reinterpret_cast<char*>(kf.text.data()) + n, kMaxKeyFile - n));
    if (r == 0) break;
    n += r;
  }
  kf.text.Truncate(n);
  std::string_view all = kf.text.view();
  size_t eol = all.find('\n');
  if (all.substr(0, eol) != kKeyFileMagic) {
    return Status::InvalidInput(path + ": not a ki secret key file, or a version this ki does not know");
  }
  all.remove_prefix(eol == std::string_view::npos ? all.size() : eol + 1);
  while (!all.empty()) {
    eol = all.find('\n');
    std::string_view line = all.substr(0, eol);
    all.remove_prefix(eol == std::string_view::npos ? all.size() : eol + 1);
    if (line.empty()) continue;
    size_t colon = line.find(": ");
    if (colon == std::string_view::npos) return Status::InvalidInput(path + ": malformed line in key file");
    std::string_view k = line.substr(0, colon), v = line.substr(colon + 2);
    std::string_view* slot = k == "name"         ? &kf.name
                             : k == "keyid"      ? &kf.keyid
                             : k == "public"     ? &kf.pub
                             : k == "protection" ? &kf.protection
                             : k == "opslimit"   ? &kf.opslimit
                             : k == "memlimit"   ? &kf.memlimit
                             : k == "salt"       ? &kf.salt
                             : k == "nonce"      ? &kf.nonce
                             : k == "secret"     ? &kf.secret
                                                 : nullptr;
    if (slot) *slot = v;  // unknown fields are ignored (written by a newer v1 ki)
  }
  if (kf.pub.empty() || kf.secret.empty() || kf.protection.empty()) {
    return Status::InvalidInput(path + ": key file lacks public, protection or secret");
  }
  return kf;
}

Result<KeyInfo> InfoOf(const KeyFile& kf, std::string_view name) {
  auto pk = PublicKey::Parse(kf.pub);
  if (!pk.ok()) return pk.status().WithContext(kf.path);
  if (!kf.keyid.empty() && kf.keyid != pk->KeyId()) {
    return Status::InvalidInput(kf.path + ": the key id does not match the public key (the file is damaged)");
  }
  KeyInfo info;
  info.name = std::string(name);
  info.key = *pk;
  info.path = kf.path;
  if (kf.protection == "none") info.protection = KeyProtection::kNone;
  else if (kf.protection == kProtectionPassphrase) info.protection = KeyProtection::kPassphrase;
  else return Status::InvalidInput(kf.path + ": unknown key protection `" + std::string(kf.protection) + "`");
  return info;
}

bool ParseU64(std::string_view s, uint64_t* out) {
  if (s.empty() || s.size() > 19) return false;
  uint64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  *out = v;
  return true;
}

// Derives the secretbox key from a passphrase (Argon2id).
Result<SecretBytes> DeriveKey(const SecretBytes& pass, const uint8_t* salt, uint64_t ops, uint64_t mem) {
  SecretBytes key(crypto_secretbox_KEYBYTES);
  if (crypto_pwhash(key.data(), key.size(), reinterpret_cast<const char*>(pass.data()), pass.size(), salt, ops,
                    size_t(mem), crypto_pwhash_ALG_ARGON2ID13) != 0) {
    return Status::IOError("not enough memory to derive the key from the passphrase (Argon2id needs " +
                           std::to_string(mem >> 20) + " MiB)");
  }
  return key;
}

}  // namespace

Result<KeyInfo> Keyring::Generate(std::string_view name, KeyProtection protection, const PassphraseSource& pass) {
  EnsureSodium();
  if (!IsValidKeyName(name)) {
    return Status::InvalidInput("key name `" + std::string(name) +
                                "`: use 1-64 letters, digits, '.', '_' or '-', not starting with '.' or '-'");
  }
  std::string path = PathOf(name);
  if (env_->Exists(path)) {
    return Status::InvalidInput("a key named `" + std::string(name) + "` already exists (" + path + ")");
  }
  SecretBytes seed(crypto_sign_SEEDBYTES);
  randombytes_buf(seed.data(), seed.size());
  KI_ASSIGN_OR_RETURN(SigningKey key, SigningKey::FromSeed(std::string(name), seed.data()));

  SecretText text(kMaxKeyFile);
  text.Add(kKeyFileMagic);
  text.Add("\nname: " + std::string(name));
  text.Add("\nkeyid: " + key.public_key().KeyId());
  text.Add("\npublic: " + key.public_key().ToString());
  if (protection == KeyProtection::kPassphrase) {
    KI_ASSIGN_OR_RETURN(SecretBytes phrase, pass("passphrase for the new key " + std::string(name), true));
    if (phrase.size() == 0) {
      return Status::InvalidInput("empty passphrase: give one, or use --no-passphrase for an unencrypted key");
    }
    uint8_t salt[kSaltBytes], nonce[kNonceBytes];
    randombytes_buf(salt, sizeof salt);
    randombytes_buf(nonce, sizeof nonce);
    const uint64_t ops = crypto_pwhash_OPSLIMIT_INTERACTIVE, mem = crypto_pwhash_MEMLIMIT_INTERACTIVE;
    KI_ASSIGN_OR_RETURN(SecretBytes box_key, DeriveKey(phrase, salt, ops, mem));
    std::string sealed(kSealedSeedBytes, '\0');  // ciphertext: not secret
    crypto_secretbox_easy(reinterpret_cast<unsigned char*>(sealed.data()), seed.data(), seed.size(), nonce,
                          box_key.data());
    text.Add("\nprotection: " + std::string(kProtectionPassphrase));
    text.Add("\nopslimit: " + std::to_string(ops));
    text.Add("\nmemlimit: " + std::to_string(mem));
    text.Add("\nsalt: " + Base64Encode({reinterpret_cast<const char*>(salt), sizeof salt}));
    text.Add("\nnonce: " + Base64Encode({reinterpret_cast<const char*>(nonce), sizeof nonce}));
    text.Add("\nsecret: " + Base64Encode(sealed));
  } else {
    text.Add("\nprotection: none\nsecret: ");
    text.AddBase64(seed.data(), seed.size());
  }
  text.Add("\n");
  if (text.overflow()) return Status::InvalidInput("key file too large");
  KI_RETURN_IF_ERROR(MakePrivateDir(env_, dir_));
  KI_RETURN_IF_ERROR(WriteNewSecretFile(env_, path, text.view()));
  return KeyInfo{std::string(name), key.public_key(), protection, path};
}

Result<KeyInfo> Keyring::Info(std::string_view name) {
  if (!IsValidKeyName(name)) return Status::NotFound("no key named `" + std::string(name) + "`");
  auto kf = ReadKeyFile(env_, PathOf(name), PermissionCheck::kSkip);
  if (!kf.ok() && kf.status().IsNotFound()) {
    return Status::NotFound("no key named `" + std::string(name) + "` in " + dir_ + " (see `ki key list`)");
  }
  if (!kf.ok()) return kf.status();
  return InfoOf(*kf, name);
}

Result<std::vector<KeyInfo>> Keyring::List() {
  std::vector<KeyInfo> out;
  if (!env_->IsDirectory(dir_)) return out;
  KI_ASSIGN_OR_RETURN(auto names, env_->ListDir(dir_));
  for (const auto& f : names) {
    if (f.size() <= 4 || f.substr(f.size() - 4) != ".key") continue;
    std::string name = f.substr(0, f.size() - 4);
    if (!IsValidKeyName(name)) continue;
    KI_ASSIGN_OR_RETURN(KeyInfo info, Info(name));
    out.push_back(std::move(info));
  }
  return out;
}

Result<std::vector<std::string>> Keyring::RemoveStaleTemporaries() {
  std::vector<std::string> removed;
  if (!env_->IsDirectory(dir_)) return removed;
  KI_ASSIGN_OR_RETURN(auto names, env_->ListDir(dir_));
  for (const auto& f : names) {
    // <key name>.key.tmp-<pid>-<counter>: what Env::NewAtomicFile names the
    // temporary of <key name>.key. Nothing else in the directory is touched.
    constexpr std::string_view kInfix = ".key.tmp-";
    const size_t at = f.rfind(kInfix);
    if (at == std::string::npos || !IsValidKeyName(std::string_view(f).substr(0, at))) continue;
    std::string_view rest = std::string_view(f).substr(at + kInfix.size());
    const size_t dash = rest.find('-');
    uint64_t pid = 0, counter = 0;
    if (dash == std::string_view::npos || !ParseU64(rest.substr(0, dash), &pid) ||
        !ParseU64(rest.substr(dash + 1), &counter) || pid == 0 || pid > uint64_t(INT32_MAX)) {
      continue;
    }
    // Only a writer that is gone (a writer in another pid namespace taken
    // for dead would see its key write fail, leaving no key).
    if (!ProcessIsGone(int64_t(pid))) continue;
    const std::string path = dir_ + "/" + f;
    Status st = env_->RemoveFile(path);
    if (!st.ok()) return st.WithContext("a temporary key file left by a ki that did not finish");
    removed.push_back(path);
  }
  if (!removed.empty()) {
    // The removal must last: the file may hold a secret in clear.
    KI_RETURN_IF_ERROR(env_->SyncDir(dir_));
  }
  return removed;
}

Result<std::optional<KeyInfo>> Keyring::FindByKeyId(std::string_view keyid) {
  KI_ASSIGN_OR_RETURN(auto keys, List());
  for (auto& k : keys) {
    if (k.key.KeyId() == keyid) return std::optional<KeyInfo>(std::move(k));
  }
  return std::optional<KeyInfo>();
}

Result<SigningKey> Keyring::Load(std::string_view name, const PassphraseSource& pass) {
  EnsureSodium();
  if (!IsValidKeyName(name)) return Status::NotFound("no key named `" + std::string(name) + "`");
  auto read = ReadKeyFile(env_, PathOf(name), PermissionCheck::kEnforce);
  if (!read.ok() && read.status().IsNotFound()) {
    return Status::NotFound("no key named `" + std::string(name) + "` in " + dir_ + " (see `ki key list`)");
  }
  if (!read.ok()) return read.status();
  KeyFile& kf = *read;
  KI_ASSIGN_OR_RETURN(KeyInfo info, InfoOf(kf, name));
  SecretBytes seed(crypto_sign_SEEDBYTES);
  if (info.protection == KeyProtection::kNone) {
    size_t n = 0;
    if (!sign_internal::DecodeBase64Into(kf.secret, seed.data(), seed.size(), &n) || n != seed.size()) {
      return Status::InvalidInput(kf.path + ": the secret is not 32 bytes of base64 (the file is damaged)");
    }
  } else {
    uint64_t ops = 0, mem = 0;
    if (!ParseU64(kf.opslimit, &ops) || !ParseU64(kf.memlimit, &mem) || ops < crypto_pwhash_OPSLIMIT_MIN ||
        ops > crypto_pwhash_OPSLIMIT_SENSITIVE || mem < crypto_pwhash_MEMLIMIT_MIN ||
        mem > crypto_pwhash_MEMLIMIT_SENSITIVE) {
      // Bounded so that a crafted file cannot make ki spend minutes or gigabytes.
      return Status::InvalidInput(kf.path + ": opslimit/memlimit missing or outside libsodium's interactive..sensitive range");
    }
    auto salt = Base64Decode(kf.salt, kf.path + ": salt");
    auto nonce = Base64Decode(kf.nonce, kf.path + ": nonce");
    auto sealed = Base64Decode(kf.secret, kf.path + ": secret");
    if (!salt.ok()) return salt.status();
    if (!nonce.ok()) return nonce.status();
    if (!sealed.ok()) return sealed.status();
    if (salt->size() != kSaltBytes || nonce->size() != kNonceBytes || sealed->size() != kSealedSeedBytes) {
      return Status::InvalidInput(kf.path + ": salt, nonce or secret has the wrong length (the file is damaged)");
    }
    KI_ASSIGN_OR_RETURN(SecretBytes phrase, pass("passphrase for key " + std::string(name), false));
    KI_ASSIGN_OR_RETURN(SecretBytes box_key,
                        DeriveKey(phrase, reinterpret_cast<const uint8_t*>(salt->data()), ops, mem));
    if (crypto_secretbox_open_easy(seed.data(), reinterpret_cast<const unsigned char*>(sealed->data()),
                                   sealed->size(), reinterpret_cast<const unsigned char*>(nonce->data()),
                                   box_key.data()) != 0) {
      return Status::InvalidInput("wrong passphrase for key `" + std::string(name) + "` (or its key file is damaged)");
    }
  }
  KI_ASSIGN_OR_RETURN(SigningKey key, SigningKey::FromSeed(std::string(name), seed.data()));
  if (!(key.public_key() == info.key)) {
    return Status::InvalidInput(kf.path + ": the secret does not belong to the public key (the file is damaged)");
  }
  return key;
}

}  // namespace ki
