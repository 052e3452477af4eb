// Rebuilding a damaged index file (ki/index_rebuild.h): the frames found
// whole in the damaged data.mdb go into a new one; the caller reindexes.
#include "ki/index_rebuild.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "ki/utc.h"
#include "odb/store_impl.h"

namespace ki {

namespace {

constexpr std::string_view kRebuildPrefix = "rebuild-";

// Whether the index in `index_dir` opens and reads whole; the Corruption
// that says why when the file is damaged, any other failure as it is.
// Opening checks the file's length against its meta page; the pages
// themselves are only checked by reading them, and LMDB trusts what it
// reads: a damaged page number can send it past the file's end (SIGBUS) or
// outside its map (SIGSEGV), or trip one of its assertions (SIGABRT). So
// the read is made by a child process, whose death is the answer. (The
// caller has no environment of this store open: LMDB's is not to be used
// across fork, and the child opens its own.)
Status ProbeIndex(const std::string& index_dir, uint64_t map_size) {
  const std::string file = index_dir + "/data.mdb";
  int fds[2];
  if (::pipe(fds) != 0) return Status::IOError(std::string("index check: pipe: ") + std::strerror(errno));
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    return Status::IOError(std::string("index check: fork: ") + std::strerror(err));
  }
  if (pid == 0) {
    ::close(fds[0]);
    // The answer: a code byte ('C' corruption, 'E' another failure) and
    // the message; nothing at all for a whole index.
    Status s;
    {
      lmdb::Environment env;
      s = env.Open(index_dir, map_size, /*read_only=*/true);
      if (s.ok()) {
        // Here a fault is the answer, not the end of a command: the
        // default actions again (the open guarded the map, lmdb.cc), and
        // LMDB's assertion text stays out of the parent's output.
        struct sigaction dfl{};
        dfl.sa_handler = SIG_DFL;
        ::sigaction(SIGBUS, &dfl, nullptr);
        ::sigaction(SIGSEGV, &dfl, nullptr);
        env.UnguardAssertions();
        const int devnull = ::open("/dev/null", O_WRONLY);
        if (devnull >= 0) ::dup2(devnull, 2);
        s = env.ReadEverything();
      }
    }
    if (!s.ok()) {
      const std::string out = (s.IsCorruption() ? "C" : "E") + s.message();
      for (size_t done = 0; done < out.size();) {
        const ssize_t n = ::write(fds[1], out.data() + done, out.size() - done);
        if (n <= 0) break;
        done += size_t(n);
      }
    }
    ::_exit(s.ok() ? 0 : 1);  // no destructors or atexit handlers of the parent's
  }
  ::close(fds[1]);
  std::string answer;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    if (n > 0) {
      answer.append(buf, size_t(n));
    } else if (n == 0 || errno != EINTR) {
      break;
    }
  }
  ::close(fds[0]);
  int wstatus = 0;
  while (::waitpid(pid, &wstatus, 0) < 0) {
    if (errno != EINTR) return Status::IOError(std::string("index check: waitpid: ") + std::strerror(errno));
  }
  if (WIFSIGNALED(wstatus)) {
    return Status::Corruption("index " + file + ": reading its pages ended the check with signal " +
                              std::to_string(WTERMSIG(wstatus)) + " (" + ::strsignal(WTERMSIG(wstatus)) +
                              "): a page is damaged");
  }
  if (WIFEXITED(wstatus) && WEXITSTATUS(wstatus) == 0) return Status::OK();
  if (answer.empty()) return Status::IOError("index check of " + file + ": the checking process failed");
  if (answer[0] == 'C') return Status::Corruption(answer.substr(1));
  return Status::IOError(answer.substr(1));
}

// Reads a damaged data.mdb as plain bytes and puts every whole frame found
// in it into `txn`'s objects table under the digest its content hashes to
// (formats 11 and before) or, in store format 12, in a row of its own: the
// number its old row had when the 36 bytes before the frame are that row's
// key and digest (an LMDB leaf node holds the key just before the value),
// else a number above every one found. (reindex then numbers the objects
// from these rows.)
class FrameSalvage {
 public:
  FrameSalvage(lmdb::Txn& txn, MDB_dbi objects, const StoreOptions& opts, bool numbered, IndexRebuild* out)
      : txn_(txn), objects_(objects), opts_(opts), numbered_(numbered), out_(out) {}

