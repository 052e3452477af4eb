// An OCI image layout directory as a remote (target.h): `oci-layout`,
// `index.json` and `blobs/sha256/<hex>`, as the image-spec defines them.
//
// File names come only from validated digests, never from annotations, so
// nothing a layout says can make ki write outside it; nor can its files:
// `blobs` and `blobs/sha256` must be directories, not symbolic links (one
// could lead a push's writes anywhere), and everything read is opened
// without following a link and without blocking, and refused unless it is
// a regular file (a FIFO would block the open for ever). A layout that
// swaps a checked directory for a link while ki runs is not defended
// against: the layout's owner can write anywhere the link could lead. Blobs are written
// through AtomicFile (fsync + rename): a blob file is complete or absent.
// index.json is rewritten once, atomically, in Finish(), after every blob
// and manifest it names is on disk.
#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "json/fields.h"
#include "ki/env.h"
#include "ki/json.h"
#include "remote/mapping.h"
#include "remote/target.h"

namespace ki::remote {

namespace {

constexpr std::string_view kLayoutFile = "oci-layout";
constexpr std::string_view kLayoutVersion = "1.0.0";

class LayoutTarget;

class LayoutConn final : public Conn {
 public:
  explicit LayoutConn(LayoutTarget* t) : t_(t) {}
  Result<bool> HasBlob(const Digest& d, uint64_t size) override;
  Status PutBlob(const Digest& d, std::string_view bytes) override;
  Result<std::string> GetBlob(const Digest& d, uint64_t size) override;
  Status PutBlobFrom(const Digest& d, uint64_t size, BlobSource& src) override;
  Status GetBlobTo(const Digest& d, uint64_t size, BlobSink& sink) override;
  Result<FetchedManifest> GetManifest(std::string_view ref) override;
  Result<std::optional<Digest>> ResolveTag(std::string_view tag) override;
  Status PutManifest(std::string_view ref, std::string_view bytes, std::string_view media_type,
                     bool* subject_indexed) override;
  Result<std::optional<std::string>> Referrers(const Digest&) override { return std::optional<std::string>(); }
  Result<std::optional<std::vector<std::string>>> ListTags() override;

 private:
  LayoutTarget* t_;
};

class LayoutTarget final : public Target {
 public:
  LayoutTarget(RemoteUrl url, TransferOptions opts, Env& env)
      : url_(std::move(url)), opts_(std::move(opts)), env_(&env) {}

  Status Init(Access access) {
    const std::string& dir = url_.dir;
    std::string layout = dir + "/" + std::string(kLayoutFile);
    if (!env_->Exists(layout)) {
      if (access == Access::kPull) return Status::NotFound(dir + " is not an OCI image layout (no oci-layout file)");
      KI_RETURN_IF_ERROR(CheckDirs(access));
      Json j = {{"imageLayoutVersion", kLayoutVersion}};
      KI_RETURN_IF_ERROR(env_->WriteFileAtomic(layout, j.dump(), Durability::kSync));
      KI_RETURN_IF_ERROR(Load({{"schemaVersion", 2}, {"mediaType", kOciIndexType}, {"manifests", Json::array()}}, ""));
      dirty_ = true;
      return Status::OK();
    }
    KI_RETURN_IF_ERROR(CheckDirs(access));
    KI_ASSIGN_OR_RETURN(std::string text, ReadLayoutFile(layout, 4096));
    Json j = Json::parse(text, nullptr, false);
    if (!j.is_object() || !j.contains("imageLayoutVersion") || j["imageLayoutVersion"] != kLayoutVersion) {
      return Status::InvalidInput(layout + ": unsupported image layout version (ki reads 1.0.0)");
    }
    std::string index_path = dir + "/index.json";
    if (!env_->Exists(index_path)) {
      return Load({{"schemaVersion", 2}, {"mediaType", kOciIndexType}, {"manifests", Json::array()}}, "");
    }
    // index.json lists every tag of the layout (two per pushed record), so
    // it is capped far above one manifest.
    KI_ASSIGN_OR_RETURN(std::string idx, ReadLayoutFile(index_path, 1ull << 30));
    Json index = Json::parse(idx, nullptr, false);
    // Compared as JSON values: "2" (a string) is not 2, and does not throw.
    if (!index.is_object() || !index.contains("schemaVersion") || index["schemaVersion"] != 2 ||
        !index.contains("manifests") || !index["manifests"].is_array()) {
      return Status::InvalidInput(index_path + ": not an OCI image index");
    }
    return Load(std::move(index), index_path);
  }

