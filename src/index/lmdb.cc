#include "index/lmdb.h"

#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "ki/digest.h"
#include "util/utf8.h"

namespace ki::lmdb {

namespace {

// What to run. data.mdb holds the index and the frames of small objects
// (format.md, "Where object bytes live"), so a damaged one loses more than
// derived tables: reindex recovers the frames still whole in it, a copy or
// a remote the rest.
constexpr std::string_view kRemedy = "; it holds the index and the objects kept in it (those of at most 64 KiB)";
// The shorter remedy of a damaged page that LMDB found while reading.
constexpr std::string_view kDamagedHint = " (the index file is damaged: `ki audit --reindex` builds it again)";

// A damaged page that the open cannot see (it checks the file's length
// only) still makes LMDB read through its map where it should not: a page
// number past the file's end is a SIGBUS, one past the map a SIGSEGV, a
// page of the wrong type one of LMDB's assertions (abort). None can be
// returned as an error, so the process ends; these handlers make it end as
// a fault with what to run (exit 1), not a signal, when the fault is a
// read of an open environment's map or an LMDB assertion. Other faults go
// where they went before. Async-signal-safe: a preformatted message,
// write, _exit.
struct GuardedMap {
  std::atomic<uintptr_t> begin{0}, end{0};
  char message[1024];
  std::atomic<size_t> message_size{0};
};
GuardedMap g_maps[8];
std::mutex g_maps_mu;  // claims and frees slots; the handlers only read
struct sigaction g_previous_bus{}, g_previous_segv{};

[[noreturn]] void DieAsFault(const GuardedMap& m) {
  const size_t n = m.message_size.load();
  if (n) (void)!::write(2, m.message, n);
  ::_exit(1);
}

// Depth of this thread's calls into LMDB through this wrapper (InLmdb): a
// fault there (a damaged node's flags send LMDB through a null pointer)
// is the index's too. Plain data, zero-initialised, read by the handler.
thread_local int t_in_lmdb = 0;

struct InLmdb {
  InLmdb() { ++t_in_lmdb; }
  ~InLmdb() { --t_in_lmdb; }
};

void OnMapFault(int sig, siginfo_t* info, void* context) {
  const auto addr = reinterpret_cast<uintptr_t>(info->si_addr);
  for (const GuardedMap& m : g_maps) {
    if (m.end.load() && ((addr >= m.begin.load() && addr < m.end.load()) || t_in_lmdb > 0)) DieAsFault(m);
  }
  const struct sigaction& prev = sig == SIGBUS ? g_previous_bus : g_previous_segv;
  if (prev.sa_flags & SA_SIGINFO) {
    prev.sa_sigaction(sig, info, context);
  } else if (prev.sa_handler != SIG_DFL && prev.sa_handler != SIG_IGN) {
    prev.sa_handler(sig);
  } else {
    // Returning re-runs the faulting access under the default action.
    struct sigaction dfl{};
    dfl.sa_handler = SIG_DFL;
    ::sigaction(sig, &dfl, nullptr);
  }
}

void OnAssert(MDB_env*, const char*) {
  // Not a signal handler, but it must not return (LMDB aborts after it).
  // Any guarded environment's message (ki opens one store at a time; the
  // message differs only in the path).
  for (const GuardedMap& m : g_maps)
    if (m.end.load()) DieAsFault(m);
  ::_exit(1);
}

// Where LMDB mapped `env`'s data.mdb, and the map's size: LMDB does not say
// (mdb_env_info's me_mapaddr is the address its meta page asks for, 0), so
// it is the line of /proc/self/maps that maps that file (by inode) from
// offset 0. {0, 0} when it is not found.
std::pair<uintptr_t, size_t> MapOf(MDB_env* env) {
  mdb_filehandle_t fd;
  struct stat fs;
  MDB_envinfo info;
  if (mdb_env_get_fd(env, &fd) != 0 || ::fstat(fd, &fs) != 0 || mdb_env_info(env, &info) != 0) return {0, 0};
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    unsigned long long begin = 0, end = 0, offset = 0, inode = 0;
    char perms[8] = {0}, dev[16] = {0};
    if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %15s %llu", &begin, &end, perms, &offset, dev, &inode) != 6)
      continue;
    if (inode == (unsigned long long)fs.st_ino && offset == 0 && end - begin == info.me_mapsize)
      return {uintptr_t(begin), size_t(end - begin)};
  }
  return {0, 0};
}

void GuardMap(MDB_env* env, const std::string& message) {
  static std::once_flag installed;
  std::call_once(installed, [] {
    struct sigaction sa{};
    sa.sa_sigaction = OnMapFault;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &g_previous_bus);
    ::sigaction(SIGSEGV, &sa, &g_previous_segv);
  });
  const auto [begin, size] = MapOf(env);
  if (!begin) return;
  std::lock_guard<std::mutex> lock(g_maps_mu);
  for (GuardedMap& m : g_maps) {
    if (m.end.load()) continue;
    const size_t n = std::min(message.size(), sizeof m.message);
    std::memcpy(m.message, message.data(), n);
    m.message_size = n;
    m.begin = begin;
    m.end = begin + size;
    (void)mdb_env_set_assert(env, OnAssert);
    return;
  }
  // More environments than slots: this one is unguarded, as before.
}

