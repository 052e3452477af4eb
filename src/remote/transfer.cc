// Push and Pull (remote.h): the order of operations that makes a failed
// push invisible and a pull all-or-nothing.
//
// Push: closures of every ref -> unique blobs (HEAD, upload what is
// missing; N workers, one connection each; a bundle's pack is built
// meanwhile, unless remote.state knows the pack of the same objects under
// the same tag) -> the pack blob -> image manifests under their tags (a
// bundle: parts, pack manifest, then the index) -> attestation referrers
// and the sha256-<hex> fallback index. The manifests go last: a tag never
// names a manifest whose blobs are absent.
//
// Pull: image manifest (checked: media type, artifactType, every
// descriptor; a bundle's parts in parallel) -> referrers -> a bundle's
// pack, when the store lacks enough of its objects, each entry checked
// against its layer -> every other blob the store lacks, each checked for
// size and digest as it arrives, and each manifest object parsed, checked
// against its document and encoded by a download worker once all its
// pieces are here -> one Batch that only writes. Manifests, names and
// attestations are written only when everything is verified; verified
// blobs past TransferOptions::pull_buffer_bytes go in batches of their own
// as they arrive, so that memory stays bounded.
//
// Blobs over TransferOptions::stream_above are never held whole: push
// reads them from the store into the upload through a bounded pipe
// (StoreSource), pull downloads each into a scratch file under
// objects/incoming (ScratchDownload), checked as it arrives, and stores it
// at once through Batch::PutBlobStream, in a batch of its own.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "json/fields.h"
#include "ki/env.h"
#include "ki/json.h"
#include "remote/mapping.h"
#include "remote/pack.h"
#include "remote/target.h"

namespace ki {

using remote::Access;
using remote::Closure;
using remote::Conn;
using remote::Layer;
using remote::Role;
using remote::RunParallel;
using remote::Target;

namespace {

Result<std::unique_ptr<Target>> OpenTarget(const RemoteUrl& url, const TransferOptions& opts, Access access) {
  if (url.scheme == RemoteUrl::Scheme::kLayout) return remote::OpenLayout(url, opts, access);
  return remote::OpenRegistry(url, opts, access);
}

// Serialises progress callbacks from the workers.
class Progress {
 public:
  Progress(const TransferOptions& o, uint64_t total) : fn_(o.progress) { p_.objects_total = total; }
  void Add(uint64_t objects, uint64_t bytes) {
    if (!fn_) return;
    std::lock_guard<std::mutex> l(mu_);
    p_.objects_done += objects;
    p_.bytes_done += bytes;
    fn_(p_);
  }

 private:
  std::function<void(const TransferProgress&)> fn_;
  std::mutex mu_;
  TransferProgress p_;
};

// What a streamed upload holds of its object at once.
constexpr size_t kPipeBytes = 4 << 20;

// A stored object as a BlobSource, for an upload that must not hold it
// whole. Store::ReadStream hands out pieces rather than being asked for
// them, while curl asks, so ReadStream runs on a thread of its own and
// fills a ring of kPipeBytes that Read drains. The object's last byte is
// handed out only after ReadStream has checked the content hash: an
// upload of a damaged object fails before its request completes, instead
// of sending bytes that do not hash to the digest announced.
class StoreSource final : public remote::BlobSource {
 public:
  StoreSource(Store& store, const Digest& d, uint64_t size) : store_(store), digest_(d), size_(size), ring_(kPipeBytes) {}
  ~StoreSource() override { Stop(); }
  StoreSource(const StoreSource&) = delete;
  StoreSource& operator=(const StoreSource&) = delete;

  Status Rewind() override {
    Stop();
    reader_ = std::thread([this] { Produce(); });
    return Status::OK();
  }

  Result<size_t> Read(char* buf, size_t n) override {
    if (!reader_.joinable()) return Status::IOError("internal error: " + digest_.str() + " read before Rewind");
    std::unique_lock<std::mutex> l(mu_);
    for (;;) {
      if (done_ && !result_.ok()) return result_;
      const uint64_t keep = done_ ? 0 : 1;  // the last byte waits for the hash check
      const uint64_t left = size_ > delivered_ + keep ? size_ - delivered_ - keep : 0;
      const size_t k = size_t(std::min<uint64_t>({n, fill_, left, ring_.size() - head_}));
      if (k > 0) {
        std::memcpy(buf, ring_.data() + head_, k);
        head_ = (head_ + k) % ring_.size();
        fill_ -= k;
        delivered_ += k;
        cv_.notify_all();
        return k;
      }
      if (done_ && fill_ == 0) return size_t(0);
      cv_.wait(l);
    }
  }

 private:
  void Produce() {
    uint64_t produced = 0;
    Status st = store_.ReadStream(digest_, [&](std::string_view piece) -> Status {
      produced += piece.size();
      if (produced > size_) return Status::Corruption(digest_.str() + ": the store holds more than its " + std::to_string(size_) + " bytes");
      std::unique_lock<std::mutex> l(mu_);
      while (!piece.empty()) {
        cv_.wait(l, [&] { return cancel_ || fill_ < ring_.size(); });
        if (cancel_) return Status::IOError("upload of " + digest_.str() + " stopped");
        const size_t tail = (head_ + fill_) % ring_.size();
        const size_t k = std::min({piece.size(), ring_.size() - fill_, ring_.size() - tail});
        std::memcpy(ring_.data() + tail, piece.data(), k);
        fill_ += k;
        piece.remove_prefix(k);
        cv_.notify_all();
      }
      return Status::OK();
    });
    if (st.ok() && produced != size_) {
      st = Status::Corruption(digest_.str() + ": the store gave " + std::to_string(produced) + " bytes, its index says " +
                              std::to_string(size_));
    }
    std::lock_guard<std::mutex> l(mu_);
    done_ = true;
    result_ = std::move(st);
    cv_.notify_all();
  }

  // Ends the reading thread (if any) and empties the ring.
  void Stop() {
    if (reader_.joinable()) {
      {
        std::lock_guard<std::mutex> l(mu_);
        cancel_ = true;
        cv_.notify_all();
      }
      reader_.join();
    }
    head_ = fill_ = 0;
    delivered_ = 0;
    cancel_ = done_ = false;
    result_ = Status::OK();
  }

  Store& store_;
  const Digest digest_;
  const uint64_t size_;
  std::thread reader_;
  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::vector<char> ring_;
  size_t head_ = 0, fill_ = 0;
  uint64_t delivered_ = 0;
  bool cancel_ = false, done_ = false;
  Status result_;
};

// A streamed download's scratch file under objects/incoming (the folder
// Batch::PutBlobStream spools to, which audit lists and --reindex clears
// of what a killed process left). Written through an AtomicFile: until
// Commit it is a temporary that goes away with this object, a retried
// download starts a new one, and the committed file is removed on the way
// out too, so a failed or finished download leaves nothing behind.
class ScratchDownload final : public remote::BlobSink {
 public:
  ScratchDownload(Env* env, std::string path) : env_(env), path_(std::move(path)) {}
  ~ScratchDownload() override {
    file_.reset();
    if (committed_) (void)env_->RemoveFile(path_);  // best effort: audit notes leftovers
  }
  ScratchDownload(const ScratchDownload&) = delete;
  ScratchDownload& operator=(const ScratchDownload&) = delete;

  Status Restart() override {
    file_.reset();
    KI_ASSIGN_OR_RETURN(file_, env_->NewAtomicFile(path_));
    return Status::OK();
  }
  Status Append(std::string_view b) override {
    if (!file_) return Status::IOError("internal error: " + path_ + " written before Restart");
    return file_->Append(b);
  }
  // The complete download, under its scratch name. Not fsynced: nothing
  // reads it after a crash (the stored copy is synced by its batch).
  Result<std::string> Commit() {
    if (!file_) return Status::IOError("internal error: " + path_ + " committed before Restart");
    KI_RETURN_IF_ERROR(file_->Commit(Durability::kNone));
    committed_ = true;
    return path_;
  }