  // A file of the layout, opened for reading as the top comment says.
  Result<std::unique_ptr<SequentialFile>> OpenLayoutFile(const std::string& path) {
    SequentialFileOptions o;
    o.no_follow = true;
    o.regular_only = true;
    auto f = env_->NewSequentialFile(path, o);
    if (f.ok() || f.status().IsNotFound()) return f;
    return f.status().WithContext("OCI image layout " + url_.dir + " (it may hold regular files only)");
  }
  Result<std::string> ReadLayoutFile(const std::string& path, uint64_t max_bytes) {
    KI_ASSIGN_OR_RETURN(auto f, OpenLayoutFile(path));
    return ReadAll(*f, path, max_bytes);
  }
  // A blob file of `size` bytes (its descriptor's), opened as above: a file
  // of another size is refused from its fstat, before a byte is read (and
  // every read stays bounded by `size`, since the file may grow meanwhile).
  Result<std::unique_ptr<SequentialFile>> OpenBlobFile(const Digest& d, uint64_t size) {
    KI_ASSIGN_OR_RETURN(auto f, OpenLayoutFile(BlobPath(d)));
    KI_ASSIGN_OR_RETURN(FileStat st, f->Stat());
    if (st.size != size) {
      return Status::Corruption("blob " + d.str() + " in " + url_.str() + " has " + std::to_string(st.size) +
                                " bytes, its descriptor announces " + std::to_string(size) + " (" + BlobPath(d) + ")");
    }
    return f;
  }

  // `blobs` and `blobs/sha256` are directories of the layout, not links
  // (created for a push where absent; a pull of a layout without them
  // finds no blobs, which each read reports).
  Status CheckDirs(Access access) {
    for (const char* rel : {"/blobs", "/blobs/sha256"}) {
      const std::string path = url_.dir + rel;
      if (!env_->Exists(path)) {
        if (access == Access::kPull) return Status::OK();
        KI_RETURN_IF_ERROR(env_->CreateDirs(path));
      }
      SequentialFileOptions o;
      o.no_follow = true;
      auto f = env_->NewSequentialFile(path, o);
      if (!f.ok()) {
        // A dangling link does not "exist" but is refused all the same.
        return f.status().WithContext("OCI image layout " + url_.dir + ": `" + std::string(rel + 1) +
                                      "` must be a directory inside the layout");
      }
      KI_ASSIGN_OR_RETURN(FileStat st, (*f)->Stat());
      if (!st.directory) {
        return Status::IOError("OCI image layout " + url_.dir + ": `" + std::string(rel + 1) + "` is not a directory");
      }
    }
    return Status::OK();
  }

  Result<std::unique_ptr<Conn>> Connect() override { return std::unique_ptr<Conn>(new LayoutConn(this)); }
  uint64_t requests() const override { return 0; }
  std::string describe() const override { return url_.str(); }

  Status Finish() override {
    std::lock_guard<std::mutex> l(mu_);
    if (!dirty_) return Status::OK();
    KI_RETURN_IF_ERROR(env_->SyncDir(url_.dir + "/blobs/sha256"));
    Json out = index_;
    out["manifests"] = Json::array();
    for (const Json& e : entries_) out["manifests"].push_back(e);
    KI_RETURN_IF_ERROR(env_->WriteFileAtomic(url_.dir + "/index.json", out.dump(), Durability::kSync));
    KI_RETURN_IF_ERROR(env_->SyncDir(url_.dir));
    dirty_ = false;
    return Status::OK();
  }

  std::string BlobPath(const Digest& d) const { return url_.dir + "/blobs/sha256/" + d.hex(); }

  // The descriptor index.json has for a tag.
  std::optional<Json> FindTag(std::string_view tag) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = by_tag_.find(std::string(tag));
    if (it == by_tag_.end()) return std::nullopt;
    return entries_[it->second];
  }

  // Every tag index.json names (and this push added), sorted.
  std::vector<std::string> Tags() {
    std::lock_guard<std::mutex> l(mu_);
    std::vector<std::string> out;
    for (const auto& [tag, i] : by_tag_) out.push_back(tag);
    std::sort(out.begin(), out.end());
    return out;
  }

  std::optional<Json> FindDigest(const Digest& d) {
    std::lock_guard<std::mutex> l(mu_);
    auto it = by_digest_.find(d.str());
    if (it == by_digest_.end()) return std::nullopt;
    return entries_[it->second];
  }

  // Adds a descriptor under a tag (replacing what the tag named) or, for a
  // digest reference, untagged unless the digest is listed already. Maps
  // keep this O(1): a push records thousands of manifests.
  void Record(std::string_view ref, const Json& descriptor) {
    std::lock_guard<std::mutex> l(mu_);
    Json d = descriptor;
    std::string digest = d["digest"];
    if (!Digest::IsValid(ref)) {
      d["annotations"] = {{kAnnRefName, ref}};
      auto it = by_tag_.find(std::string(ref));
      if (it != by_tag_.end()) {
        entries_[it->second] = d;
      } else {
        by_tag_[std::string(ref)] = entries_.size();
        entries_.push_back(d);
      }
      by_digest_[digest] = by_tag_[std::string(ref)];
    } else if (!by_digest_.count(digest)) {
      by_digest_[digest] = entries_.size();
      entries_.push_back(d);
    }
    dirty_ = true;
  }