void UnguardMap(MDB_env* env) {
  const uintptr_t begin = MapOf(env).first;
  if (!begin) return;
  std::lock_guard<std::mutex> lock(g_maps_mu);
  for (GuardedMap& m : g_maps)
    if (m.end.load() && m.begin.load() == begin) m.end = 0;
}

}  // namespace

Status MdbStatus(std::string_view op, int rc) {
  std::string msg = "index " + std::string(op) + ": " + mdb_strerror(rc);
  // LMDB's own findings about the file's pages: a fault of the index, not
  // of the environment.
  if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND)
    return Status::Corruption(msg + std::string(kDamagedHint));
  // Disk full, file size limit or map full are environment errors: the
  // transaction was aborted and nothing was stored.
  return Status::IOError(msg);
}

std::string FitKey(std::string key) {
  if (key.size() <= kMaxKeyBytes) return key;
  const Digest whole = Sha256Of(key);
  key.resize(kFitKeyPrefixBytes);
  key.push_back('\xff');
  key.append(whole.raw());
  return key;
}

std::string KeyText(std::string_view part) {
  size_t marker = part.find('\xff');
  if (marker == std::string_view::npos) return std::string(part);
  return std::string(Utf8WholePrefix(part, marker)) + "\u2026";  // the cut may split a character
}

Environment::~Environment() {
  if (env_) {
    UnguardMap(env_);
    mdb_env_close(env_);
  }
}

namespace {

std::string Repair(const std::string& file) {
  return std::string(kRemedy) +
         ": run `ki audit --reindex`, which moves it aside and builds the index again from the objects still "
         "whole in it and the loose ones, then `ki pull` what is missing from a remote that has it; or restore "
         "it from a copy of the store (" + file + ")";
}

}  // namespace

std::string_view WithoutRemedy(std::string_view message) {
  return message.substr(0, std::min(message.find(kRemedy), message.find(kDamagedHint)));
}

// LMDB reads pages straight from its memory map: a page past the end of the
// file (a truncated data.mdb) is a SIGBUS, not an error it could return. So
// the file must hold every page the newest meta page says is in use before
// anything else reads the map. The meta pages themselves are read with
// pread by mdb_env_open, which fails cleanly on a file too short for them.
Status Environment::CheckMapFile(const std::string& file) {
  MDB_envinfo info;
  MDB_stat st;
  int rc = mdb_env_info(env_, &info);
  if (rc == 0) rc = mdb_env_stat(env_, &st);
  if (rc) return MdbStatus("open " + file, rc);
  mdb_filehandle_t fd;
  struct stat fs;
  if (mdb_env_get_fd(env_, &fd) != 0 || ::fstat(fd, &fs) != 0)
    return Status::IOError("index " + file + ": " + std::strerror(errno));
  const uint64_t need = (uint64_t(info.me_last_pgno) + 1) * st.ms_psize;
  if (uint64_t(fs.st_size) < need)
    return Status::Corruption("index " + file + ": the file has " + std::to_string(fs.st_size) +
                              " bytes, but its pages in use end at " + std::to_string(need) +
                              " (truncated or damaged)" + Repair(file));
  return Status::OK();
}

