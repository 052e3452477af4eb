// Signing: Ed25519 keys, local trust, and DSSE attestations about objects.
//
// A person or a re-run machine signs a statement about one object of the
// store. The statement is an in-toto Statement v1 whose subject is the
// object's digest; it travels in a DSSE envelope (payloadType
// application/vnd.in-toto+json) signed with Ed25519 over DSSE's
// pre-authentication encoding (PAE) of the exact payload bytes. The envelope
// is stored as a blob and indexed as an attestation of its subject, so
// anyone holding the store can check it offline, with ki or with any
// standard DSSE verifier (docs/format.md, "Attestations").
//
// Secret key bytes only ever live in SecretBytes (sodium_malloc memory,
// wiped on release). Key files, the key id, the trust file and the
// predicates are specified in docs/format.md.
//
// Thread-safety: values and free functions; a Keyring or TrustStore object
// belongs to one thread. Libsodium is initialised on first use.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ki/digest.h"
#include "ki/json.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki {

inline constexpr std::string_view kInTotoPayloadType = "application/vnd.in-toto+json";
inline constexpr std::string_view kInTotoStatementType = "https://in-toto.io/Statement/v1";
inline constexpr std::string_view kEnvelopeMediaType = "application/vnd.dsse.envelope.v1+json";
// Index of attestations: subject digest (32 raw bytes) + envelope digest
// (32 raw bytes) -> "". Derived (src/sign/index.cc): every envelope blob is
// filed under each sha256 subject of its statement, whichever way it
// arrived; reindex rebuilds it and audit compares it.
inline constexpr std::string_view kAttestationTable = "sign.attestations";
// The sha256 subjects an in-toto statement's bytes name (none when it does
// not parse). Not a check: signatures are checked before a field is trusted.
std::vector<Digest> StatementSubjects(std::string_view payload);
// Registers the attestation index with the store (RegisterDerivedIndex);
// also done before main in every program that links sign.
void RegisterAttestationIndex();

// ---------------------------------------------------------------- secrets

// Bytes in sodium_malloc memory (guard pages, mlock'ed where allowed),
// wiped and freed on destruction. Move-only.
class SecretBytes {
 public:
  SecretBytes() = default;
  explicit SecretBytes(size_t n);  // throws std::bad_alloc when sodium_malloc fails
  ~SecretBytes();
  SecretBytes(SecretBytes&& o) noexcept;
  SecretBytes& operator=(SecretBytes&& o) noexcept;
  SecretBytes(const SecretBytes&) = delete;
  SecretBytes& operator=(const SecretBytes&) = delete;

  uint8_t* data() { return p_; }
  const uint8_t* data() const { return p_; }
  size_t size() const { return n_; }
  // Shrinks the logical size (the allocation stays; the tail is wiped).
  void Truncate(size_t n);
  std::string_view view() const { return {reinterpret_cast<const char*>(p_), n_}; }

 private:
  uint8_t* p_ = nullptr;
  size_t n_ = 0;
};

// Where a passphrase comes from: KI_PASSPHRASE when set (automation), else a
// prompt on the controlling terminal with echo off. `confirm` asks twice (for
// a new key). InvalidInput when no terminal is available and KI_PASSPHRASE
// is unset, or the two entries differ. While echo is off, SIGINT, SIGQUIT,
// SIGTERM and SIGHUP (unless ignored) first restore the terminal, then end
// the process as they would have; SIGTSTP (Ctrl-Z), and SIGTTIN and SIGTTOU
// (the prompt in the background), restore it, stop the process, and on
// SIGCONT in the foreground turn echo off again and ask afresh (what was
// typed before the stop is dropped); continued in the background, ki stops
// again at the read (SIGTTIN) with echo on.
using PassphraseSource = std::function<Result<SecretBytes>(std::string_view prompt, bool confirm)>;
Result<SecretBytes> DefaultPassphrase(std::string_view prompt, bool confirm);

// ---------------------------------------------------------------- keys

// An Ed25519 public key. Text form (export, trust add): "ed25519:" + the
// standard base64 (with padding) of the 32 key bytes.
struct PublicKey {
  std::array<uint8_t, 32> bytes{};

  static Result<PublicKey> Parse(std::string_view text);
  std::string ToString() const;
  // The key id: lowercase hex SHA-256 of the 32 raw public key bytes (64
  // digits). It is what DSSE signatures carry as `keyid`.
  std::string KeyId() const;
  bool operator==(const PublicKey&) const = default;
};

// The first 16 hex digits of a key id, for human output.
std::string ShortKeyId(std::string_view keyid);