  // Takes index.json apart. The fields ki reads from an entry (digest,
  // mediaType, the ref.name annotation) are type-checked here, once, so
  // that a layout that breaks the image-spec is refused when it is opened,
  // naming the entry, rather than failing wherever a field is read.
  Status Load(Json index, const std::string& path) {
    index_ = std::move(index);
    const Json& manifests = index_["manifests"];
    for (size_t k = 0; k < manifests.size(); ++k) {
      const Json& m = manifests[k];
      std::string where = path + ": manifests[" + std::to_string(k) + "]";
      KI_ASSIGN_OR_RETURN(std::string digest, GetString(m, "digest", where));
      KI_RETURN_IF_ERROR(GetString(m, "mediaType", where).status());
      KI_RETURN_IF_ERROR(DescriptorSize(m, where).status());
      std::string tag;
      if (m.contains("annotations")) {
        KI_ASSIGN_OR_RETURN(tag, GetString(m["annotations"], kAnnRefName, where + ".annotations"));
      }
      size_t i = entries_.size();
      if (!tag.empty()) by_tag_[tag] = i;
      if (!by_digest_.count(digest)) by_digest_[digest] = i;
      entries_.push_back(m);
    }
    index_["manifests"] = Json::array();
    return Status::OK();
  }

  RemoteUrl url_;
  TransferOptions opts_;
  Env* env_;