Status Environment::Open(const std::string& dir, uint64_t map_size, bool read_only) {
  const std::string file = dir + "/data.mdb";
  struct stat fs;
  if (::stat(file.c_str(), &fs) == 0 && S_ISREG(fs.st_mode) && fs.st_size == 0) {
    // LMDB would start a new, empty index over it (or, read-only, fail with
    // EBADF): either way what the index said is gone, and it says so.
    return Status::Corruption("index " + file + ": the file is empty (truncated or damaged)" + Repair(file));
  }
  int rc = mdb_env_create(&env_);
  if (rc) return MdbStatus("create", rc);
  mdb_env_set_maxdbs(env_, 64);
  mdb_env_set_mapsize(env_, size_t(map_size));
  unsigned flags = MDB_NOTLS | MDB_NORDAHEAD;
  if (read_only) {
    flags |= MDB_RDONLY;
    // A store on read-only media (or a directory we may not write) can still
    // be read: skip the lock file, which is safe because nobody can write it.
    if (::access(dir.c_str(), W_OK) != 0) flags |= MDB_NOLOCK;
  }
  read_only_ = read_only;
  rc = mdb_env_open(env_, dir.c_str(), flags, 0644);
  if (rc) {
    Status s = (rc == EACCES || rc == EROFS)
                   ? Status::IOError("index " + dir + ": " + std::strerror(rc) +
                                     (read_only ? "" : " (the store is not writable)"))
               : (rc == MDB_INVALID || rc == MDB_VERSION_MISMATCH)
                   ? Status::Corruption("index " + file + ": " + mdb_strerror(rc) + Repair(file))
                   : MdbStatus("open " + dir, rc);
    mdb_env_close(env_);
    env_ = nullptr;
    return s;
  }
  // FitKey shortens keys to kMaxKeyBytes: an LMDB built with a smaller
  // limit would refuse them (and read such a store's keys differently).
  if (mdb_env_get_maxkeysize(env_) < int(kMaxKeyBytes)) {
    mdb_env_close(env_);
    env_ = nullptr;
    return Status::IOError("index " + dir + ": this LMDB's key limit is below " + std::to_string(kMaxKeyBytes) +
                           " bytes");
  }
  if (Status s = CheckMapFile(file); !s.ok()) {
    mdb_env_close(env_);
    env_ = nullptr;
    return s;
  }
  GuardMap(env_, "ki: error: index " + file +
                              ": reading a page of it faulted (the file is damaged: a page number or size in "
                              "it is wrong)" + Repair(file) + "\n");
  return Status::OK();
}

void Environment::DeclareSetTable(std::string_view name) { set_tables_.emplace_back(name); }

unsigned Environment::CreateFlags(std::string_view name) const {
  // Flags matter only when a table is created: an existing one is opened
  // with the flags it was created with.
  for (const std::string& s : set_tables_)
    if (s == name) return MDB_CREATE | MDB_DUPSORT;
  return MDB_CREATE;
}