// An Ed25519 key pair loaded for signing; the secret half is in SecretBytes.
class SigningKey {
 public:
  SigningKey(std::string name, PublicKey pub, SecretBytes secret)
      : name_(std::move(name)), pub_(pub), secret_(std::move(secret)) {}
  const std::string& name() const { return name_; }
  const PublicKey& public_key() const { return pub_; }
  // 64-byte detached Ed25519 signature of `message`.
  std::string Sign(std::string_view message) const;
  // A key pair made from a 32-byte seed (tests, and key files).
  static Result<SigningKey> FromSeed(std::string name, const uint8_t* seed32);
  static SigningKey Generate(std::string name);

 private:
  std::string name_;
  PublicKey pub_;
  SecretBytes secret_;  // libsodium's 64-byte Ed25519 secret key (seed + public key)
};

enum class KeyProtection { kPassphrase, kNone };

struct KeyInfo {
  std::string name;
  PublicKey key;
  KeyProtection protection = KeyProtection::kPassphrase;
  std::string path;
};

// ki's home: $KI_HOME when set, else $XDG_CONFIG_HOME/ki, else ~/.config/ki.
Result<std::string> KiHome();

// The local key directory ($KI_HOME/keys): one secret key file per key,
// `<name>.key`, mode 0600, in a directory of mode 0700.
class Keyring {
 public:
  // `env` (nullptr: Env::Default()) writes and reads the key files.
  explicit Keyring(std::string dir, Env* env = nullptr)
      : dir_(std::move(dir)), env_(env ? env : Env::Default()) {}
  static Result<Keyring> Default();
  const std::string& dir() const { return dir_; }

  // A new key pair. InvalidInput for a bad name or an existing key. A
  // failed write (a full disk, a failed fsync or rename) is IOError and
  // leaves no key file, so the same name can be generated again.
  Result<KeyInfo> Generate(std::string_view name, KeyProtection protection, const PassphraseSource& pass);
  Result<std::vector<KeyInfo>> List();
  // Public facts of one key (no passphrase needed). NotFound when absent.
  Result<KeyInfo> Info(std::string_view name);
  // Loads the secret key. IOError when the file is accessible by group or
  // others or not owned by the user; InvalidInput for a wrong passphrase.
  Result<SigningKey> Load(std::string_view name, const PassphraseSource& pass);
  // The public key with this key id, when one of the local keys has it.
  Result<std::optional<KeyInfo>> FindByKeyId(std::string_view keyid);
  // Removes the temporary files (`<name>.key.tmp-<pid>-<n>`) of key writes
  // whose process is gone: a Generate killed before it linked its key leaves
  // one, and for an unencrypted key it holds the secret in clear. A file is
  // removed only when its name is exactly that pattern and no process with
  // that pid exists; a live writer's, or this process's, is left alone.
  // Returns the paths removed; IOError when one cannot be removed.
  Result<std::vector<std::string>> RemoveStaleTemporaries();

 private:
  std::string PathOf(std::string_view name) const { return dir_ + "/" + std::string(name) + ".key"; }
  std::string dir_;
  Env* env_;
};

bool IsValidKeyName(std::string_view name);

// ---------------------------------------------------------------- trust

// Whose signatures count for what. Runners' `reproduced` attestations make a
// record verified; reviewers vouch (shown, never changes the level).
enum class Role { kRunner, kReviewer };
std::string_view RoleName(Role r);
std::optional<Role> ParseRole(std::string_view s);

struct TrustEntry {
  PublicKey key;
  std::string keyid;
  std::string name;
  Role role = Role::kReviewer;
  std::string when;  // addedAt, or removedAt for revoked entries (RFC 3339 UTC)
};

// The local trust list, a file ($KI_HOME/trust.json) rather than a store
// table: trust is the decision of the person running ki, not a property of
// the data, so it must not travel with a store that is copied, pushed or
// pulled (docs/format.md, "Trust"). Removed keys are kept as revoked, so
// their signatures are reported as such rather than as unknown.
class TrustStore {
 public:
  // Loads the file; a missing file is an empty trust list. IOError when the
  // file is writable by group or others, or belongs to a user other than
  // this one or root; InvalidInput when it is malformed or lists one key
  // twice (also as trusted and revoked) or one trusted name for two keys.
  // `env` (nullptr: Env::Default()) also writes it on Save.
  static Result<TrustStore> Load(const std::string& path, Env* env = nullptr);
  static Result<TrustStore> LoadDefault();  // $KI_HOME/trust.json; empty when no home
  // Load for a read-modify-write (trust add, trust remove): first takes an
  // exclusive lock (flock) on `<path>.lock` beside the list, waiting for
  // another holder, and keeps it until this object and its copies are gone,
  // so two updates at once each see the other's change instead of one
  // overwriting it. Readers need no lock: Save replaces the file atomically.
  static Result<TrustStore> LoadForUpdate(const std::string& path, Env* env = nullptr);
  static std::string DefaultPath(const std::string& ki_home) { return ki_home + "/trust.json"; }