  Status Scan(SequentialFile& file, const std::string& name) {
    name_ = name;
    // Frames kept in LMDB are at most loose_threshold bytes; a frame whose
    // header starts within that distance of a block's end waits for the
    // next block.
    const size_t max_frame = size_t(opts_.loose_threshold);
    constexpr size_t kBlock = 8 << 20;
    std::string buf;
    uint64_t base = 0;  // file offset of buf[0]
    bool eof = false;
    while (!eof) {
      const size_t have = buf.size();
      buf.resize(have + kBlock);
      KI_ASSIGN_OR_RETURN(size_t n, file.Read(buf.data() + have, kBlock));
      buf.resize(have + n);
      out_->scanned_bytes += n;
      eof = n == 0;
      const size_t limit = eof ? buf.size() : (buf.size() > max_frame ? buf.size() - max_frame : 0);
      size_t pos = 0;
      while (pos < limit) {
        const void* hit = ::memmem(buf.data() + pos, buf.size() - pos, odb::kFrameMagic, 4);
        if (!hit) {
          pos = limit;
          break;
        }
        const size_t at = static_cast<const char*>(hit) - buf.data();
        if (at >= limit) {
          pos = limit;
          break;
        }
        const size_t lead = std::min<size_t>(at, 36);
        KI_ASSIGN_OR_RETURN(size_t used, TryFrame(std::string_view(buf).substr(at), base + at, max_frame, false,
                                                  std::string_view(buf).substr(at - lead, lead)));
        pos = at + (used ? used : 1);
      }
      buf.erase(0, pos);
      base += pos;
    }
    // Frames that need a dictionary found later in the file.
    std::vector<Pending> pending;
    pending.swap(pending_);
    for (auto& p : pending) KI_RETURN_IF_ERROR(TryFrame(p.frame, p.offset, max_frame, true, p.lead).status());
    // Then the based frames, whose bases are among the frames found.
    std::vector<Pending> based;
    based.swap(based_);
    for (size_t i = 0; i < found_.size(); ++i)
      if (found_[i].was) by_number_.emplace(found_[i].was, i);
    for (auto& p : based) KI_RETURN_IF_ERROR(TryBased(p).status());
    return Finish();
  }

 private:
  struct Pending {
    uint64_t offset;
    std::string frame, lead;
  };

  // The length of the frame at the start of `f` when it is one (0 when
  // not), stored when it is whole.
  Result<size_t> TryFrame(std::string_view f, uint64_t offset, size_t max_frame, bool last_try,
                          std::string_view lead) {
    const std::string where = name_ + " at byte " + std::to_string(offset);
    auto h = odb::ParseFrameHeader(f.substr(0, std::min(f.size(), max_frame)), where);
    if (!h.ok()) return size_t(0);  // four bytes that only look like a magic, or a damaged header
    std::string_view payload = f.substr(h->payload_offset);
    size_t len;
    if (h->compressed) {
      auto n = odb::CompressedPayloadSize(payload.substr(0, std::min(payload.size(), max_frame)), *h, where);
      if (!n.ok()) return Unreadable();
      len = *n;
    } else {
      // A based frame holds only the middle (frame.h, FrameBase).
      const uint64_t held = h->raw_size - (h->base ? h->base->prefix + h->base->suffix : 0);
      if (held > max_frame) return Unreadable();
      len = size_t(held);
    }
    const size_t total = h->payload_offset + len;
    if (total > f.size() || total > max_frame) return Unreadable();  // cut off by the file's end
    const std::string_view frame = f.substr(0, total);
    if (h->base) {
      // Its base may come later in the file: tried once every frame is found.
      if (!numbered_ || last_try) return Unreadable();
      based_.push_back(Pending{offset, std::string(frame), std::string(lead)});
      return total;
    }
    std::shared_ptr<const odb::Dictionary> dict;
    if (h->dict_id) {
      if (auto it = found_dicts_.find(h->dict_id); it != found_dicts_.end()) dict = it->second;
      if (!dict) dict = odb::BuiltinDictionary(h->dict_id);
      if (!dict) {
        if (last_try) return Unreadable();
        pending_.push_back(Pending{offset, std::string(frame), std::string(lead)});
        return total;
      }
    }
    auto raw = odb::DecodeFrame(frame, *h, opts_.max_object_size, where, dict.get());
    if (!raw.ok()) return Unreadable();
    const Digest d = Sha256Of(*raw);
    if (seen_.insert(d).second) {
      if (!numbered_) {
        KI_RETURN_IF_ERROR(txn_.Put(objects_, d.raw(), frame));
      } else {
        uint32_t was = 0;
        if (lead.size() == 36 && lead.substr(4) == d.raw()) was = odb::KeyNumber(lead.substr(0, 4)).value_or(0);
        found_.push_back(Found{was, d, std::string(frame)});
      }
      ++out_->recovered;
    }
    if (h->type == ObjectType::kBlob && h->media_type == odb::kDictionaryMediaType) {
      auto loaded = odb::Dictionary::Load(std::move(raw).value(), where, &d);
      if (loaded.ok()) found_dicts_.emplace((*loaded)->id(), *loaded);
    }
    return total;
  }