Result<std::optional<MDB_dbi>> Environment::Table(Txn& txn, std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = tables_.find(name); it != tables_.end()) return std::optional<MDB_dbi>(it->second);
  MDB_dbi dbi;
  std::string n(name);
  int rc = mdb_dbi_open(txn.get(), n.c_str(), txn.write() ? CreateFlags(n) : 0, &dbi);
  if (rc == MDB_NOTFOUND) return std::optional<MDB_dbi>();
  if (rc) return MdbStatus("open table " + n, rc);
  // A handle opened in a write transaction only becomes valid for others
  // after commit; LMDB documents that it is then usable by any transaction.
  // Handles from aborted write txns are closed by LMDB, so only cache
  // handles of tables that already existed or that we open read-only.
  if (!txn.write()) tables_.emplace(std::move(n), dbi);
  return std::optional<MDB_dbi>(dbi);
}

Status Environment::OpenAllTables(const std::vector<std::string_view>& core) {
  KI_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(*this, !read_only_));
  std::vector<std::string> names;
  MDB_dbi main;
  int rc = mdb_dbi_open(txn.get(), nullptr, 0, &main);
  if (rc) return MdbStatus("open main table", rc);
  {
    KI_ASSIGN_OR_RETURN(Cursor cur, Cursor::Open(txn, main));
    KI_ASSIGN_OR_RETURN(bool more, cur.Seek(""));
    while (more) {
      names.emplace_back(cur.key());
      KI_ASSIGN_OR_RETURN(more, cur.Next());
    }
  }
  if (!read_only_) {
    for (std::string_view c : core) names.emplace_back(c);
  }
  std::map<std::string, MDB_dbi, std::less<>> opened;
  for (const std::string& n : names) {
    if (opened.count(n)) continue;
    MDB_dbi dbi;
    rc = mdb_dbi_open(txn.get(), n.c_str(), read_only_ ? 0 : CreateFlags(n), &dbi);
    if (rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE) continue;  // not a table of ours
    if (rc) return MdbStatus("open table " + n, rc);
    opened.emplace(n, dbi);
  }
  KI_RETURN_IF_ERROR(txn.Commit());
  std::lock_guard<std::mutex> lock(mu_);
  tables_.merge(opened);
  return Status::OK();
}

namespace {

// The names in the main table: every named table of the index.
Result<std::vector<std::string>> NamesInMain(Txn& txn) {
  std::vector<std::string> names;
  MDB_dbi main;
  int rc = mdb_dbi_open(txn.get(), nullptr, 0, &main);
  if (rc) return MdbStatus("open main table", rc);
  KI_ASSIGN_OR_RETURN(Cursor cur, Cursor::Open(txn, main));
  KI_ASSIGN_OR_RETURN(bool more, cur.Seek(""));
  while (more) {
    names.emplace_back(cur.key());
    KI_ASSIGN_OR_RETURN(more, cur.Next());
  }
  return names;
}

}  // namespace

Result<Txn> Environment::BeginWrite() {
  // Tables another process created after this one opened the store are
  // opened here, in a read transaction of their own, while no write
  // transaction of ours is live. Otherwise a reader thread would open them
  // during the batch: LMDB then gives the reader's handle a slot the write
  // transaction does not know (mdb_cursor_open: EINVAL, "LMDB cursor:
  // Invalid argument", seen with two concurrent imports into a fresh store),
  // and a table the batch creates could take the same slot.
  for (int attempt = 0;; ++attempt) {
    KI_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(*this, true));
    KI_ASSIGN_OR_RETURN(std::vector<std::string> names, NamesInMain(txn));
    bool all = true;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (const auto& n : names) all = all && tables_.count(n) != 0;
    }
    // Holding the write lock, no other process can add a table now: every
    // table this transaction sees has a handle opened before it began.
    if (all || attempt == 8) return txn;
    txn.Abort();
    KI_RETURN_IF_ERROR(RefreshTables());
  }
}