 private:
  Env* env_;
  std::string path_;
  std::unique_ptr<AtomicFile> file_;
  bool committed_ = false;
};

// Removes the scratch files (ScratchPath's) that pulls killed before they
// could clean up left in `incoming`: those whose process is gone. A kill
// -9 (or a kill by `timeout`) skips every destructor, so the next pull
// that streams clears what the dead one left, as audit --reindex would.
// A file of a live process, this one or another pull running beside it,
// is left alone; so is anything not named <pid>-pull-<n>. Best effort.
void RemoveStaleScratch(Env* env, const std::string& incoming) {
  auto names = env->ListDir(incoming);
  if (!names.ok()) return;
  for (const std::string& name : *names) {
    auto dash = name.find("-pull-");
    if (dash == 0 || dash == std::string::npos || name.find_first_not_of("0123456789") != dash) continue;
    long pid = std::strtol(name.substr(0, dash).c_str(), nullptr, 10);
    if (pid <= 0 || pid == long(::getpid())) continue;
    if (::kill(pid_t(pid), 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to ask
    (void)env->RemoveFile(incoming + "/" + name);
  }
}

// What a failed push tells the user to do next: run it again where that
// can help (a dropped connection, a registry error, a time limit), and
// where it cannot (Target::FailedForGood), only that a run after the fix
// picks up where this one stopped.
std::string RerunAdvice(const remote::Target& target, const char* what) {
  if (target.FailedForGood()) return std::string("once what follows is fixed, the same ki push will ") + what + " from there";
  return std::string("run the same ki push again to ") + what;
}

// A scratch name unique among the processes writing to the store, not a
// hex digest (so audit reads it as a leftover, never as an object).
std::string ScratchPath(const Store& store) {
  static std::atomic<uint64_t> counter{0};
  return store.path() + "/objects/incoming/" + std::to_string(::getpid()) + "-pull-" + std::to_string(counter++);
}

}  // namespace

// An exception out of fn (a third-party library that throws on input it
// did not expect, std::bad_alloc) becomes a failure too: escaping a worker
// thread it would std::terminate the process, where the caller's Status
// would have said what failed. fn should not throw; this is the last line
// of defence, not a way of reporting. IOError: exit 5, what cli/main.cc's
// outermost catch gives the same exception on the main thread.
Status remote::RunParallel(Target& target, int parallelism, size_t count,
                   const std::function<Status(Conn&, size_t)>& fn) {
  if (count == 0) return Status::OK();
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mu;
  Status first;
  auto fail = [&](Status st) {
    std::lock_guard<std::mutex> l(mu);
    if (first.ok()) first = std::move(st);
    stop = true;
  };
  auto worker = [&] {
    try {
      auto conn = target.Connect();
      if (!conn.ok()) return fail(conn.status());
      for (size_t i; !stop && (i = next++) < count;) {
        Status st = fn(**conn, i);
        if (!st.ok()) fail(std::move(st));
      }
    } catch (const std::exception& e) {
      fail(Status::IOError(std::string("internal error in a transfer worker: ") + e.what()));
    } catch (...) {
      fail(Status::IOError("internal error in a transfer worker: an unknown exception"));
    }
  };
  int n = int(std::min<size_t>(std::max(1, parallelism), count));
  std::vector<std::thread> threads;
  for (int i = 1; i < n; ++i) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  return first;
}

namespace {

std::string FallbackTag(const Digest& d) { return "sha256-" + d.hex(); }

// Adds `desc` to the sha256-<hex> index of `subject` (the referrers tag
// schema of the distribution-spec, for registries without the API).
Status AddToFallbackIndex(Conn& conn, const Digest& subject, const Json& desc, const TransferOptions& opts) {
  std::string tag = FallbackTag(subject);
  Json index = {{"schemaVersion", 2}, {"mediaType", remote::kOciIndexType}, {"manifests", Json::array()}};
  auto cur = conn.GetManifest(tag);
  if (cur.ok()) {
    ParseLimits limits;
    limits.max_bytes = opts.max_manifest_size;
    auto j = ParseDocument(cur->bytes, DocFormat::kJson, tag, limits);
    if (j.ok() && j->is_object() && j->contains("manifests") && (*j)["manifests"].is_array()) index = std::move(*j);
  } else if (!cur.status().IsNotFound()) {
    return cur.status();
  }
  for (const Json& m : index["manifests"])
    if (StringOr(m, "digest") == desc["digest"]) return Status::OK();
  index["manifests"].push_back(desc);
  return conn.PutManifest(tag, index.dump(), remote::kOciIndexType, nullptr);
}

// A bundle's pack (pack.h): every object of `layers` up to kPackEntryMax,
// in layer order, read (and so re-hashed) from the store.
Result<std::string> BuildPack(Store& store, const std::vector<Layer>& layers, uint64_t* objects) {
  uint64_t tar_bytes = 1024;
  for (const Layer& l : layers)
    if (l.size <= remote::kPackEntryMax) tar_bytes += remote::PackEntryBytes(l.size);
  remote::PackWriter pack(tar_bytes);
  for (const Layer& l : layers) {
    if (l.size > remote::kPackEntryMax) continue;
    KI_ASSIGN_OR_RETURN(std::string bytes, store.Read(l.digest));
    if (bytes.size() != l.size) {
      return Status::Corruption(l.digest.str() + " has " + std::to_string(bytes.size()) + " bytes, the store said " +
                                std::to_string(l.size));
    }
    KI_RETURN_IF_ERROR(pack.Add(l.digest, bytes));
  }
  *objects = pack.entries();
  return pack.Finish();
}

// The key of the pack BuildPack makes of `layers` (pack.h, PackKey).
Digest PackKeyOf(const std::vector<Layer>& layers) {
  remote::PackKey key;
  for (const Layer& l : layers)
    if (l.size <= remote::kPackEntryMax) key.Add(l.digest, l.size);
  return key.Finish();
}

// A request's fixed cost (a round trip, and a registry's per-request CPU:
// 1.5-5 ms for a blob GET on Debian's registry) counted as bytes of
// transfer. A pack is fetched when it costs no more than the objects the
// store lacks would one by one: pack size <= their bytes + this per object.
constexpr uint64_t kRequestCostBytes = 32 << 10;

bool PackWorthFetching(uint64_t pack_size, uint64_t missing, uint64_t missing_bytes) {
  return missing > 0 && pack_size <= missing_bytes + missing * kRequestCostBytes;
}

}  // namespace

// ---------------------------------------------------------------- remote state

namespace {

// remote.state (docs/format.md, "Remote state"): rows under an 8-byte
// prefix naming the registry (SHA-256 of its URL), then
//   'b' + raw digest           -> ""                 the registry holds this blob
//   't' + tag                  -> raw manifest digest the tag named when last written or read
//   'r' + raw manifest digest  -> ""                 a referrer manifest written and indexed
//   'p' + bundle tag           -> PackRow (80 bytes) the pack last built for the bundle pushed under the tag
// Only registries have one: a layout answers HEAD from its own directory.

// What a push needs of a pack to write its manifest and the bundle's
// index, under the key of what the pack holds: a later push of the same
// objects under the same tag knows the index it would write without
// building the pack again.
struct PackRow {
  Digest key;      // PackKeyOf the bundle's layers
  Digest digest;   // the pack blob
  uint64_t size = 0;
  uint64_t objects = 0;  // entries; 0: no object was small enough, the bundle has no pack
};
constexpr size_t kPackRowBytes = 32 + 32 + 8 + 8;

// key, digest (raw), size, objects (8 bytes big-endian each).
std::string EncodePackRow(const PackRow& p) {
  std::string v(p.key.raw());
  v.append(p.digest.raw());
  for (uint64_t x : {p.size, p.objects})
    for (int i = 7; i >= 0; --i) v.push_back(char(x >> (8 * i)));
  return v;
}

uint64_t BigEndian64(std::string_view b) {
  uint64_t x = 0;
  for (char c : b) x = x << 8 | uint8_t(c);
  return x;
}

std::optional<PackRow> DecodePackRow(std::string_view v) {
  if (v.size() != kPackRowBytes) return std::nullopt;  // from a later format: ignored
  PackRow p;
  p.key = Digest::FromRaw(v.substr(0, 32));
  p.digest = Digest::FromRaw(v.substr(32, 32));
  p.size = BigEndian64(v.substr(64, 8));
  p.objects = BigEndian64(v.substr(72, 8));
  return p;
}

struct RemoteState {
  bool enabled = false;
  std::string prefix;
  std::unordered_set<Digest> blobs, referrers;
  std::unordered_map<std::string, Digest> tags;
  std::unordered_map<std::string, PackRow> packs;  // by bundle tag
};

std::string StatePrefix(const RemoteUrl& url) { return std::string(Sha256Of(url.str()).raw().substr(0, 8)); }

Result<RemoteState> LoadState(Store& store, const RemoteUrl& url) {
  RemoteState st;
  if (url.scheme != RemoteUrl::Scheme::kRegistry) return st;
  st.enabled = true;
  st.prefix = StatePrefix(url);
  size_t p = st.prefix.size();
  KI_RETURN_IF_ERROR(store.Scan(kRemoteStateTable, st.prefix, [&](std::string_view k, std::string_view v) {
    if (k.size() == p + 33 && (k[p] == 'b' || k[p] == 'r')) {
      Digest d = Digest::FromRaw(k.substr(p + 1));
      (k[p] == 'b' ? st.blobs : st.referrers).insert(d);
    } else if (k.size() > p + 1 && k[p] == 't' && v.size() == 32) {
      st.tags[std::string(k.substr(p + 1))] = Digest::FromRaw(v);
    } else if (k.size() > p + 1 && k[p] == 'p') {
      if (auto row = DecodePackRow(v)) st.packs[std::string(k.substr(p + 1))] = *row;
    }
    return true;  // anything else is from a later format: ignored
  }));
  return st;
}

// What one transfer learnt about the registry, written to remote.state.
struct StateUpdate {
  std::mutex mu;
  std::vector<Digest> blobs, gone, referrers;
  std::vector<std::pair<std::string, Digest>> tags;
  std::vector<std::pair<std::string, PackRow>> packs;
  void Blob(const Digest& d) {
    std::lock_guard<std::mutex> l(mu);
    blobs.push_back(d);
  }
  void Gone(const Digest& d) {
    std::lock_guard<std::mutex> l(mu);
    gone.push_back(d);
  }
  void Tag(const std::string& t, const Digest& m) {
    std::lock_guard<std::mutex> l(mu);
    tags.emplace_back(t, m);
  }
  void Referrer(const Digest& d) {
    std::lock_guard<std::mutex> l(mu);
    referrers.push_back(d);
  }
  void Pack(const std::string& tag, const PackRow& p) {
    std::lock_guard<std::mutex> l(mu);
    packs.emplace_back(tag, p);
  }
};

Status WriteState(Batch& batch, const RemoteState& old, const StateUpdate& u) {
  if (!old.enabled) return Status::OK();
  auto key = [&](char type, std::string_view rest) {
    std::string k = old.prefix;
    k.push_back(type);
    k.append(rest);
    return k;
  };
  std::unordered_set<Digest> gone(u.gone.begin(), u.gone.end());
  for (const Digest& d : gone) KI_RETURN_IF_ERROR(batch.Delete(kRemoteStateTable, key('b', d.raw())));
  for (const Digest& d : u.blobs)  // a blob found gone and uploaded again is held again
    if (!old.blobs.count(d) || gone.count(d)) KI_RETURN_IF_ERROR(batch.Put(kRemoteStateTable, key('b', d.raw()), ""));
  for (const Digest& d : u.referrers)
    if (!old.referrers.count(d)) KI_RETURN_IF_ERROR(batch.Put(kRemoteStateTable, key('r', d.raw()), ""));
  for (const auto& [tag, m] : u.tags) {
    auto it = old.tags.find(tag);
    if (it == old.tags.end() || it->second != m) KI_RETURN_IF_ERROR(batch.Put(kRemoteStateTable, key('t', tag), m.raw()));
  }
  for (const auto& [tag, p] : u.packs) {
    auto it = old.packs.find(tag);
    std::string v = EncodePackRow(p);
    if (it == old.packs.end() || EncodePackRow(it->second) != v) {
      KI_RETURN_IF_ERROR(batch.Put(kRemoteStateTable, key('p', tag), v));
    }
  }
  return Status::OK();
}

}  // namespace

// ---------------------------------------------------------------- push

Result<PushReport> Push(Store& store, const RemoteUrl& url, const std::vector<std::string>& refs,
                        const TransferOptions& opts) {
  PushReport report;
  if (!opts.bundle_tag.empty() && !IsValidTag(opts.bundle_tag)) {
    return Status::Usage("'" + opts.bundle_tag + "' is not a valid OCI tag");
  }
  std::vector<Closure> closures;
  remote::ClosureCache cache;
  std::unordered_set<Digest> roots;
  for (const auto& ref : refs) {
    KI_ASSIGN_OR_RETURN(Digest root, store.Resolve(ref));
    if (!roots.insert(root).second) continue;  // named twice: pushed once
    KI_ASSIGN_OR_RETURN(Closure c, remote::CollectClosure(store, root, ref, &cache));
    PushedRef pr;
    pr.ref = ref;
    pr.root = root;
    pr.tag = c.name.empty() ? "ki-" + root.hex() : SanitizeTag(c.name);
    pr.objects = c.layers.size();
    for (const Layer& l : c.layers) pr.attestations += l.role == Role::kAttestation;
    report.refs.push_back(std::move(pr));
    closures.push_back(std::move(c));
  }
  cache.nodes.clear();
  // A bundle: the union of the closures, each object once, in closure
  // order, listed by parts that a pull accepts (before anything is sent).
  std::vector<Layer> all;
  std::vector<std::string> parts;
  if (!opts.bundle_tag.empty()) {
    std::unordered_set<Digest> in_bundle;
    for (const Closure& c : closures)
      for (const Layer& l : c.layers)
        if (in_bundle.insert(l.digest).second) all.push_back(l);
    parts = remote::BundleParts(all, opts.bundle_part_bytes);
    if (parts.size() > remote::kBundleMaxParts) {
      return Status::InvalidInput("the bundle " + opts.bundle_tag + " would need " + std::to_string(parts.size()) +
                                  " parts of at most " + std::to_string(opts.bundle_part_bytes) + " bytes, more than the " +
                                  std::to_string(remote::kBundleMaxParts) + " a bundle may have; nothing was sent");
    }
  }
  KI_ASSIGN_OR_RETURN(RemoteState state, LoadState(store, url));
  if (!opts.use_remote_state) {
    state.blobs.clear();
    state.referrers.clear();
    state.tags.clear();
    state.packs.clear();
  }
  StateUpdate learnt;
  // remote.state is a cache: failing to write it loses requests, not data.
  auto save_state = [&] {
    if (!state.enabled) return;
    Status st = [&]() -> Status {
      KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
      KI_RETURN_IF_ERROR(WriteState(*batch, state, learnt));
      return batch->Commit();
    }();
    if (!st.ok()) report.warnings.push_back("could not record what " + url.str() + " holds: " + st.message());
  };
  KI_ASSIGN_OR_RETURN(auto target, OpenTarget(url, opts, Access::kPush));

  // Unique blobs over every closure, plus the empty config.
  struct Item {
    Digest digest;
    uint64_t size;
  };
  std::vector<Item> items{{remote::EmptyConfigDigest(), 2}};
  std::unordered_set<Digest> seen{remote::EmptyConfigDigest()};
  for (const Closure& c : closures)
    for (const Layer& l : c.layers)
      if (seen.insert(l.digest).second) items.push_back({l.digest, l.size});
  seen.clear();
  std::vector<uint8_t> sent(items.size(), 0);
  std::vector<size_t> todo;  // items the registry is not known to hold
  for (size_t i = 0; i < items.size(); ++i) {
    if (state.blobs.count(items[i].digest)) report.blobs_known++;
    else todo.push_back(i);
  }
  std::atomic<uint64_t> bytes_up{0};
  // Object bytes read for upload at once (push_buffer_bytes): a worker waits
  // before reading an object that would pass the budget; one larger than
  // the budget goes when nothing else is in flight.
  std::mutex flight_mu;
  std::condition_variable flight_cv;
  uint64_t in_flight = 0;
  std::atomic<uint64_t> n_streamed{0};
  auto upload = [&](Conn& conn, size_t i) -> Status {
    const bool streamed = i != 0 && items[i].size > opts.stream_above;
    // A streamed object holds its pipe, not itself.
    const uint64_t n = streamed ? std::min<uint64_t>(items[i].size, kPipeBytes) : items[i].size;
    {
      std::unique_lock<std::mutex> l(flight_mu);
      flight_cv.wait(l, [&] { return in_flight == 0 || in_flight + n <= opts.push_buffer_bytes; });
      in_flight += n;
      report.peak_bytes_in_flight = std::max(report.peak_bytes_in_flight, in_flight);
    }
    struct Landed {  // gives the budget back on every path out
      std::mutex& mu;
      std::condition_variable& cv;
      uint64_t& in_flight;
      uint64_t n;
      ~Landed() {
        std::lock_guard<std::mutex> l(mu);
        in_flight -= n;
        cv.notify_all();
      }
    } landed{flight_mu, flight_cv, in_flight, n};
    if (streamed) {
      // ReadStream re-hashes as it reads: what we upload is what the digest names.
      StoreSource source(store, items[i].digest, items[i].size);
      KI_RETURN_IF_ERROR(conn.PutBlobFrom(items[i].digest, items[i].size, source));
      bytes_up += items[i].size;
      n_streamed++;
      sent[i] = 1;
      learnt.Blob(items[i].digest);
      return Status::OK();
    }
    std::string bytes;
    if (i == 0) {
      bytes = std::string(remote::EmptyConfig());
    } else {
      // Read re-hashes: what we upload is what the digest names.
      KI_ASSIGN_OR_RETURN(bytes, store.Read(items[i].digest));
    }
    KI_RETURN_IF_ERROR(conn.PutBlob(items[i].digest, bytes));
    bytes_up += bytes.size();
    sent[i] = 1;
    learnt.Blob(items[i].digest);
    return Status::OK();
  };
  // A bundle's pack is built while the blobs upload: reading and
  // compressing every object is CPU, the uploads mostly wait on the
  // registry. Unless remote.state has the pack of these very objects: then
  // it is built only if the tag turns out not to name this bundle any more.
  // (Declared after what it reads, so that it is joined before those go away.)
  std::optional<Result<std::string>> pack_bytes;
  uint64_t pack_objects = 0;
  std::jthread packer;
  Digest pack_key;
  std::optional<PackRow> known_pack;
  if (!all.empty() && opts.use_pack) {
    pack_key = PackKeyOf(all);
    auto it = state.packs.find(opts.bundle_tag);
    if (it != state.packs.end() && it->second.key == pack_key) known_pack = it->second;
    else packer = std::jthread([&] { pack_bytes = BuildPack(store, all, &pack_objects); });
  }

  std::atomic<uint64_t> n_sent{0}, n_unasked{0}, n_checked{0};
  std::atomic<int> miss_streak{0};
  Progress progress(opts, items.size());
  if (report.blobs_known) progress.Add(report.blobs_known, 0);
  Status st = RunParallel(*target, opts.push_jobs, todo.size(), [&](Conn& conn, size_t k) -> Status {
    size_t i = todo[k];
    const Item& it = items[i];
    // A HEAD costs a request and saves two (POST + PUT) only when it hits:
    // once they keep missing, ask only one blob in head_sample.
    bool blind = opts.blind_after_misses > 0 && miss_streak.load() >= opts.blind_after_misses &&
                 (opts.head_sample <= 0 || k % size_t(opts.head_sample) != 0);
    if (!blind) {
      n_checked++;
      KI_ASSIGN_OR_RETURN(bool has, conn.HasBlob(it.digest, it.size));
      if (has) {
        miss_streak = 0;
        learnt.Blob(it.digest);
        progress.Add(1, 0);
        return Status::OK();
      }
      miss_streak++;
    } else {
      n_unasked++;
    }
    KI_RETURN_IF_ERROR(upload(conn, i));
    n_sent++;
    progress.Add(1, it.size);
    return Status::OK();
  });
  report.blobs_checked = n_checked;
  report.blobs_sent = n_sent;
  report.blobs_sent_unasked = n_unasked;
  report.http_requests = target->requests();
  if (!st.ok()) {
    (void)target->Finish();  // a layout keeps the blobs it got, so a re-run resumes
    save_state();            // and a registry's re-run skips what was uploaded
    return st.WithContext("push to " + url.str() + " is incomplete: " + std::to_string(n_sent.load()) +
                          " objects were uploaded and no manifest or tag was written; " + RerunAdvice(*target, "resume"));
  }
  std::unordered_map<Digest, size_t> index_of;
  for (size_t i = 0; i < items.size(); ++i) index_of[items[i].digest] = i;
  auto count_sent = [&] {
    for (size_t r = 0; r < closures.size(); ++r) {
      PushedRef& pr = report.refs[r];
      pr.sent = pr.skipped = pr.bytes_sent = 0;
      for (const Layer& l : closures[r].layers) {
        if (sent[index_of[l.digest]]) {
          pr.sent++;
          pr.bytes_sent += l.size;
        } else {
          pr.skipped++;
        }
      }
    }
  };

  // Re-checks a closure whose manifest the registry refused although
  // remote.state said it held every blob (a registry wiped or
  // garbage-collected since): HEAD each, upload what is gone. True when
  // something was missing.
  std::mutex recheck_mu;  // items' `sent` flags are shared by closures
  auto recheck = [&](Conn& conn, const std::vector<Layer>& layers) -> Result<bool> {
    bool missing = false;
    std::vector<size_t> idx{0};
    for (const Layer& l : layers) idx.push_back(index_of[l.digest]);
    for (size_t i : idx) {
      if (!state.blobs.count(items[i].digest)) continue;  // checked or sent by this push
      KI_ASSIGN_OR_RETURN(bool has, conn.HasBlob(items[i].digest, items[i].size));
      if (has) continue;
      missing = true;
      learnt.Gone(items[i].digest);
      std::lock_guard<std::mutex> l(recheck_mu);
      if (!sent[i]) KI_RETURN_IF_ERROR(upload(conn, i));
    }
    return missing;
  };
  // PUT a manifest under `ref`; if refused and the closure relied on
  // remote.state, re-check its blobs and try once more.
  auto put_image_manifest = [&](Conn& conn, const std::vector<Layer>& layers, const std::string& ref,
                                const std::string& manifest) -> Status {
    Status put = conn.PutManifest(ref, manifest, remote::kOciManifestType, nullptr);
    if (put.ok() || state.blobs.empty()) return put;
    KI_ASSIGN_OR_RETURN(bool missing, recheck(conn, layers));
    if (!missing) return put;
    return conn.PutManifest(ref, manifest, remote::kOciManifestType, nullptr);
  };

  // Manifests last, in parallel too (thousands of records per push).
  std::atomic<size_t> written{0};
  Status mst;
  if (!opts.bundle_tag.empty()) {
    // One bundle: its parts, its pack (blob, then the manifest naming it),
    // then the index under the tag (last, as a closure manifest is).
    std::string pack_manifest, index;
    Digest index_digest;
    auto set_pack = [&](const PackRow& p, bool built) {
      report.pack.reset();
      pack_manifest.clear();
      if (p.objects == 0) return;  // no object small enough: no pack
      report.pack = PushReport::Pack{p.digest, p.size, p.objects, false, built};
      pack_manifest = remote::PackManifest(p.digest, p.size, p.objects);
    };
    // The pack once built: named by the index, and recorded for the next push.
    auto take_built_pack = [&]() -> Status {
      if (packer.joinable()) packer.join();
      if (!pack_bytes) return Status::OK();  // use_pack off, or nothing in the bundle
      KI_RETURN_IF_ERROR(pack_bytes->status());
      PackRow row{pack_key, Sha256Of(**pack_bytes), (*pack_bytes)->size(), pack_objects};
      learnt.Pack(opts.bundle_tag, row);
      set_pack(row, true);
      return Status::OK();
    };
    auto compose_index = [&] {
      index = remote::BundleIndex(parts, closures.size(), report.pack ? &pack_manifest : nullptr);
      index_digest = Sha256Of(index);
      for (PushedRef& pr : report.refs) {
        pr.tag = opts.bundle_tag;
        pr.manifest = index_digest;
      }
    };
    if (known_pack) {
      set_pack(*known_pack, false);
    } else if (Status built = take_built_pack(); !built.ok()) {
      (void)target->Finish();
      save_state();
      return built.WithContext("push to " + url.str() + " is incomplete: every object was uploaded, "
                               "but the bundle's pack could not be built (no manifest was written)");
    }
    compose_index();
    mst = [&]() -> Status {
      KI_ASSIGN_OR_RETURN(auto conn, target->Connect());
      // Written before (remote.state), and a HEAD says the tag still names it.
      auto tag_names_index = [&]() -> Result<bool> {
        auto known = state.tags.find(opts.bundle_tag);
        if (known == state.tags.end() || known->second != index_digest) return false;
        KI_ASSIGN_OR_RETURN(auto now, conn->ResolveTag(opts.bundle_tag));
        return now && *now == index_digest;
      };
      KI_ASSIGN_OR_RETURN(bool unchanged, tag_names_index());
      if (unchanged) return Status::OK();
      if (known_pack) {
        // remote.state's row only recognises a bundle the registry holds:
        // an index is written only with a pack built from the objects.
        known_pack.reset();
        pack_bytes = BuildPack(store, all, &pack_objects);
        KI_RETURN_IF_ERROR(take_built_pack().WithContext("the bundle's pack could not be built"));
        compose_index();
        KI_ASSIGN_OR_RETURN(unchanged, tag_names_index());
        if (unchanged) return Status::OK();
      }
      if (report.pack) {
        // The pack blob: asked about first (a re-push of a bundle whose
        // index changed keeps the same pack when its objects did not).
        KI_ASSIGN_OR_RETURN(bool has, conn->HasBlob(report.pack->digest, report.pack->size));
        if (!has) {
          KI_RETURN_IF_ERROR(conn->PutBlob(report.pack->digest, **pack_bytes));
          report.pack->sent = true;
        }
        pack_bytes.reset();
      }
      conn.reset();
      // Parts by digest; each part's layers are the slice it lists.
      std::vector<std::vector<Layer>> part_layers(parts.size());
      for (size_t p = 0, next = 0; p < parts.size(); ++p) {
        size_t n = Json::parse(parts[p])["layers"].size();
        part_layers[p].assign(all.begin() + next, all.begin() + next + n);
        next += n;
      }
      KI_RETURN_IF_ERROR(RunParallel(*target, opts.push_jobs, parts.size(), [&](Conn& c, size_t p) -> Status {
        return put_image_manifest(c, part_layers[p], Sha256Of(parts[p]).str(), parts[p]);
      }));
      KI_ASSIGN_OR_RETURN(conn, target->Connect());
      if (report.pack) {
        KI_RETURN_IF_ERROR(conn->PutManifest(Sha256Of(pack_manifest).str(), pack_manifest, remote::kOciManifestType, nullptr));
      }
      KI_RETURN_IF_ERROR(conn->PutManifest(opts.bundle_tag, index, remote::kOciIndexType, nullptr));
      learnt.Tag(opts.bundle_tag, index_digest);
      return Status::OK();
    }();
    if (mst.ok()) written = closures.size();
  } else mst = RunParallel(*target, opts.push_jobs, closures.size(), [&](Conn& conn, size_t r) -> Status {
    PushedRef& pr = report.refs[r];
    std::string manifest = remote::ImageManifest(closures[r]);
    pr.manifest = Sha256Of(manifest);
    std::vector<std::string> tags{pr.tag};
    // `ki pull REMOTE <ki digest>` finds a named root through this tag.
    std::string digest_tag = "ki-" + pr.root.hex();
    if (opts.digest_tags && pr.tag != digest_tag) tags.push_back(digest_tag);
    for (const std::string& tag : tags) {
      auto known = state.tags.find(tag);
      if (known != state.tags.end() && known->second == pr.manifest) {
        // Written before: a HEAD confirms it still is (tags move).
        KI_ASSIGN_OR_RETURN(auto now, conn.ResolveTag(tag));
        if (now && *now == pr.manifest) continue;
      }
      KI_RETURN_IF_ERROR(put_image_manifest(conn, closures[r].layers, tag, manifest));
      learnt.Tag(tag, pr.manifest);
    }
    for (const Layer& l : closures[r].layers) {
      if (l.role != Role::kAttestation) continue;
      std::string ref_manifest = remote::AttestationManifest(l, pr.manifest, manifest.size());
      Digest rd = Sha256Of(ref_manifest);
      if (state.referrers.count(rd)) continue;
      bool indexed = false;
      KI_RETURN_IF_ERROR(conn.PutManifest(rd.str(), ref_manifest, remote::kOciManifestType, &indexed));
      if (!indexed) {
        // Roots are distinct, so no two workers update one subject's index.
        Json desc = {{"mediaType", remote::kOciManifestType},
                     {"digest", rd.str()},
                     {"size", ref_manifest.size()},
                     {"artifactType", kDsseMediaType},
                     {"annotations", {{std::string(kAnnSubject), l.subject->str()}}}};
        KI_RETURN_IF_ERROR(AddToFallbackIndex(conn, pr.manifest, desc, opts));
      }
      learnt.Referrer(rd);
    }
    written++;
    return Status::OK();
  });
  Status fin = target->Finish();
  report.http_requests = target->requests();
  report.blobs_sent = 0;
  for (uint8_t s : sent) report.blobs_sent += s;
  report.bytes_sent = bytes_up;
  report.blobs_streamed = n_streamed;
  count_sent();
  save_state();
  if (!mst.ok()) {
    return mst.WithContext("push to " + url.str() + " is incomplete: every object was uploaded, but only " +
                           std::to_string(written.load()) + " of " + std::to_string(closures.size()) +
                           " refs were written; " + RerunAdvice(*target, "finish"));
  }
  KI_RETURN_IF_ERROR(fin);
  return report;
}

// ---------------------------------------------------------------- pull

namespace {

struct PullItem {
  Layer layer;
  bool present = false;   // held by the store already
  std::string bytes;      // fetched (or read locally when needed)
  // A manifest to store: encoded (checked, framed, compressed) on a
  // download worker as soon as its object and document are both at hand,
  // so that the batch at the end only writes.
  std::optional<EncodedManifest> encoded;
  Status prepared;
  bool received = false;   // bytes are here, checked (from a pack or a GET)
  bool from_pack = false;
  bool stored = false;     // written by an early blob batch (TransferOptions::pull_buffer_bytes)
  // A blob over TransferOptions::stream_above: never in `bytes`, stored
  // by the worker that downloaded it.
  bool streamed = false;
};

}  // namespace

Result<PullReport> Pull(Store& store, const RemoteUrl& url, const std::vector<std::string>& refs,
                        const TransferOptions& opts) {
  PullReport report;
  KI_ASSIGN_OR_RETURN(RemoteState state, LoadState(store, url));
  KI_ASSIGN_OR_RETURN(auto target, OpenTarget(url, opts, Access::kPull));

  // 1. Every ref's manifest, in parallel.
  struct RefFetch {
    PulledRef pr;
    std::string tag;                 // "" when pulled by manifest digest
    std::vector<Layer> layers;       // the image manifest's
    std::vector<Layer> attached;     // attestations found as referrers
    std::string referrers;           // the referrers index (API or fallback tag), "" when none
    bool bundle = false;             // an image index of bundle parts (no referrers)
    std::vector<remote::PartRef> parts;  // a bundle's part manifests, fetched after the refs
    std::optional<remote::PartRef> pack;  // a bundle's pack manifest, fetched if worth it
    // The pack manifest itself when the part fetches read it already (an
    // index without artifactType fields: checked against its digest and
    // the index's size), so that it is not fetched twice.
    std::optional<remote::FetchedManifest> pack_manifest;
  };
  std::vector<RefFetch> fetches(refs.size());
  Status st = RunParallel(*target, opts.pull_jobs, refs.size(), [&](Conn& c, size_t r) -> Status {
    RefFetch& f = fetches[r];
    const std::string& ref = refs[r];
    f.pr.ref = ref;
    std::string want = ref;
    if (!Digest::IsValid(ref) && !IsValidTag(ref)) want = SanitizeTag(ref);
    // A digest is first read as a ki digest (push tags unnamed roots, and
    // named ones with --digest-tags, ki-<hex>), then as an OCI manifest
    // digest. In that order because a registry asked for a manifest by the
    // digest of a blob it holds may answer 500 (distribution 2.8 does).
    if (Digest::IsValid(ref)) want = "ki-" + ref.substr(7);
    auto fetched = c.GetManifest(want);
    if (!fetched.ok() && fetched.status().IsNotFound() && Digest::IsValid(ref)) {
      want = ref;
      fetched = c.ProbeManifest(want);
      if (!fetched.ok() && !fetched.status().IsCorruption()) {
        return Status::NotFound(url.str() + " has neither a tag ki-" + ref.substr(7) + " nor a manifest " + ref +
                                " (" + fetched.status().message() +
                                "); a named root is tagged by its ki digest only when pushed with --digest-tags:"
                                " pull it by name");
      }
    }
    if (!fetched.ok()) return fetched.status();
    f.tag = Digest::IsValid(want) ? "" : want;
    f.pr.manifest = fetched->digest;
    bool index = fetched->media_type == remote::kOciIndexType;
    if (fetched->media_type.empty() && fetched->bytes.find(remote::kOciIndexType) != std::string::npos) {
      Json j = Json::parse(fetched->bytes, nullptr, false);  // a layout says no media type: look
      index = StringOr(j, "mediaType") == remote::kOciIndexType;
    }
    if (index) {
      // A bundle: every part, by digest (GetManifest checks the hash), and
      // the size its descriptor announced.
      f.bundle = true;
      auto parts = remote::ParseBundleIndex(fetched->bytes, fetched->media_type, opts);
      if (!parts.ok()) return parts.status().WithContext(url.str() + " " + ref);
      f.parts = std::move(parts->parts);
      f.pack = parts->pack;
      return Status::OK();
    }
    auto closure = remote::ParseImageManifest(fetched->bytes, fetched->media_type, opts);
    if (!closure.ok()) return closure.status().WithContext(url.str() + " " + ref);
    f.pr.root = closure->root;
    f.pr.objects = closure->layers.size();
    f.layers = std::move(closure->layers);
    return Status::OK();
  });
  report.http_requests = target->requests();
  if (!st.ok()) return st;

  // Bundle parts (a few MiB of JSON each), all in parallel: each one
  // fetched by digest and parsed on its own worker.
  struct PartFetch {
    size_t ref, part;
    std::vector<Layer> layers;
    std::optional<remote::FetchedManifest> pack;  // an untyped entry that turned out to be the pack's manifest
  };
  std::vector<PartFetch> part_fetches;
  for (size_t r = 0; r < fetches.size(); ++r)
    for (size_t k = 0; k < fetches[r].parts.size(); ++k) part_fetches.push_back({r, k, {}});
  // max_layers bounds a whole bundle, not only each part: 10,000 parts of
  // 4 MiB could otherwise list hundreds of millions of layers, all held.
  std::unique_ptr<std::atomic<uint64_t>[]> bundle_layers(new std::atomic<uint64_t>[fetches.size()]);
  for (size_t r = 0; r < fetches.size(); ++r) bundle_layers[r] = 0;
  st = RunParallel(*target, opts.pull_jobs, part_fetches.size(), [&](Conn& c, size_t j) -> Status {
    PartFetch& pf = part_fetches[j];
    const std::string& ref = refs[pf.ref];
    const remote::PartRef& part = fetches[pf.ref].parts[pf.part];
    KI_ASSIGN_OR_RETURN(auto pm, c.GetManifest(part.digest.str()));
    if (pm.bytes.size() != part.size) {
      return Status::Corruption(url.str() + " " + ref + ": part " + part.digest.str() + " has " +
                                std::to_string(pm.bytes.size()) + " bytes, the index says " + std::to_string(part.size));
    }
    auto layers = remote::ParseBundlePart(pm.bytes, pm.media_type, opts);
    if (!layers.ok()) {
      // An untyped entry that is no part may be the pack's manifest (small:
      // looked at only then, so a part's JSON is parsed once).
      if (!part.typed) {
        Json peek = Json::parse(pm.bytes, nullptr, false);
        if (StringOr(peek, "artifactType") == kOciPackType) {
          pf.pack = std::move(pm);  // checked when (and if) the pack is used
          return Status::OK();
        }
      }
      return layers.status().WithContext(url.str() + " " + ref + " part " + part.digest.str());
    }
    if ((bundle_layers[pf.ref] += layers->size()) > opts.max_layers) {
      return Status::InvalidInput(url.str() + " " + ref + ": remote bundle lists more than " +
                                  std::to_string(opts.max_layers) + " objects in its parts");
    }
    pf.layers = std::move(*layers);
    return Status::OK();
  });
  report.http_requests = target->requests();
  if (!st.ok()) return st;
  for (PartFetch& pf : part_fetches) {  // in index order
    RefFetch& f = fetches[pf.ref];
    if (pf.pack) {
      if (f.pack) return Status::InvalidInput(url.str() + " " + refs[pf.ref] + ": remote bundle index: more than one pack");
      f.pack = f.parts[pf.part];
      f.pack_manifest = std::move(pf.pack);
      continue;
    }
    for (Layer& l : pf.layers) f.layers.push_back(std::move(l));
    f.pr.objects = f.layers.size();
  }
  part_fetches.clear();
  // ParseBundleIndex let an untyped index list one part too many, in case
  // one of them was the pack's manifest: now that each said what it is,
  // the parts are counted.
  for (size_t r = 0; r < fetches.size(); ++r) {
    size_t parts = fetches[r].parts.size() - (fetches[r].pack_manifest ? 1 : 0);
    if (fetches[r].bundle && parts > remote::kBundleMaxParts) {
      return Status::InvalidInput(url.str() + " " + refs[r] + ": remote bundle index: " + std::to_string(parts) +
                                  " parts, more than " + std::to_string(remote::kBundleMaxParts));
    }
  }

  // Attestations attached later, as referrers of a manifest: through the
  // referrers API when the remote has one (asked once, then per manifest),
  // else through the sha256-<hex> tags, which one tags/list tells apart
  // from the (usual) manifests that have none.
  size_t first = 0;  // the first closure (bundles have no referrers)
  while (first < fetches.size() && fetches[first].bundle) ++first;
  if (first < fetches.size()) {
    KI_ASSIGN_OR_RETURN(auto probe_conn, target->Connect());
    KI_ASSIGN_OR_RETURN(auto probe, probe_conn->Referrers(fetches[first].pr.manifest));
    bool api = probe.has_value();
    if (api) fetches[first].referrers = std::move(*probe);
    std::optional<std::unordered_set<std::string>> fallback_tags;
    size_t closures = 0;
    for (const RefFetch& f : fetches) closures += !f.bundle;
    if (!api && closures >= opts.tag_list_min_refs) {
      KI_ASSIGN_OR_RETURN(auto listed, probe_conn->ListTags());
      if (listed) {
        fallback_tags.emplace();
        for (std::string& t : *listed)
          if (t.rfind("sha256-", 0) == 0) fallback_tags->insert(std::move(t));
      }
    }
    probe_conn.reset();
    st = RunParallel(*target, opts.pull_jobs, fetches.size(), [&](Conn& c, size_t r) -> Status {
      RefFetch& f = fetches[r];
      if (f.bundle) return Status::OK();
      if (api) {
        if (r == first) return Status::OK();
        KI_ASSIGN_OR_RETURN(auto idx, c.Referrers(f.pr.manifest));
        if (idx) f.referrers = std::move(*idx);
        return Status::OK();
      }
      std::string tag = FallbackTag(f.pr.manifest);
      if (fallback_tags && !fallback_tags->count(tag)) return Status::OK();
      auto fb = c.GetManifest(tag);
      if (fb.ok()) f.referrers = std::move(fb->bytes);
      else if (!fb.status().IsNotFound()) return fb.status();
      return Status::OK();
    });
    report.http_requests = target->requests();
    if (!st.ok()) return st;
  }
  st = RunParallel(*target, opts.pull_jobs, fetches.size(), [&](Conn& c, size_t r) -> Status {
    RefFetch& f = fetches[r];
    if (f.referrers.empty()) return Status::OK();
    ParseLimits limits;
    limits.max_bytes = opts.max_manifest_size;
    auto idx = ParseDocument(f.referrers, DocFormat::kJson, "referrers of " + f.pr.manifest.str(), limits);
    f.referrers.clear();
    if (!idx.ok() || !idx->is_object() || !idx->contains("manifests") || !(*idx)["manifests"].is_array()) {
      f.pr.warnings.push_back("ignored a malformed referrers index for " + f.pr.manifest.str());
      return Status::OK();
    }
    for (const Json& d : (*idx)["manifests"]) {
      // Entries of other types (or of other shapes) are not ours to read.
      if (StringOr(d, "artifactType") != kDsseMediaType) continue;
      auto rd = Digest::Parse(StringOr(d, "digest"));
      if (!rd.ok()) continue;
      auto rm = c.GetManifest(rd->str());
      if (!rm.ok()) {
        f.pr.warnings.push_back("referrer " + rd->str() + ": " + rm.status().message());
        continue;
      }
      auto att = remote::ParseAttestationManifest(rm->bytes, rm->media_type, f.pr.manifest, opts);
      if (!att.ok()) {
        f.pr.warnings.push_back("referrer " + rd->str() + " ignored: " + att.status().message());
        continue;
      }
      f.attached.push_back(std::move(*att));
    }
    return Status::OK();
  });
  report.http_requests = target->requests();
  if (!st.ok()) return st;

  // 2. Merge: one item per digest, marked when the store holds it already.
  std::vector<PullItem> items;
  std::unordered_map<Digest, size_t> item_of;
  std::vector<std::vector<Digest>> ref_layers;  // per ref: the digests its manifest lists
  struct AttRow {
    Digest subject, envelope;
    std::string value;
    size_t ref;  // the ref whose manifest brought it (counts it, gets its warning)
  };
  std::vector<AttRow> rows;
  std::set<std::pair<Digest, Digest>> row_keys;
  auto add_item = [&](const Layer& l) -> Status {
    auto it = item_of.find(l.digest);
    if (it != item_of.end()) {
      if (items[it->second].layer.size != l.size) {
        return Status::InvalidInput("remote manifests disagree on the size of " + l.digest.str());
      }
      return Status::OK();
    }
    KI_ASSIGN_OR_RETURN(auto info, store.Stat(l.digest));
    PullItem p;
    p.layer = l;
    p.present = info.has_value();
    p.streamed = !p.present && l.role == Role::kBlob && l.size > opts.stream_above;
    if (info && info->size != l.size) {
      return Status::InvalidInput("remote says " + l.digest.str() + " has " + std::to_string(l.size) +
                                  " bytes; the local copy has " + std::to_string(info->size));
    }
    item_of[l.digest] = items.size();
    items.push_back(std::move(p));
    return Status::OK();
  };
  for (RefFetch& f : fetches) {
    ref_layers.emplace_back();
    for (const std::vector<Layer>* list : {&f.layers, &f.attached}) {
      for (const Layer& l : *list) {
        if (l.role == Role::kAttestation && !row_keys.insert({*l.subject, l.digest}).second) continue;
        KI_RETURN_IF_ERROR(add_item(l));
        ref_layers.back().push_back(l.digest);
        if (l.role == Role::kAttestation) {
          rows.push_back({*l.subject, l.digest, l.index_value, report.refs.size()});
          f.pr.attestations++;
        }
      }
    }
    report.refs.push_back(f.pr);
  }
  std::vector<std::string> tags;
  std::vector<std::optional<remote::PartRef>> packs;
  std::vector<std::optional<remote::FetchedManifest>> pack_manifests;
  for (RefFetch& f : fetches) {
    tags.push_back(f.tag);
    packs.push_back(f.pack);
    pack_manifests.push_back(std::move(f.pack_manifest));
  }
  fetches.clear();

  // Which manifests get stored, and what each waits for: its object and
  // its document (when the pull has one), those the store lacks arriving
  // over the network. Documents go in with their manifest.
  std::unordered_map<Digest, size_t> document_for;  // manifest digest -> item of its document
  for (size_t i = 0; i < items.size(); ++i)
    if (items[i].layer.role == Role::kDocument) document_for[*items[i].layer.document_of] = i;
  std::vector<size_t> manifest_of(items.size(), SIZE_MAX);  // item -> the manifest item it completes
  std::unique_ptr<std::atomic<int>[]> waiting(new std::atomic<int>[items.size()]);
  std::vector<size_t> to_store;  // manifest items to store, in item order
  for (size_t i = 0; i < items.size(); ++i) {
    waiting[i] = 0;
    if (items[i].layer.role != Role::kManifest) continue;
    auto doc_it = document_for.find(items[i].layer.digest);
    bool doc_needed = doc_it != document_for.end() && !items[doc_it->second].present;
    if (items[i].present && !doc_needed) continue;
    to_store.push_back(i);
    if (!items[i].present) {
      manifest_of[i] = i;
      waiting[i]++;
    }
    if (doc_needed) {
      manifest_of[doc_it->second] = i;
      waiting[i]++;
    }
  }
  // Checks and encodes manifest item `i` (its bytes and its document's are
  // here or in the store); the errors are reported after the downloads, in
  // item order.
  auto bytes_of = [&](PullItem& p) -> Result<std::string*> {
    if (p.present && p.bytes.empty() && p.layer.size > 0) {
      KI_ASSIGN_OR_RETURN(p.bytes, store.Read(p.layer.digest));
    }
    return &p.bytes;
  };
  auto prepare = [&](size_t i) -> Status {
    PullItem& p = items[i];
    const Layer& l = p.layer;
    KI_ASSIGN_OR_RETURN(std::string * raw, bytes_of(p));
    auto m = ManifestFromCanonical(*raw, l.digest.str());
    if (!m.ok()) return m.status().WithContext("pulled manifest object " + l.digest.str());
    if (m->digest != l.digest || m->canonical != *raw) {
      return Status::InvalidInput("pulled manifest object " + l.digest.str() + " is not in canonical form");
    }
    auto doc_it = document_for.find(l.digest);
    if (doc_it == document_for.end()) {
      p.encoded = store.EncodeManifest(*m, std::nullopt, "");
      return Status::OK();
    }
    PullItem& dp = items[doc_it->second];
    KI_ASSIGN_OR_RETURN(std::string * doc, bytes_of(dp));
    DocFormat fmt = dp.layer.media_type == kDocumentMediaTypeYaml ? DocFormat::kYaml : DocFormat::kJson;
    ParseLimits limits;
    limits.max_bytes = std::max<uint64_t>(limits.max_bytes, doc->size());
    KI_ASSIGN_OR_RETURN(Json dj, ParseDocument(*doc, fmt, dp.layer.digest.str(), limits));
    auto full = ManifestFromJson(std::move(dj), dp.layer.digest.str());
    if (!full.ok() || full->digest != l.digest) {
      return Status::InvalidInput("pulled document " + dp.layer.digest.str() + " is not a document of " +
                                  l.digest.str());
    }
    p.encoded = store.EncodeManifest(*full, *doc, dp.layer.media_type);
    return Status::OK();
  };

  // A piece of manifest `m` is here: returns true when it was the last.
  auto completes = [&](size_t i) {
    size_t m = manifest_of[i];
    return m != SIZE_MAX && --waiting[m] == 0;
  };
  uint64_t lacking = 0;
  for (const PullItem& p : items) lacking += !p.present;
  Progress progress(opts, lacking);

  // Verified blobs wait in memory for the batch at the end, up to
  // pull_buffer_bytes (TransferOptions). Once half the buffer is held, one
  // worker writes what is held in a batch of its own and lets it go, while
  // the others keep downloading; a worker that would take the total held
  // and being written past the buffer waits for that write (downloads are
  // faster than fsynced writes: without the wait each worker piled up a
  // buffer's worth, 1072 MiB held for a 256 MiB buffer; bench/results/
  // pull-memory-2026-11-30.md). Only role-blob items: nothing reads their
  // bytes once they are verified (a manifest waits on its object and
  // document, the end checks attestations), so writing them early skips
  // no check. One writer at a time (one Batch per store).
  std::mutex held_mu;  // guards everything below
  std::condition_variable write_done;
  std::vector<size_t> held;
  uint64_t held_bytes = 0, writing_bytes = 0;
  bool writing = false;
  std::atomic<uint64_t> written_early{0};
  std::mutex batch_mu;  // one Batch at a time: the early blob writes and the streamed blobs
  auto write_blobs = [&](const std::vector<size_t>& to_write) -> Status {
    std::lock_guard<std::mutex> bl(batch_mu);
    KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
    for (size_t k : to_write) KI_RETURN_IF_ERROR(batch->PutBlob(items[k].bytes, items[k].layer.media_type).status());
    KI_RETURN_IF_ERROR(batch->Commit());
    for (size_t k : to_write) {
      items[k].stored = true;
      std::string().swap(items[k].bytes);
    }
    written_early += to_write.size();
    return Status::OK();
  };
  auto hold = [&](size_t i) -> Status {
    if (items[i].layer.role != Role::kBlob) return Status::OK();
    std::unique_lock<std::mutex> l(held_mu);
    held.push_back(i);
    held_bytes += items[i].bytes.size();
    report.peak_blob_bytes_held = std::max(report.peak_blob_bytes_held, held_bytes + writing_bytes);
    for (;;) {
      if (!writing && held_bytes * 2 > opts.pull_buffer_bytes) {
        std::vector<size_t> to_write;
        to_write.swap(held);
        writing_bytes = held_bytes;
        held_bytes = 0;
        writing = true;
        l.unlock();
        Status ws = write_blobs(to_write);
        l.lock();
        writing = false;
        writing_bytes = 0;
        write_done.notify_all();
        if (!ws.ok()) {
          // Not written: back to the held ones, for the batch at the end.
          for (size_t k : to_write) held_bytes += items[k].bytes.size();
          held.insert(held.end(), to_write.begin(), to_write.end());
          return ws.WithContext("writing verified blobs to the store");
        }
        continue;  // others may have added meanwhile
      }
      if (held_bytes + writing_bytes <= opts.pull_buffer_bytes || !writing) return Status::OK();
      write_done.wait(l);
    }
  };
  // A streamed blob: downloaded into a scratch file, checked as it
  // arrives (GetBlobTo), then stored from that file in a batch of its own,
  // as the early blob writes above are (and for the same reason, nothing
  // reads a blob's bytes after its check). The scratch file goes away on
  // every way out.
  std::atomic<uint64_t> streamed_stored{0};
  std::once_flag swept;  // RemoveStaleScratch, before the first streamed blob
  auto stream_blob = [&](Conn& c, size_t i) -> Status {
    PullItem& p = items[i];
    Env* env = Env::Default();
    KI_RETURN_IF_ERROR(env->CreateDirs(store.path() + "/objects/incoming"));
    std::call_once(swept, [&] { RemoveStaleScratch(env, store.path() + "/objects/incoming"); });
    ScratchDownload scratch(env, ScratchPath(store));
    KI_RETURN_IF_ERROR(c.GetBlobTo(p.layer.digest, p.layer.size, scratch));
    KI_ASSIGN_OR_RETURN(std::string path, scratch.Commit());
    KI_ASSIGN_OR_RETURN(auto in, env->NewSequentialFile(path));
    std::lock_guard<std::mutex> bl(batch_mu);
    KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
    // Hashed on arrival: the store reads the scratch file once, to compress
    // it, and refuses it (Corruption) if it no longer hashes to the digest.
    KI_RETURN_IF_ERROR(batch->PutBlobStream(*in, p.layer.media_type, path, p.layer.digest).status());
    KI_RETURN_IF_ERROR(batch->Commit().WithContext("writing verified blob " + p.layer.digest.str() + " to the store"));
    p.stored = true;
    streamed_stored++;
    return Status::OK();
  };
  // What a failure leaves in the store, for its message.
  auto stored_note = [&]() -> std::string {
    const uint64_t n = written_early + streamed_stored;
    if (n == 0) return "nothing was stored";
    return "no manifest, name or attestation was stored; the " + std::to_string(n) +
           " verified blobs written before the failure stay, and a re-run does not fetch them again";
  };

  // Packs first: a bundle whose missing objects would cost more one by one
  // than its pack gets them from the pack. Every entry is checked against
  // the layer of its digest (size, SHA-256) before it is used; a pack that
  // fails a check stops being read, what it delivered before stays (it was
  // verified), and the rest is fetched one by one below.
  std::vector<size_t> ready;  // manifests a pack completed: prepared on the download workers
  std::vector<Digest> pack_blobs;
  uint64_t n_from_pack = 0;
  for (size_t r = 0; r < packs.size() && opts.use_pack; ++r) {
    if (!packs[r]) continue;
    uint64_t missing = 0, missing_bytes = 0;
    remote::PackReadLimits limits;
    limits.max_tar_bytes = remote::kPackTrailerMax;
    std::unordered_map<Digest, uint64_t> in_bundle;
    for (const Digest& d : ref_layers[r]) {
      const PullItem& p = items[item_of[d]];
      in_bundle.emplace(d, p.layer.size);
      limits.max_tar_bytes += remote::PackEntryBytes(p.layer.size);
      if (!p.present && !p.received) {
        missing++;
        missing_bytes += p.layer.size;
      }
    }
    if (missing == 0) continue;  // not even the pack's manifest is asked for
    uint64_t delivered = 0;
    std::optional<Digest> pack_digest;
    Status ps = [&]() -> Status {
      KI_ASSIGN_OR_RETURN(auto conn, target->Connect());
      remote::FetchedManifest pm;
      if (pack_manifests[r]) {
        pm = std::move(*pack_manifests[r]);
      } else {
        KI_ASSIGN_OR_RETURN(pm, conn->GetManifest(packs[r]->digest.str()));
      }
      if (pm.bytes.size() != packs[r]->size) {
        return Status::Corruption("its manifest has " + std::to_string(pm.bytes.size()) + " bytes, the index says " +
                                  std::to_string(packs[r]->size));
      }
      KI_ASSIGN_OR_RETURN(remote::PartRef blob, remote::ParsePackManifest(pm.bytes, pm.media_type, opts));
      pack_digest = blob.digest;
      pack_blobs.push_back(blob.digest);
      if (!PackWorthFetching(blob.size, missing, missing_bytes)) return Status::OK();
      KI_ASSIGN_OR_RETURN(std::string pack, conn->GetBlob(blob.digest, blob.size));
      report.packs_received++;
      report.pack_bytes_received += pack.size();
      auto expected = [&](const Digest& d) -> std::optional<uint64_t> {
        auto it = in_bundle.find(d);
        if (it == in_bundle.end()) return std::nullopt;
        return it->second;
      };
      return remote::ReadPack(pack, limits, expected, [&](const Digest& d, std::string&& bytes) -> Status {
        size_t i = item_of[d];
        PullItem& p = items[i];
        if (p.present || p.received) return Status::OK();
        p.bytes = std::move(bytes);
        p.received = p.from_pack = true;
        delivered++;
        progress.Add(1, p.layer.size);
        if (completes(i)) ready.push_back(manifest_of[i]);
        // Let go of the entry's bytes past the buffer. A store error here
        // refuses the rest of the pack, and the one-by-one fetch below meets
        // it again and fails the pull; the entries held stay for the end.
        return hold(i);
      });
    }();
    n_from_pack += delivered;
    if (!ps.ok()) {
      report.refs[r].warnings.push_back("pack " + (pack_digest ? pack_digest->str() : packs[r]->digest.str()) +
                                        " refused (" + ps.message() + "); " + std::to_string(delivered) +
                                        " verified objects taken from it, the others fetched one by one");
    }
  }
  report.http_requests = target->requests();

  // Fetch what is still lacking, in parallel; each blob is checked on
  // arrival, and the worker that brings the last piece of a manifest
  // prepares it while the others keep downloading. Manifests that packs
  // completed are prepared by the same workers once the downloads are done.
  std::vector<size_t> need;
  for (size_t i = 0; i < items.size(); ++i)
    if (!items[i].present && !items[i].received) need.push_back(i);
  st = RunParallel(*target, opts.pull_jobs, need.size() + ready.size(), [&](Conn& c, size_t k) -> Status {
    if (k >= need.size()) {
      size_t m = ready[k - need.size()];
      items[m].prepared = prepare(m);
      return Status::OK();
    }
    PullItem& p = items[need[k]];
    if (p.streamed) {
      KI_RETURN_IF_ERROR(stream_blob(c, need[k]));
      p.received = true;
      progress.Add(1, p.layer.size);
      if (completes(need[k])) items[manifest_of[need[k]]].prepared = prepare(manifest_of[need[k]]);
      return Status::OK();
    }
    KI_ASSIGN_OR_RETURN(p.bytes, c.GetBlob(p.layer.digest, p.layer.size));
    p.received = true;
    progress.Add(1, p.bytes.size());
    KI_RETURN_IF_ERROR(hold(need[k]));
    if (completes(need[k])) items[manifest_of[need[k]]].prepared = prepare(manifest_of[need[k]]);
    return Status::OK();
  });
  report.http_requests = target->requests();
  report.blobs_written_early = written_early;
  report.blobs_streamed = streamed_stored;
  if (!st.ok()) return st.WithContext("pull from " + url.str() + " failed; " + stored_note());

  // A tag that moved meanwhile: what we pulled is the manifest we read
  // first, complete and verified; say so.
  size_t n_tags = 0;
  for (const std::string& t : tags) n_tags += !t.empty();
  if (n_tags <= opts.tag_recheck_max) (void)RunParallel(*target, opts.pull_jobs, report.refs.size(), [&](Conn& c, size_t r) -> Status {
    if (tags[r].empty()) return Status::OK();
    auto now = c.ResolveTag(tags[r]);
    if (now.ok() && *now && **now != report.refs[r].manifest) {
      report.refs[r].warnings.push_back("the tag " + tags[r] + " moved during the pull (now " + (*now)->str() +
                                        "); pulled " + report.refs[r].manifest.str());
    }
    return Status::OK();
  });

  // Attestations: each (subject, envelope) row is checked as `ki sign
  // --envelope` checks an envelope before filing it (CheckEnvelope: its
  // shape, its statement, that the statement names the subject, the
  // signatures by the keys we know). A faulty one is not stored, neither
  // the row nor (unless a sound row files it too) the envelope, and the
  // ref that brought it warns: it is a signer's claim that fails, not the
  // transfer, and `ki verify` and `ki audit` would otherwise report it as a
  // fault of this store from now on.
  std::unordered_set<Digest> envelopes_filed;
  {
    std::vector<AttRow> sound;
    for (AttRow& r : rows) {
      KI_ASSIGN_OR_RETURN(std::string * bytes, bytes_of(items[item_of[r.envelope]]));
      std::string fault = remote::AttestationFault(*bytes, r.envelope, r.subject, opts.attestation_keys);
      if (!fault.empty()) {
        PulledRef& pr = report.refs[r.ref];
        pr.attestations--;
        pr.warnings.push_back("attestation " + r.envelope.str() + " of " + r.subject.str() + " not stored: " + fault);
        continue;
      }
      envelopes_filed.insert(r.envelope);
      sound.push_back(std::move(r));
    }
    rows = std::move(sound);
  }

  // Everything is verified: build the batch. Blobs first, then every
  // manifest in one PutEncodedManifests (written table by table in key
  // order, as a bulk add does).
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  for (PullItem& p : items) {
    const Layer& l = p.layer;
    if (l.role != Role::kBlob && l.role != Role::kAttestation) continue;
    if (p.present || p.stored) continue;
    if (l.role == Role::kAttestation && !envelopes_filed.count(l.digest)) continue;  // faulty: warned above
    KI_RETURN_IF_ERROR(batch->PutBlob(p.bytes, l.media_type).status());
  }
  std::vector<EncodedManifest> manifests;
  manifests.reserve(to_store.size());
  for (size_t i : to_store) {
    if (!items[i].prepared.ok()) return items[i].prepared.WithContext("pull from " + url.str() + " failed (" + stored_note() + ")");
    // Every manifest in to_store waits for at least one piece from the
    // remote (the others are in the store already), and whoever brought
    // its last piece prepared it: unprepared means that bookkeeping broke.
    if (!items[i].encoded) {
      return Status::Corruption("internal error: pulled manifest " + items[i].layer.digest.str() +
                                " was never checked; " + stored_note());
    }
    manifests.push_back(std::move(*items[i].encoded));
    items[i].encoded.reset();
  }
  KI_RETURN_IF_ERROR(batch->PutEncodedManifests(manifests).status());
  manifests.clear();
  for (const AttRow& r : rows) {
    std::string key(r.subject.raw());
    key.append(r.envelope.raw());
    KI_ASSIGN_OR_RETURN(auto have, batch->Get(kRemoteAttestationTable, key));
    if (!have) KI_RETURN_IF_ERROR(batch->Put(kRemoteAttestationTable, key, r.value));
  }
  // The registry served manifests naming these blobs: it holds them (a
  // later push to it need not ask), and the tags named those manifests.
  StateUpdate learnt;
  learnt.blobs.push_back(remote::EmptyConfigDigest());
  for (const PullItem& p : items) learnt.blobs.push_back(p.layer.digest);
  for (const Digest& d : pack_blobs) learnt.blobs.push_back(d);  // named by a manifest the registry served
  for (size_t r = 0; r < tags.size(); ++r)
    if (!tags[r].empty()) learnt.tags.emplace_back(tags[r], report.refs[r].manifest);
  KI_RETURN_IF_ERROR(WriteState(*batch, state, learnt));
  KI_RETURN_IF_ERROR(batch->Commit());
  report.blobs_received = need.size() + n_from_pack;
  report.blobs_from_pack = n_from_pack;
  for (const PullItem& p : items)
    if (p.received) report.bytes_received += p.layer.size;

  for (size_t r = 0; r < report.refs.size(); ++r) {
    PulledRef& pr = report.refs[r];
    for (const Digest& d : ref_layers[r]) {
      const PullItem& p = items[item_of[d]];
      if (p.present) {
        pr.present++;
      } else {
        pr.received++;
        pr.from_pack += p.from_pack;
        pr.bytes_received += p.layer.size;
      }
    }
  }
  report.http_requests = target->requests();
  return report;
}

}  // namespace ki
