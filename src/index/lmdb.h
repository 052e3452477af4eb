// Thin RAII layer over LMDB (internal to src/).
//
// LMDB's contract, which this wrapper keeps: one MDB_env per process and
// directory; a transaction aborts unless committed; data returned by a get
// is valid only inside its transaction (callers copy out); one write
// transaction at a time.
#pragma once

#include <lmdb.h>

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ki/status.h"

namespace ki::lmdb {

Status MdbStatus(std::string_view op, int rc);

// The message of a damaged index file's Corruption (Environment::Open)
// without the remedy it ends with: what is wrong, for a caller that has
// applied the remedy.
std::string_view WithoutRemedy(std::string_view message);

// LMDB refuses keys longer than MDB_MAXKEYSIZE (511 bytes in the default
// build; Environment::Open checks mdb_env_get_maxkeysize against this).
inline constexpr size_t kMaxKeyBytes = 511;
// Bytes of a long key that FitKey keeps as they are.
inline constexpr size_t kFitKeyPrefixBytes = kMaxKeyBytes - 1 - 32;

// A key LMDB accepts, for keys built from input of unbounded length (a JSON
// pointer through a user-named tensor, a catalog row id): `key` itself when
// it fits, else its first kFitKeyPrefixBytes bytes, a 0xFF byte and the
// 32-byte SHA-256 of the whole key (docs/format.md, "Index"). A valid
// document is then never refused for ki's index layout. Such keys come from
// UTF-8 text, where 0xFF never occurs, so a shortened key equals no
// unshortened one; lookups build the key the same way. Prefix scans see the
// kept bytes, so the parts before the text (digests, table names) stay
// whole.
std::string FitKey(std::string key);

// For display: a key's text part that FitKey may have shortened. The part
// itself when it was not; else the text before the 0xFF marker, cut back to
// a whole UTF-8 character, followed by "…".
std::string KeyText(std::string_view part);

// A *set table* holds keys alone (values are empty), stored as LMDB's
// sorted duplicates (MDB_DUPSORT): the first kSetKeyBytes bytes of a key
// (a digest) are the LMDB key, the rest its duplicate's data, so a run of
// keys that share those bytes stores them once. The refs table is 47,326
// keys of 65 bytes on the imported export under 9,614 targets: 781 pages
// stored so instead of 915 (bench/results/catalog-2026-12-02-h.md; a long
// run of duplicates is a sub-table of its own pages, and 9,061 targets have
// fewer than ten referrers, each run paying a sub-page header). Txn and
// Cursor take and give a set table's whole keys, in the same order as a
// plain table of those keys, so callers cannot tell the two apart but by
// size; a key of a set table is longer than kSetKeyBytes and its value is
// empty. Environment::DeclareSetTable says which tables are (before they
// are created: a table keeps the layout it was created with).
inline constexpr size_t kSetKeyBytes = 32;

inline MDB_val Val(std::string_view s) {
  return MDB_val{s.size(), const_cast<char*>(s.data())};
}
inline std::string_view View(const MDB_val& v) {
  return {static_cast<const char*>(v.mv_data), v.mv_size};
}

class Txn;

class Environment {
 public:
  Environment() = default;
  ~Environment();
  Environment(const Environment&) = delete;
  Environment& operator=(const Environment&) = delete;

  // `name` is created as a set table (above). Call before OpenAllTables.
  void DeclareSetTable(std::string_view name);

  // Opens (creating when writable) the index in `dir`. A data.mdb shorter
  // than the pages its meta page says are in use, or empty, is Corruption
  // (reading it would fault), with what to run.
  Status Open(const std::string& dir, uint64_t map_size, bool read_only);
  MDB_env* get() const { return env_; }
  bool read_only() const { return read_only_; }

  // Named table handle. In a write transaction the table is created when
  // absent; in a read transaction an absent table yields nullopt.
  Result<std::optional<MDB_dbi>> Table(Txn& txn, std::string_view name);
  // Opens every table that exists (and, when writable, creates `core` ones)
  // in one committed transaction, caching the handles. Called once when the
  // store opens: LMDB forbids opening handles in two live transactions of
  // one process at once, and closes handles opened in an aborted one, so
  // lazy opening while a write batch is live is avoided.
  Status OpenAllTables(const std::vector<std::string_view>& core);
  // Begins a write transaction in which every existing table already has a
  // cached handle (opened first when another process added tables since),
  // so that no handle is opened in this process while it is live except the
  // ones it creates. Use it for every write transaction after the open.
  Result<Txn> BeginWrite();
  // Cuts data.mdb back to the pages in use. A write transaction that failed
  // (a full disk) or was abandoned may have written pages past the last
  // committed one, growing the file (56 KiB to 8 MiB was seen); LMDB would
  // reuse them, but until then the disk space is held. Called after every
  // write transaction that did not commit.
  Status TrimFile();
  // Reads every key and value of every table in one read transaction:
  // what the index's open does not check (its pages). A damaged page is
  // Corruption when LMDB notices, and otherwise may end the process with
  // a signal (a page number past the file's end reads beyond it), so call
  // it in a process that can afford to die (RebuildDamagedIndex forks).
  Status ReadEverything();
  // Caches a handle opened in a write transaction, after that transaction
  // committed (LMDB closes handles of aborted transactions).
  void Remember(std::string_view name, MDB_dbi dbi);
  // Drops a cached handle that Txn::Remove closed.
  void Forget(std::string_view name);
  // A compacted copy of the environment into `dir` (data.mdb there; not
  // synced).
  Status CopyCompacted(const std::string& dir);
  // The ID of the last committed transaction.
  Result<uint64_t> LastTxnId();
  // The names of every table, in one read transaction.
  Result<std::vector<std::string>> TableNames();
  // Whether the environment has a table of that name, seen from `txn`
  // (Table would create it in a write transaction).
  Result<bool> HasTable(Txn& txn, std::string_view name);
  // LMDB's assertions go back to its default (abort), for a process whose
  // death is the answer (RebuildDamagedIndex's probe).
  void UnguardAssertions();