Status Environment::RefreshTables() {
  // mu_ is held for the whole read transaction: no other handle may be
  // opened in this process while it opens some.
  std::lock_guard<std::mutex> lock(mu_);
  KI_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(*this, false));
  KI_ASSIGN_OR_RETURN(std::vector<std::string> names, NamesInMain(txn));
  for (const std::string& n : names) {
    if (tables_.count(n)) continue;
    MDB_dbi dbi;
    int rc = mdb_dbi_open(txn.get(), n.c_str(), 0, &dbi);
    if (rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE) continue;  // not a table of ours
    if (rc) return MdbStatus("open table " + n, rc);
    tables_.emplace(n, dbi);
  }
  return txn.Commit();  // a read transaction's handles stay open after commit
}

// The bytes of data.mdb and the bytes its newest meta page says are in use.
static bool FileAndUsed(MDB_env* env, mdb_filehandle_t* fd, uint64_t* file, uint64_t* used) {
  MDB_envinfo info;
  MDB_stat st;
  struct stat fs;
  if (mdb_env_info(env, &info) != 0 || mdb_env_stat(env, &st) != 0 || mdb_env_get_fd(env, fd) != 0 ||
      ::fstat(*fd, &fs) != 0)
    return false;
  *file = uint64_t(fs.st_size);
  *used = (uint64_t(info.me_last_pgno) + 1) * st.ms_psize;
  return true;
}

Status Environment::TrimFile() {
  if (read_only_) return Status::OK();
  mdb_filehandle_t fd;
  uint64_t file = 0, used = 0;
  // Best effort throughout: nothing is lost by keeping the space. The
  // first look is without the lock, so that the usual case (nothing to
  // give back) never waits for another process's write.
  if (!FileAndUsed(env_, &fd, &file, &used) || file <= used) return Status::OK();
  // Under the write lock: no other writer adds pages meanwhile, and no
  // reader reads past the last page of its snapshot, which is at most the
  // newest meta's last page.
  KI_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(*this, true));
  if (!FileAndUsed(env_, &fd, &file, &used) || file <= used) return Status::OK();
  if (::ftruncate(fd, off_t(used)) != 0)
    return Status::IOError(std::string("index: giving back unused space: ") + std::strerror(errno));
  return Status::OK();
}

Status Environment::ReadEverything() {
  KI_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(*this, false));
  KI_ASSIGN_OR_RETURN(std::vector<std::string> names, NamesInMain(txn));
  uint64_t sum = 0;
  for (const std::string& n : names) {
    MDB_dbi dbi;
    int rc = mdb_dbi_open(txn.get(), n.c_str(), 0, &dbi);
    if (rc == MDB_NOTFOUND || rc == MDB_INCOMPATIBLE) continue;  // not a table of ours
    if (rc) return MdbStatus("open table " + n, rc);
    KI_ASSIGN_OR_RETURN(Cursor cur, Cursor::Open(txn, dbi));
    KI_ASSIGN_OR_RETURN(bool more, cur.Seek(""));
    while (more) {
      // Every byte, so that a value whose pages lie past the file's end
      // faults here.
      for (char c : cur.key()) sum += uint8_t(c);
      for (char c : cur.value()) sum += uint8_t(c);
      KI_ASSIGN_OR_RETURN(more, cur.Next());
    }
  }
  volatile uint64_t keep = sum;  // the reads are the point
  (void)keep;
  return Status::OK();
}

void Environment::Remember(std::string_view name, MDB_dbi dbi) {
  std::lock_guard<std::mutex> lock(mu_);
  tables_.insert_or_assign(std::string(name), dbi);
}

void Environment::Forget(std::string_view name) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = tables_.find(name); it != tables_.end()) tables_.erase(it);
}

Result<Txn> Txn::Begin(Environment& env, bool write) {
  Txn t;
  int rc = mdb_txn_begin(env.get(), nullptr, write ? 0 : MDB_RDONLY, &t.txn_);
  if (rc) {
    if (rc == EACCES) return Status::IOError("index: the store is read-only");
    return MdbStatus("begin", rc);
  }
  t.write_ = write;
  return t;
}