  // A based frame found whole, its base found under the old number it
  // names: stored as a plain frame (the base may not keep its number).
  Result<size_t> TryBased(const Pending& p) {
    const std::string where = name_ + " at byte " + std::to_string(p.offset);
    auto h = odb::ParseFrameHeader(p.frame, where);
    if (!h.ok() || !h->base) return Unreadable();
    const auto at = by_number_.find(h->base->number);
    if (at == by_number_.end()) return Unreadable();
    const Found* base = &found_[at->second];
    auto bh = odb::ParseFrameHeader(base->frame, where);
    if (!bh.ok()) return Unreadable();
    auto base_raw = odb::DecodeFrame(base->frame, *bh, opts_.max_object_size, where, FoundDictionary(bh->dict_id).get());
    if (!base_raw.ok()) return Unreadable();
    auto raw = odb::DecodeFrame(p.frame, *h, opts_.max_object_size, where, FoundDictionary(h->dict_id).get(),
                                std::string_view(*base_raw));
    if (!raw.ok()) return Unreadable();
    const Digest d = Sha256Of(*raw);
    if (seen_.insert(d).second) {
      uint32_t was = 0;
      if (p.lead.size() == 36 && p.lead.substr(4) == d.raw()) was = odb::KeyNumber(p.lead.substr(0, 4)).value_or(0);
      found_.push_back(Found{was, d,
                             odb::EncodeFrame(h->type, h->kind, h->media_type, *raw, opts_.zstd_level,
                                              odb::BuiltinDictionaryFor(h->type, h->kind, h->media_type))});
      ++out_->recovered;
    }
    return p.frame.size();
  }

  std::shared_ptr<const odb::Dictionary> FoundDictionary(uint32_t id) const {
    if (!id) return nullptr;
    if (auto it = found_dicts_.find(id); it != found_dicts_.end()) return it->second;
    return odb::BuiltinDictionary(id);
  }

  // Format 12: the rows, each found frame under its old number when that
  // is known and no other frame took it, the others numbered after them.
  Status Finish() {
    std::unordered_set<uint32_t> taken;
    uint32_t next = 1;
    for (const Found& f : found_)
      if (f.was && taken.insert(f.was).second) next = std::max(next, f.was + 1);
    taken.clear();
    for (Found& f : found_) {
      const uint32_t n = f.was && taken.insert(f.was).second ? f.was : next++;
      KI_RETURN_IF_ERROR(txn_.Put(objects_, odb::NumberKey(n), odb::ObjectsValue(f.digest, f.frame)));
    }
    found_.clear();
    return Status::OK();
  }

  Result<size_t> Unreadable() {
    ++out_->unreadable;
    return size_t(0);
  }

  struct Found {
    uint32_t was;  // the number its old row had, 0 when unknown
    Digest digest;
    std::string frame;
  };
  lmdb::Txn& txn_;
  MDB_dbi objects_;
  const StoreOptions& opts_;
  const bool numbered_;
  IndexRebuild* out_;
  std::string name_;
  std::unordered_set<Digest> seen_;
  std::map<uint32_t, std::shared_ptr<const odb::Dictionary>> found_dicts_;
  std::vector<Pending> pending_;
  std::vector<Pending> based_;  // based frames, tried last
  std::unordered_map<uint32_t, size_t> by_number_;  // found_ by old number, for based_
  std::vector<Found> found_;
};

}  // namespace