 private:
  std::mutex mu_;
  Json index_;                 // index.json without its manifests (kept below)
  std::vector<Json> entries_;  // the manifests list
  std::unordered_map<std::string, size_t> by_tag_, by_digest_;
  bool dirty_ = false;
};

// Only a regular file of the right size counts: a link, a FIFO or anything
// else at a blob's name is replaced by the push (the blob file is renamed
// over it, which replaces the link itself and never writes where it
// points), not taken for the blob.
Result<bool> LayoutConn::HasBlob(const Digest& d, uint64_t size) {
  std::string path = t_->BlobPath(d);
  auto f = t_->OpenLayoutFile(path);
  if (!f.ok()) return false;  // absent, or to be replaced; a failing write then says why
  KI_ASSIGN_OR_RETURN(FileStat st, (*f)->Stat());
  return st.regular && st.size == size;
}

Status LayoutConn::PutBlob(const Digest& d, std::string_view bytes) {
  return t_->env_->WriteFileAtomic(t_->BlobPath(d), bytes, Durability::kSync);
}

Result<std::string> LayoutConn::GetBlob(const Digest& d, uint64_t size) {
  if (size > t_->opts_.max_blob_size) {
    return Status::InvalidInput("blob " + d.str() + " is announced at " + std::to_string(size) +
                                " bytes, over the limit of " + std::to_string(t_->opts_.max_blob_size));
  }
  KI_ASSIGN_OR_RETURN(auto file, t_->OpenBlobFile(d, size));
  auto bytes = ReadAll(*file, t_->BlobPath(d), size);
  if (!bytes.ok()) {
    if (bytes.status().IsInvalidInput()) {
      return Status::Corruption("blob " + d.str() + " in " + t_->url_.str() + " is larger than announced");
    }
    return bytes.status();
  }
  if (bytes->size() != size) {
    return Status::Corruption("blob " + d.str() + " in " + t_->url_.str() + " has " + std::to_string(bytes->size()) +
                              " bytes, the manifest announces " + std::to_string(size));
  }
  Digest got = Sha256Of(*bytes);
  if (got != d) return Status::Corruption("blob " + d.str() + " in " + t_->url_.str() + " hashes to " + got.str());
  return bytes;
}

// Streamed blobs go through a buffer of this size, both ways.
constexpr size_t kStreamPiece = 1 << 20;

Status LayoutConn::PutBlobFrom(const Digest& d, uint64_t size, BlobSource& src) {
  // Complete or absent, as PutBlob's: the temporary file goes away unless
  // every byte arrived (and the source checked them).
  KI_ASSIGN_OR_RETURN(auto file, t_->env_->NewAtomicFile(t_->BlobPath(d)));
  KI_RETURN_IF_ERROR(src.Rewind());
  std::string buf(kStreamPiece, '\0');
  uint64_t written = 0;
  for (;;) {
    KI_ASSIGN_OR_RETURN(size_t n, src.Read(buf.data(), buf.size()));
    if (n == 0) break;
    written += n;
    KI_RETURN_IF_ERROR(file->Append(std::string_view(buf.data(), n)));
  }
  if (written != size) {
    return Status::Corruption("upload of " + d.str() + ": the object gave " + std::to_string(written) + " bytes, not " +
                              std::to_string(size));
  }
  return file->Commit(Durability::kSync);
}

Status LayoutConn::GetBlobTo(const Digest& d, uint64_t size, BlobSink& sink) {
  const std::string what = "blob " + d.str() + " in " + t_->url_.str();
  KI_ASSIGN_OR_RETURN(auto file, t_->OpenBlobFile(d, size));
  CheckedSink checked(sink);
  KI_RETURN_IF_ERROR(checked.Restart());
  std::string buf(kStreamPiece, '\0');
  uint64_t got = 0;
  for (;;) {
    // One byte past the announced size is enough to refuse the file.
    size_t want = size_t(std::min<uint64_t>(buf.size(), size - got + 1));
    KI_ASSIGN_OR_RETURN(size_t n, file->Read(buf.data(), want));
    if (n == 0) break;
    if (got + n > size) return Status::Corruption(what + " is larger than announced (" + std::to_string(size) + " bytes)");
    got += n;
    KI_RETURN_IF_ERROR(checked.Append(std::string_view(buf.data(), n)));
  }
  return checked.Check(d, size, what);
}

Result<FetchedManifest> LayoutConn::GetManifest(std::string_view ref) {
  FetchedManifest m;
  Digest want;
  std::optional<Json> desc;
  if (Digest::IsValid(ref)) {
    // Only what index.json lists is a manifest; any other file under blobs/
    // is a blob (a registry answers 404 alike).
    KI_ASSIGN_OR_RETURN(want, Digest::Parse(ref));
    desc = t_->FindDigest(want);
    if (!desc) return Status::NotFound(t_->url_.str() + " lists no manifest " + want.str());
  } else {
    desc = t_->FindTag(ref);
    if (!desc) return Status::NotFound(t_->url_.str() + " has no tag '" + std::string(ref) + "'");
    auto d = Digest::Parse(StringOr(*desc, "digest"));
    if (!d.ok()) return Status::InvalidInput(t_->url_.str() + ": index.json entry for '" + std::string(ref) + "' has a bad digest");
    want = *d;
  }
  m.media_type = StringOr(*desc, "mediaType");  // type-checked by Load
  // The descriptor's size (checked by Load) is what is read, and refused
  // before reading when over the cap; the file must have exactly that many
  // bytes (GetBlob).
  const std::string where = t_->url_.str() + ": index.json entry of " + want.str();
  KI_ASSIGN_OR_RETURN(uint64_t size, DescriptorSize(*desc, where));
  if (size > t_->opts_.max_manifest_size) {
    return Status::InvalidInput(where + ": `size` " + std::to_string(size) + " is over the manifest limit of " +
                                std::to_string(t_->opts_.max_manifest_size) + " bytes");
  }
  if (!t_->env_->Exists(t_->BlobPath(want))) {
    return Status::NotFound(t_->url_.str() + " has no manifest " + want.str());
  }
  KI_ASSIGN_OR_RETURN(m.bytes, GetBlob(want, size));
  m.digest = want;
  return m;
}

Result<std::optional<std::vector<std::string>>> LayoutConn::ListTags() {
  return std::optional<std::vector<std::string>>(t_->Tags());
}

Result<std::optional<Digest>> LayoutConn::ResolveTag(std::string_view tag) {
  auto desc = t_->FindTag(tag);
  if (!desc) return std::optional<Digest>();
  auto d = Digest::Parse(StringOr(*desc, "digest"));
  if (!d.ok()) return std::optional<Digest>();
  return std::optional<Digest>(*d);
}

Status LayoutConn::PutManifest(std::string_view ref, std::string_view bytes, std::string_view media_type,
                               bool* subject_indexed) {
  Digest d = Sha256Of(bytes);
  KI_RETURN_IF_ERROR(PutBlob(d, bytes));
  Json desc = {{"mediaType", media_type}, {"digest", d.str()}, {"size", bytes.size()}};
  Json parsed = Json::parse(bytes, nullptr, false);
  if (parsed.is_object() && parsed.contains("artifactType") && parsed["artifactType"].is_string()) {
    desc["artifactType"] = parsed["artifactType"];
  }
  t_->Record(ref, desc);
  if (subject_indexed) *subject_indexed = false;
  return Status::OK();
}

}  // namespace

Result<std::unique_ptr<Target>> OpenLayout(const RemoteUrl& url, const TransferOptions& opts, Access access,
                                           Env& env) {
  auto t = std::make_unique<LayoutTarget>(url, opts, env);
  KI_RETURN_IF_ERROR(t->Init(access));
  return std::unique_ptr<Target>(std::move(t));
}

}  // namespace ki::remote