// Out of line, as every call into LMDB is: only this module calls it
// (cmake/modules.cmake), through the fault guard's InLmdb.
void Txn::Abort() {
  if (!txn_) return;
  InLmdb in;
  if (write_) {
    mdb_txn_abort(txn_);
  } else {
    mdb_txn_commit(txn_);
  }
  txn_ = nullptr;
}

Status Txn::Commit() {
  InLmdb in;
  int rc = mdb_txn_commit(txn_);
  txn_ = nullptr;  // committed or aborted by LMDB on failure
  if (rc) {
    // LMDB reports a short write (full disk, file size limit) as EIO.
    std::string why = rc == EIO || rc == ENOSPC || rc == EFBIG || rc == MDB_MAP_FULL
                          ? " (is the disk full, or a file size limit reached?)"
                          : "";
    return Status::IOError(std::string("index commit: ") + mdb_strerror(rc) + why +
                           "; the transaction was rolled back and nothing was stored");
  }
  return Status::OK();
}

bool Txn::IsSetTable(MDB_dbi dbi) const {
  unsigned flags = 0;
  return mdb_dbi_flags(txn_, dbi, &flags) == 0 && (flags & MDB_DUPSORT);
}

namespace {
// A set table's key as LMDB's key and duplicate; false for a key that no
// set table holds (kSetKeyBytes or shorter).
bool SplitSetKey(std::string_view key, MDB_val* k, MDB_val* d) {
  if (key.size() <= kSetKeyBytes) return false;
  *k = Val(key.substr(0, kSetKeyBytes));
  *d = Val(key.substr(kSetKeyBytes));
  return true;
}

Status NotASetKey(std::string_view op, size_t size) {
  return Status::IOError("index " + std::string(op) + ": a key of " + std::to_string(size) +
                         " bytes in a set table, which holds keys of more than " + std::to_string(kSetKeyBytes));
}
}  // namespace

Result<std::optional<std::string_view>> Txn::Get(MDB_dbi dbi, std::string_view key) {
  MDB_val k = Val(key), v{};
  InLmdb in;
  if (IsSetTable(dbi)) {
    MDB_val d;
    if (!SplitSetKey(key, &k, &d)) return std::optional<std::string_view>();
    MDB_cursor* c = nullptr;
    int rc = mdb_cursor_open(txn_, dbi, &c);
    if (rc) return MdbStatus("cursor", rc);
    rc = mdb_cursor_get(c, &k, &d, MDB_GET_BOTH);
    mdb_cursor_close(c);
    if (rc == MDB_NOTFOUND) return std::optional<std::string_view>();
    if (rc) return MdbStatus("get", rc);
    return std::optional<std::string_view>(std::string_view());
  }
  int rc = mdb_get(txn_, dbi, &k, &v);
  if (rc == MDB_NOTFOUND) return std::optional<std::string_view>();
  if (rc) return MdbStatus("get", rc);
  return std::optional<std::string_view>(View(v));
}

Status Txn::Put(MDB_dbi dbi, std::string_view key, std::string_view value) {
  // Keys from input go through FitKey; one that did not is a ki bug, said
  // plainly instead of as LMDB's MDB_BAD_VALSIZE.
  if (key.size() > kMaxKeyBytes)
    return Status::IOError("index put: a key of " + std::to_string(key.size()) + " bytes is over LMDB's " +
                           std::to_string(kMaxKeyBytes) + "-byte limit");
  MDB_val k = Val(key), v = Val(value);
  InLmdb in;
  if (IsSetTable(dbi)) {
    if (!value.empty() || !SplitSetKey(key, &k, &v)) return NotASetKey("put", key.size());
    int rc = mdb_put(txn_, dbi, &k, &v, MDB_NODUPDATA);
    if (rc && rc != MDB_KEYEXIST) return MdbStatus("put", rc);  // held already: as a plain table's put
    return Status::OK();
  }
  int rc = mdb_put(txn_, dbi, &k, &v, 0);
  if (rc) return MdbStatus("put", rc);
  return Status::OK();
}