Result<std::optional<IndexRebuild>> RebuildDamagedIndex(const std::string& ki_dir, const StoreOptions& in_opts) {
  StoreOptions opts = in_opts;
  Env* env = opts.env ? opts.env : Env::Default();
  opts.env = env;
  const std::string index_dir = odb::IndexDir(ki_dir);
  const std::string data = index_dir + "/data.mdb";
  // Not a store, or one whose index was never created: the open says so.
  if (!env->Exists(odb::FormatPath(ki_dir)) || !env->Exists(data)) return std::optional<IndexRebuild>();
  if (Status s = ProbeIndex(index_dir, opts.map_size); s.ok() || !s.IsCorruption()) {
    if (!s.ok()) return s;
    return std::optional<IndexRebuild>();
  }
  // No other process may have the file open while it is replaced (as ki gc):
  // one that had mapped it would read the new file's pages through its old
  // view, and LMDB resets lock.mdb only when the first opener comes.
  KI_ASSIGN_OR_RETURN(odb::StoreLock lock, odb::StoreLock::Exclusive(ki_dir, nullptr));
  Status probe = ProbeIndex(index_dir, opts.map_size);
  if (probe.ok()) return std::optional<IndexRebuild>();  // rebuilt meanwhile by another ki
  if (!probe.IsCorruption()) return probe;
  IndexRebuild out;
  out.damage = std::string(lmdb::WithoutRemedy(probe.message()));
  KI_ASSIGN_OR_RETURN(auto names, env->ListDir(index_dir));
  for (const auto& n : names)
    if (n.rfind(kRebuildPrefix, 0) == 0) KI_RETURN_IF_ERROR(env->RemoveTree(index_dir + "/" + n));
  const std::string scratch = index_dir + "/" + std::string(kRebuildPrefix) + std::to_string(::getpid());
  KI_RETURN_IF_ERROR(env->CreateDirs(scratch));
  {
    lmdb::Environment fresh;
    KI_RETURN_IF_ERROR(fresh.Open(scratch, opts.map_size, /*read_only=*/false));
    KI_RETURN_IF_ERROR(fresh.OpenAllTables({odb::kObjects}));
    KI_ASSIGN_OR_RETURN(lmdb::Txn txn, fresh.BeginWrite());
    KI_ASSIGN_OR_RETURN(auto objects, fresh.Table(txn, odb::kObjects));
    if (!objects) return Status::IOError("index " + scratch + ": the objects table was not created");
    // Read through the Env, never mapped: the file is shorter than what
    // it claims, and a mapping would fault past its end.
    KI_ASSIGN_OR_RETURN(auto file, env->NewSequentialFile(data));
    // The layout the store's FORMAT says (an older one is upgraded when
    // reindex opens the store).
    KI_ASSIGN_OR_RETURN(std::string fmt, env->ReadFile(odb::FormatPath(ki_dir), 4096));
    const bool numbered = odb::FormatVersionOf(fmt).value_or(odb::kFormatVersion) >= 12;
    FrameSalvage salvage(txn, *objects, opts, numbered, &out);
    KI_RETURN_IF_ERROR(salvage.Scan(*file, data));
    KI_RETURN_IF_ERROR(txn.Commit());
  }  // closed before it is renamed
  KI_RETURN_IF_ERROR(env->SyncFile(scratch + "/data.mdb"));
  out.moved_to = data + ".damaged-" + UtcNow(UtcForm::kCompact);
  KI_RETURN_IF_ERROR(env->Rename(data, out.moved_to));
  // Env has no link(): between these two renames index/ has no data.mdb
  // (killed there, the next open would start an empty index beside the
  // damaged file and the scratch one, both kept), so the second follows at
  // once and the directory is synced after both.
  KI_RETURN_IF_ERROR(env->Rename(scratch + "/data.mdb", data));
  KI_RETURN_IF_ERROR(env->SyncDir(index_dir));
  (void)env->RemoveTree(scratch);
  return std::optional<IndexRebuild>(std::move(out));
}

}  // namespace ki