 private:
  Status CheckMapFile(const std::string& file);
  Status RefreshTables();

  unsigned CreateFlags(std::string_view name) const;

  MDB_env* env_ = nullptr;
  bool read_only_ = false;
  std::vector<std::string> set_tables_;
  std::mutex mu_;  // guards tables_ and mdb_dbi_open
  std::map<std::string, MDB_dbi, std::less<>> tables_;
};

class Txn {
 public:
  Txn() = default;
  ~Txn() { Abort(); }
  Txn(Txn&& o) noexcept : txn_(o.txn_), write_(o.write_) { o.txn_ = nullptr; }
  Txn& operator=(Txn&& o) noexcept {
    Abort();
    txn_ = o.txn_;
    write_ = o.write_;
    o.txn_ = nullptr;
    return *this;
  }
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;

  static Result<Txn> Begin(Environment& env, bool write);
  Status Commit();
  // Ends the transaction without writing. A read-only transaction is ended
  // with commit, not abort: LMDB closes table handles opened inside an
  // aborted transaction, and read paths cache the handles they open.
  void Abort();
  MDB_txn* get() const { return txn_; }
  bool write() const { return write_; }

  // The view is valid until the transaction ends or the next write.
  Result<std::optional<std::string_view>> Get(MDB_dbi dbi, std::string_view key);
  Status Put(MDB_dbi dbi, std::string_view key, std::string_view value);
  // Reserves `size` bytes for the value and returns where to write them
  // (saves a copy of large values).
  Result<char*> Reserve(MDB_dbi dbi, std::string_view key, size_t size);
  Status Del(MDB_dbi dbi, std::string_view key);  // absent is fine
  Status Drop(MDB_dbi dbi);                        // empties the table
  // Deletes the table itself; LMDB closes its handle at once (even if the
  // transaction then aborts), so forget it (Environment::Forget).
  Status Remove(MDB_dbi dbi);
  // Put and Reserve through LMDB's append path (MDB_APPEND: a new page
  // instead of a split one), for a key that sorts after every key of the
  // table: false (nothing written) when LMDB says it does not.
  Result<bool> Append(MDB_dbi dbi, std::string_view key, std::string_view value);
  Result<char*> ReserveAppend(MDB_dbi dbi, std::string_view key, size_t size);  // nullptr: does not sort last
  // The table's last key, copied; nullopt when it is empty.
  Result<std::optional<std::string>> LastKey(MDB_dbi dbi);
  // How many entries the table holds (LMDB keeps the count: no scan).
  Result<uint64_t> Entries(MDB_dbi dbi);
  uint64_t id() const;  // LMDB's transaction ID
  // Whether `dbi` is a set table (Environment::DeclareSetTable).
  bool IsSetTable(MDB_dbi dbi) const;

 private:
  MDB_txn* txn_ = nullptr;
  bool write_ = false;
};

class Cursor {
 public:
  ~Cursor();
  Cursor(const Cursor&) = delete;
  Cursor& operator=(const Cursor&) = delete;
  Cursor(Cursor&& o) noexcept : c_(o.c_), set_(o.set_), joined_(std::move(o.joined_)), k_(o.k_), v_(o.v_) {
    o.c_ = nullptr;
  }
  static Result<Cursor> Open(Txn& txn, MDB_dbi dbi);
  // Positions at the first key >= key (or the first key when empty).
  // Returns false at the end.
  Result<bool> Seek(std::string_view key);
  Result<bool> Next();
  // The last key, copied (nullopt when the table is empty).
  Result<std::optional<std::string>> Last();
  // A set table's key is its LMDB key and duplicate joined (kept in the
  // cursor until it moves), its value empty.
  std::string_view key() const { return set_ ? std::string_view(joined_) : View(k_); }
  std::string_view value() const { return set_ ? std::string_view() : View(v_); }

 private:
  Cursor(MDB_cursor* c, bool set) : c_(c), set_(set) {}
  // After a move: joins a set table's key.
  void Join();
  MDB_cursor* c_ = nullptr;
  bool set_ = false;
  std::string joined_;
  MDB_val k_{}, v_{};
};

}  // namespace ki::lmdb