Result<char*> Txn::Reserve(MDB_dbi dbi, std::string_view key, size_t size) {
  MDB_val k = Val(key), v{size, nullptr};
  InLmdb in;
  if (IsSetTable(dbi)) return NotASetKey("reserve", key.size());
  int rc = mdb_put(txn_, dbi, &k, &v, MDB_RESERVE);
  if (rc) return MdbStatus("put", rc);
  return static_cast<char*>(v.mv_data);
}

Status Txn::Del(MDB_dbi dbi, std::string_view key) {
  MDB_val k = Val(key), d;
  InLmdb in;
  if (IsSetTable(dbi)) {
    if (!SplitSetKey(key, &k, &d)) return Status::OK();  // none held
    int rc = mdb_del(txn_, dbi, &k, &d);
    if (rc && rc != MDB_NOTFOUND) return MdbStatus("delete", rc);
    return Status::OK();
  }
  int rc = mdb_del(txn_, dbi, &k, nullptr);
  if (rc && rc != MDB_NOTFOUND) return MdbStatus("delete", rc);
  return Status::OK();
}

Status Txn::Drop(MDB_dbi dbi) {
  InLmdb in;
  int rc = mdb_drop(txn_, dbi, 0);
  if (rc) return MdbStatus("drop", rc);
  return Status::OK();
}

Status Txn::Remove(MDB_dbi dbi) {
  InLmdb in;
  int rc = mdb_drop(txn_, dbi, 1);
  if (rc) return MdbStatus("remove table", rc);
  return Status::OK();
}

Result<bool> Txn::Append(MDB_dbi dbi, std::string_view key, std::string_view value) {
  if (key.size() > kMaxKeyBytes) return Put(dbi, key, value);  // which says what is wrong
  if (IsSetTable(dbi)) {
    // A key after every other is a new LMDB key (MDB_APPEND) or a
    // duplicate after every other of the last one (MDB_APPENDDUP).
    MDB_val k, d;
    if (!value.empty() || !SplitSetKey(key, &k, &d)) return NotASetKey("put", key.size());
    InLmdb in;
    int rc = mdb_put(txn_, dbi, &k, &d, MDB_APPEND);  // pages end full, as a plain table's appends
    if (rc == MDB_KEYEXIST) rc = mdb_put(txn_, dbi, &k, &d, MDB_APPENDDUP);
    if (rc == MDB_KEYEXIST) return false;
    if (rc) return MdbStatus("put", rc);
    return true;
  }
  MDB_val k = Val(key), v = Val(value);
  InLmdb in;
  int rc = mdb_put(txn_, dbi, &k, &v, MDB_APPEND);
  if (rc == MDB_KEYEXIST) return false;
  if (rc) return MdbStatus("put", rc);
  return true;
}

Result<char*> Txn::ReserveAppend(MDB_dbi dbi, std::string_view key, size_t size) {
  if (key.size() > kMaxKeyBytes || IsSetTable(dbi)) return Reserve(dbi, key, size);
  MDB_val k = Val(key), v{size, nullptr};
  InLmdb in;
  int rc = mdb_put(txn_, dbi, &k, &v, MDB_RESERVE | MDB_APPEND);
  if (rc == MDB_KEYEXIST) return nullptr;
  if (rc) return MdbStatus("put", rc);
  return static_cast<char*>(v.mv_data);
}

Result<std::optional<std::string>> Txn::LastKey(MDB_dbi dbi) {
  KI_ASSIGN_OR_RETURN(Cursor cur, Cursor::Open(*this, dbi));
  return cur.Last();
}

Result<uint64_t> Txn::Entries(MDB_dbi dbi) {
  MDB_stat st;
  int rc = mdb_stat(txn_, dbi, &st);
  if (rc) return MdbStatus("table statistics", rc);
  return uint64_t(st.ms_entries);
}

uint64_t Txn::id() const { return uint64_t(mdb_txn_id(txn_)); }