  const std::vector<TrustEntry>& trusted() const { return trusted_; }
  const std::vector<TrustEntry>& revoked() const { return revoked_; }
  const TrustEntry* FindTrusted(std::string_view keyid) const;
  const TrustEntry* FindRevoked(std::string_view keyid) const;

  // Adds (or updates the name and role of) a trusted key. InvalidInput when
  // the name belongs to another key. Returns true when the key was new.
  Result<bool> Add(const PublicKey& key, std::string_view name, Role role);
  // Removes by name, full key id, or a key id prefix of at least 8 hex
  // digits; the entry moves to the revoked list. NotFound / Ambiguous.
  Result<TrustEntry> Remove(std::string_view who);
  // The revoked entries that `who` names, matched as Remove matches trusted
  // ones: what a remove run again (after a failed Save, or twice) finds.
  std::vector<const TrustEntry*> RevokedMatching(std::string_view who) const;
  // Atomically: temporary file, fsync, rename, fsync of the directory. A
  // failure before the rename leaves the old list as it was; a failed
  // directory fsync comes after it, and the new list is then in place (the
  // IOError says so): saving the same list again makes it durable.
  Status Save() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  Env* env_ = nullptr;
  std::vector<TrustEntry> trusted_, revoked_;
  std::shared_ptr<const void> update_lock_;  // held while an update may Save
};

// ---------------------------------------------------------------- DSSE

// PAE(type, body) = "DSSEv1" SP LEN(type) SP type SP LEN(body) SP body,
// LEN = decimal byte length without leading zeros.
std::string PreAuthEncoding(std::string_view payload_type, std::string_view payload);

struct DsseSignature {
  std::string keyid;  // may be empty (DSSE makes it optional)
  std::string sig;    // raw signature bytes
};

struct DsseEnvelope {
  std::string payload_type;
  std::string payload;  // decoded bytes
  std::vector<DsseSignature> signatures;
};

// Standard base64 with padding (what ki writes).
std::string Base64Encode(std::string_view bytes);
// Accepts standard or URL-safe base64 with padding (DSSE allows either);
// anything else (truncated, stray characters) is InvalidInput.
Result<std::string> Base64Decode(std::string_view text, std::string_view what);

// The envelope as ki stores it: RFC 8785 canonical JSON of
// {payload, payloadType, signatures: [{keyid, sig}]}.
std::string SerializeEnvelope(const DsseEnvelope& env);
// Strict: a JSON object with string payloadType, base64 payload, and an
// array of signatures each with a base64 `sig`; duplicate keys rejected.
// InvalidInput naming the field otherwise. No signature is checked here.
Result<DsseEnvelope> ParseEnvelope(std::string_view json);

// ---------------------------------------------------------------- attestations

enum class PredicateKind { kReviewed, kReproduced, kDisputed };
std::string_view PredicateName(PredicateKind p);              // "reviewed", ...
std::string_view PredicateTypeUri(PredicateKind p);           // the in-toto predicateType
std::optional<PredicateKind> ParsePredicateName(std::string_view name);
std::optional<PredicateKind> PredicateFromUri(std::string_view uri);

// What a re-run measured (the `reproduced` predicate; optional for `disputed`).
struct RerunResult {
  Digest run;                 // the new run's digest
  double latency_ns = 0;      // measured primary latency of the re-run
  double ratio = 0;           // re-run latency / recorded latency
  bool passed = true;         // correctness checks of the re-run passed
  std::string machine;        // identifies the machine (replication needs two)
  std::optional<Digest> environment;  // the re-run's ExecutionEnvironment, when known
  // `ki rerun`'s verdict, {outcome, test, tolerance, ...} (docs/format.md,
  // "Rerun verdicts"); absent from attestations made by hand or by older ki.
  std::optional<Json> verdict;
};

struct AttestationRequest {
  Digest subject;
  PredicateKind predicate = PredicateKind::kReviewed;
  std::string note;
  std::optional<RerunResult> rerun;  // required for kReproduced
  std::vector<Digest> evidence;      // objects backing a dispute (logs, runs)
  std::string signed_at;             // RFC 3339 UTC; empty: now
};

// What BuildAttestation checks of the request itself, needing no store or
// key: a `reproduced` carries a re-run result, a `disputed` some evidence,
// re-run facts and signed_at are well-formed. InvalidInput naming what is
// wrong. Callers that ask for a passphrase run it first.
Status CheckAttestationRequest(const AttestationRequest& req);

// Builds the statement and the signed envelope bytes, without storing.
// NotFound when the subject is not in the store; InvalidInput when the
// request is incomplete (a `reproduced` without a re-run result).
Result<std::string> BuildAttestation(Store& store, const SigningKey& key, const AttestationRequest& req);