Status Environment::CopyCompacted(const std::string& dir) {
  InLmdb in;
  int rc = mdb_env_copy2(env_, dir.c_str(), MDB_CP_COMPACT);
  if (rc) return MdbStatus("compacting copy", rc);
  return Status::OK();
}

Result<uint64_t> Environment::LastTxnId() {
  MDB_envinfo info;
  InLmdb in;
  int rc = mdb_env_info(env_, &info);
  if (rc) return MdbStatus("info", rc);
  return uint64_t(info.me_last_txnid);
}

Result<std::vector<std::string>> Environment::TableNames() {
  KI_ASSIGN_OR_RETURN(Txn txn, Txn::Begin(*this, false));
  return NamesInMain(txn);
}

Result<bool> Environment::HasTable(Txn& txn, std::string_view name) {
  MDB_dbi main;
  InLmdb in;
  int rc = mdb_dbi_open(txn.get(), nullptr, 0, &main);  // the table of tables: always open
  if (rc) return MdbStatus("open main table", rc);
  KI_ASSIGN_OR_RETURN(auto v, txn.Get(main, name));
  return v.has_value();
}

void Environment::UnguardAssertions() { (void)mdb_env_set_assert(env_, nullptr); }

Cursor::~Cursor() {
  if (c_) mdb_cursor_close(c_);
}

Result<Cursor> Cursor::Open(Txn& txn, MDB_dbi dbi) {
  MDB_cursor* c = nullptr;
  InLmdb in;
  int rc = mdb_cursor_open(txn.get(), dbi, &c);
  if (rc) return MdbStatus("cursor", rc);
  return Cursor(c, txn.IsSetTable(dbi));
}

void Cursor::Join() {
  if (!set_) return;
  joined_.assign(static_cast<const char*>(k_.mv_data), k_.mv_size);
  joined_.append(static_cast<const char*>(v_.mv_data), v_.mv_size);
}

Result<bool> Cursor::Seek(std::string_view key) {
  InLmdb in;
  int rc;
  if (key.empty()) {
    rc = mdb_cursor_get(c_, &k_, &v_, MDB_FIRST);
  } else if (set_ && key.size() > kSetKeyBytes) {
    // The first whole key >= key: among the duplicates of its first
    // kSetKeyBytes, else the next LMDB key's first.
    const std::string_view head = key.substr(0, kSetKeyBytes);
    k_ = Val(head);
    v_ = Val(key.substr(kSetKeyBytes));
    rc = mdb_cursor_get(c_, &k_, &v_, MDB_GET_BOTH_RANGE);
    if (rc == MDB_NOTFOUND) {
      k_ = Val(head);
      rc = mdb_cursor_get(c_, &k_, &v_, MDB_SET_RANGE);
      if (rc == 0 && View(k_) == head) rc = mdb_cursor_get(c_, &k_, &v_, MDB_NEXT_NODUP);
    }
  } else {
    k_ = Val(key);
    rc = mdb_cursor_get(c_, &k_, &v_, MDB_SET_RANGE);
  }
  if (rc == MDB_NOTFOUND) return false;
  if (rc) return MdbStatus("seek", rc);
  Join();
  return true;
}

Result<std::optional<std::string>> Cursor::Last() {
  InLmdb in;
  int rc = mdb_cursor_get(c_, &k_, &v_, MDB_LAST);  // a set table's: its last key's last duplicate
  if (rc == MDB_NOTFOUND) return std::optional<std::string>();
  if (rc) return MdbStatus("seek", rc);
  Join();
  return std::optional<std::string>(std::string(key()));
}

Result<bool> Cursor::Next() {
  InLmdb in;
  int rc = mdb_cursor_get(c_, &k_, &v_, MDB_NEXT);  // a set table's: duplicates, then the next key's
  if (rc == MDB_NOTFOUND) return false;
  if (rc) return MdbStatus("next", rc);
  Join();
  return true;
}

}  // namespace ki::lmdb