// Builds, signs, checks, and stores an attestation: the envelope as a blob
// (kEnvelopeMediaType) and its index entry, atomically in one Batch. This is
// what `ki sign` and `ki rerun` call. Returns the envelope's digest.
Result<PutResult> CreateAttestation(Store& store, const SigningKey& key, const AttestationRequest& req);

// --- verification ---

enum class SignatureState {
  kTrusted,     // valid, by a key in the trust list
  kUntrusted,   // valid, by a key not in the trust list (a local key, or the one the statement names)
  kRevoked,     // valid, by a key removed from the trust list
  kUnknownKey,  // no public key with this key id is known: cannot be checked
  kInvalid,     // the signature does not verify: a fault
};
std::string_view SignatureStateName(SignatureState s);

struct SignatureCheck {
  std::string keyid;
  SignatureState state = SignatureState::kUnknownKey;
  std::string signer;           // trust name, local key name, or "" when unknown
  std::optional<Role> role;     // for kTrusted
  std::string key_source;       // "trust", "revoked", "keyring", "statement", or ""
};

struct CheckItem {
  std::string name;  // "stored", "envelope", "payloadType", "payload", "signatures", "statement", "subject", "predicate"
  bool ok = true;
  std::string detail;
};

struct AttestationReport {
  Digest envelope;
  Digest subject;                 // the subject it is indexed under (or that was expected)
  std::vector<CheckItem> checks;  // every structural check, in order
  std::vector<SignatureCheck> signatures;
  std::string predicate_type;     // the statement's predicateType ("" when unreadable)
  std::optional<PredicateKind> predicate;
  Json predicate_body;            // the statement's predicate (null when unreadable)

  // A fault: a failed check or an invalid signature (exit 1 for ki verify).
  bool fault() const;
  // The first failed check or invalid signature, as one line.
  std::string problem() const;
  // Not a fault and at least one signature by a trusted key (of `role` when given).
  bool TrustedBy(std::optional<Role> role = std::nullopt) const;
  // Trusted signatures (by role when given).
  std::vector<const SignatureCheck*> TrustedSignatures(std::optional<Role> role = std::nullopt) const;
  Json ToJson() const;
};

// Everything verification looks keys up in: the trust list, then the local
// keys (known but not trusted), then the key the statement itself names
// (checkable, never trusted by that alone).
struct KeySources {
  TrustStore trust;
  std::vector<KeyInfo> local;
  // $KI_HOME's trust list and keys; both empty when there is no home.
  static Result<KeySources> LoadDefault();
};

// Checks one envelope's bytes against the subject it should attest.
AttestationReport CheckEnvelope(std::string_view envelope_bytes, const Digest& envelope, const Digest& subject,
                                const KeySources& keys);

// Every attestation indexed under `subject`, in envelope-digest order.
Result<std::vector<Digest>> ListAttestations(Store& store, const Digest& subject);
// The same with each index row's value ("" for every row: the index is
// derived from the envelopes): what a push carries of a subject's
// attestations.
Result<std::vector<std::pair<Digest, std::string>>> ListAttestationRows(Store& store, const Digest& subject);
// Files `envelope` (stored already, or put in `batch`) under `subject`
// with `value`, unless a row files it there already: what a pull does with
// the attestations it has checked (CheckEnvelope). Writes nothing else.
Status FileAttestationRow(Batch& batch, const Digest& subject, const Digest& envelope, std::string_view value);
// Reads (re-hashing) and checks every attestation of `subject`.
Result<std::vector<AttestationReport>> VerifyAttestations(Store& store, const Digest& subject,
                                                          const KeySources& keys);

// Files an existing envelope (from another signer or tool) as an
// attestation of the subject its statement names (or `subject` when given,
// which must then be the statement's subject). The envelope is checked
// first: a malformed envelope is InvalidInput, an invalid signature or a
// subject mismatch VerifyFailed, and nothing is stored. Envelopes by
// unknown or untrusted keys are stored (trust may come later).
Result<std::pair<PutResult, AttestationReport>> ImportAttestation(Store& store, std::string_view envelope_bytes,
                                                                 std::optional<Digest> subject,
                                                                 const KeySources& keys);

struct AttestationAudit {
  std::vector<AttestationReport> reports;  // every indexed attestation
  std::vector<std::string> notes;          // envelope blobs not filed under any subject
  size_t faults() const;
};
// Checks every attestation in the store: each index entry (its envelope
// present and valid, its subject held by the store) and notes envelope
// blobs that no index entry names.
Result<AttestationAudit> AuditAttestations(Store& store, const KeySources& keys);

}  // namespace ki
