// Batch::PutBlobStream and Store::ReadStream: large blobs stored and read a
// piece at a time, in the same frames PutBlob writes.
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <random>

#include "ki/store.h"
#include "odb/tables.h"
#include "testutil/fault_env.h"
#include "testutil/string_file.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using test::TempDir;

using test::StringFile;

std::string Random(size_t n, uint32_t seed) {
  std::mt19937 g(seed);
  std::string s(n, '\0');
  for (auto& c : s) c = char(g());
  return s;
}

std::string Words(size_t n, uint32_t seed) {
  static const char* kWords[] = {"kernel ", "latency ", "0.125 ", "gqa ", "decode ", "\n", "tensor ", "sm_90a "};
  std::mt19937 g(seed);
  std::string s;
  while (s.size() < n) s += kWords[g() % 8];
  s.resize(n);
  return s;
}

std::unique_ptr<Store> OpenStore(const std::string& dir, StoreOptions o = {}) {
  auto s = Store::Init(dir, o);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  return s.ok() ? std::move(s).value() : nullptr;
}

Result<PutResult> PutStream(Store& store, const std::string& bytes, bool regular = true) {
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  StringFile in(bytes, regular ? StringFile::Looks::kFile : StringFile::Looks::kPipe);
  KI_ASSIGN_OR_RETURN(PutResult r, batch->PutBlobStream(in, "application/octet-stream", "input.bin"));
  KI_RETURN_IF_ERROR(batch->Commit());
  return r;
}

Result<PutResult> PutWhole(Store& store, const std::string& bytes) {
  KI_ASSIGN_OR_RETURN(auto batch, store.NewBatch());
  KI_ASSIGN_OR_RETURN(PutResult r, batch->PutBlob(bytes, "application/octet-stream"));
  KI_RETURN_IF_ERROR(batch->Commit());
  return r;
}

std::string ReadStreamed(Store& store, const Digest& d, Status* status) {
  std::string out;
  *status = store.ReadStream(d, [&](std::string_view b) {
    out.append(b);
    return Status::OK();
  });
  return out;
}

size_t IncomingFiles(const Store& store) {
  std::string dir = store.path() + "/objects/" + std::string(odb::kIncomingDir);
  if (!std::filesystem::exists(dir)) return 0;
  return size_t(std::distance(std::filesystem::directory_iterator(dir), std::filesystem::directory_iterator()));
}

// A write that failed left nothing: no object, no scratch file, and an
// audit with neither faults nor notes.
void ExpectEmptyAndClean(Store& store) {
  EXPECT_EQ(IncomingFiles(store), 0u);
  size_t n = 0;
  ASSERT_OK(store.ForEachObject([&](const ObjectInfo&) { return ++n, true; }));
  EXPECT_EQ(n, 0u);
  auto audit = store.Audit();
  ASSERT_OK(audit);
  EXPECT_FALSE(audit->HasFaults());
  EXPECT_TRUE(audit->notes.empty()) << audit->notes.front();
}

// The frames on disk are the same bytes whichever path wrote them: loose
// files compared byte for byte, LMDB frames through their stored size and
// content.
TEST(StoreStream, SameFramesAsPutBlob) {
  TempDir a, b;
  auto sa = OpenStore(a.path());
  auto sb = OpenStore(b.path());
  ASSERT_TRUE(sa && sb);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"small text (LMDB)", Words(5000, 1)},
      {"compressible to under 64 KiB (LMDB)", std::string(2 << 20, 'z')},
      {"small random (LMDB, raw)", Random(20000, 2)},
      {"3 MiB text (loose, zstd)", Words(3 << 20, 3)},
      {"3 MiB random (loose, raw)", Random(3 << 20, 4)},
      {"100 KiB random (loose, raw)", Random(100 << 10, 5)},
  };
  for (const auto& [name, bytes] : cases) {
    for (bool regular : {true, false}) {
      SCOPED_TRACE(name + (regular ? " from a file" : " from a pipe"));
      TempDir c;
      auto sc = OpenStore(c.path());
      auto streamed = PutStream(*sc, bytes, regular);
      ASSERT_OK(streamed);
      EXPECT_FALSE(streamed->existed);
      auto whole = PutWhole(*sb, bytes);
      ASSERT_OK(whole);
      ASSERT_EQ(streamed->digest, whole->digest);
      EXPECT_EQ(streamed->digest, Sha256Of(bytes));
      auto is = sc->Stat(streamed->digest);
      auto iw = sb->Stat(whole->digest);
      ASSERT_OK(is);
      ASSERT_OK(iw);
      ASSERT_TRUE(*is && *iw);
      EXPECT_EQ((*is)->location, (*iw)->location);
      EXPECT_EQ((*is)->stored_size, (*iw)->stored_size);
      EXPECT_EQ((*is)->size, bytes.size());
      EXPECT_EQ((*is)->media_type, "application/octet-stream");
      if ((*is)->location == Location::kLoose) {
        std::string fs = test::ReadFileOrDie(odb::LoosePath(sc->path(), streamed->digest));
        std::string fw = test::ReadFileOrDie(odb::LoosePath(sb->path(), whole->digest));
        EXPECT_TRUE(fs == fw) << "streamed frame " << fs.size() << " bytes, PutBlob's " << fw.size();
      }
      auto back = sc->Read(streamed->digest);
      ASSERT_OK(back);
      EXPECT_TRUE(*back == bytes);
      Status st;
      EXPECT_TRUE(ReadStreamed(*sc, streamed->digest, &st) == bytes);
      EXPECT_OK(st);
      EXPECT_EQ(IncomingFiles(*sc), 0u);  // scratch files are gone
      auto audit = sc->Audit();
      ASSERT_OK(audit);
      EXPECT_FALSE(audit->HasFaults());
      EXPECT_TRUE(audit->notes.empty()) << audit->notes.front();
    }
  }
  (void)sa;
}

TEST(StoreStream, PresentObjectIsNotRewritten) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  std::string bytes = Words(2 << 20, 6);
  auto first = PutStream(*store, bytes);
  ASSERT_OK(first);
  std::string path = odb::LoosePath(store->path(), first->digest);
  struct stat before {};
  ASSERT_EQ(::stat(path.c_str(), &before), 0);
  for (bool regular : {true, false}) {
    auto again = PutStream(*store, bytes, regular);
    ASSERT_OK(again);
    EXPECT_TRUE(again->existed);
    EXPECT_EQ(again->digest, first->digest);
  }
  auto whole = PutWhole(*store, bytes);
  ASSERT_OK(whole);
  EXPECT_TRUE(whole->existed);
  struct stat after {};
  ASSERT_EQ(::stat(path.c_str(), &after), 0);
  EXPECT_EQ(before.st_ino, after.st_ino);
  EXPECT_EQ(before.st_mtim.tv_sec, after.st_mtim.tv_sec);
  EXPECT_EQ(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
  EXPECT_EQ(IncomingFiles(*store), 0u);
}

// A file whose content the store already holds is hashed, found and not
// compressed again: nothing is written, not even a scratch frame, and the
// put says `existed`. (A pipe has to be spooled and compressed: one pass.)
TEST(StoreStream, ReaddedFileIsHashedNotCompressedAgain) {
  TempDir dir, files;
  test::FaultInjectionEnv env;
  StoreOptions o;
  o.env = &env;
  auto store = OpenStore(dir.path(), o);
  ASSERT_TRUE(store);
  const std::string path = files.Join("tensor.bin");
  test::WriteFileOrDie(path, Words(3 << 20, 16));
  auto put_file = [&]() -> Result<PutResult> {
    KI_ASSIGN_OR_RETURN(auto in, Env::Default()->NewSequentialFile(path));
    KI_ASSIGN_OR_RETURN(auto batch, store->NewBatch());
    KI_ASSIGN_OR_RETURN(PutResult r, batch->PutBlobStream(*in, "application/octet-stream", "tensor.bin"));
    KI_RETURN_IF_ERROR(batch->Commit());
    return r;
  };
  auto first = put_file();
  ASSERT_OK(first);
  EXPECT_FALSE(first->existed);
  const int64_t written = env.bytes_written();
  EXPECT_GT(written, 0);
  auto again = put_file();
  ASSERT_OK(again);
  EXPECT_TRUE(again->existed);
  EXPECT_EQ(again->digest, first->digest);
  EXPECT_EQ(env.bytes_written(), written);  // no scratch frame, no scratch copy
  EXPECT_EQ(IncomingFiles(*store), 0u);
}

// Streamed objects have no size cap; objects read whole keep theirs.
TEST(StoreStream, NoCapForStreamedLooseBlobs) {
  TempDir dir;
  StoreOptions o;
  o.max_object_size = 1 << 20;
  auto store = OpenStore(dir.path(), o);
  std::string bytes = Words(3 << 20, 7);
  auto put = PutStream(*store, bytes);
  ASSERT_OK(put);
  Status st;
  EXPECT_TRUE(ReadStreamed(*store, put->digest, &st) == bytes);
  EXPECT_OK(st);
  auto whole = store->Read(put->digest);
  EXPECT_TRUE(whole.status().IsInvalidInput()) << whole.status().ToString();
  EXPECT_NE(whole.status().message().find("over the limit of 1048576"), std::string::npos);
  auto v = store->Verify(put->digest);
  ASSERT_OK(v);
  EXPECT_FALSE(v->HasFaults());
  auto re = store->Reindex();
  ASSERT_OK(re);
  EXPECT_FALSE(re->HasFaults());
  EXPECT_EQ(re->objects, 1u);
  EXPECT_TRUE(re->notes.empty()) << re->notes.front();
  // PutBlob of the same size from memory is still refused.
  auto big = PutWhole(*store, Words(3 << 20, 8));
  EXPECT_TRUE(big.status().IsInvalidInput()) << big.status().ToString();
}

// A flipped byte in a streamed loose object: ReadStream returns Corruption
// (after passing on the bytes), Verify and Audit report it.
TEST(StoreStream, CorruptionIsFound) {
  for (bool compressible : {true, false}) {
    SCOPED_TRACE(compressible ? "zstd frame" : "raw frame");
    TempDir dir;
    auto store = OpenStore(dir.path());
    std::string bytes = compressible ? Words(3 << 20, 9) : Random(3 << 20, 10);
    auto put = PutStream(*store, bytes);
    ASSERT_OK(put);
    std::string path = odb::LoosePath(store->path(), put->digest);
    std::string frame = test::ReadFileOrDie(path);
    EXPECT_EQ(frame[7], compressible ? 1 : 0);
    frame[frame.size() / 2] ^= 0x01;
    ::chmod(path.c_str(), 0644);
    test::WriteFileOrDie(path, frame);
    Status st;
    ReadStreamed(*store, put->digest, &st);
    EXPECT_TRUE(st.IsCorruption()) << st.ToString();
    auto v = store->Verify(put->digest);
    ASSERT_OK(v);
    EXPECT_TRUE(v->HasFaults());
    auto audit = store->Audit();
    ASSERT_OK(audit);
    ASSERT_EQ(audit->faults.size(), 1u);
    EXPECT_EQ(audit->faults[0].digest, put->digest);
  }
}

// A write that fails half way (disk full) stores nothing and leaves no
// scratch file.
TEST(StoreStream, DiskFullStoresNothing) {
  TempDir dir;
  test::FaultInjectionEnv env;
  StoreOptions o;
  o.env = &env;
  auto store = OpenStore(dir.path(), o);
  for (bool regular : {true, false}) {
    env.SetWriteBudget(1 << 20);
    auto r = PutStream(*store, Random(3 << 20, 11), regular);
    EXPECT_TRUE(r.status().IsIOError()) << r.status().ToString();
    env.SetWriteBudget(-1);
    ExpectEmptyAndClean(*store);
  }
}

// A batch dropped without Commit removes the loose file it streamed.
TEST(StoreStream, UncommittedBatchStoresNothing) {
  TempDir dir;
  auto store = OpenStore(dir.path());
  Digest d;
  {
    auto batch = store->NewBatch();
    ASSERT_OK(batch);
    StringFile in(Words(2 << 20, 12));
    auto r = (*batch)->PutBlobStream(in, "text/plain", "x");
    ASSERT_OK(r);
    d = r->digest;
    EXPECT_TRUE(std::filesystem::exists(odb::LoosePath(store->path(), d)));
  }
  EXPECT_FALSE(std::filesystem::exists(odb::LoosePath(store->path(), d)));
  EXPECT_EQ(IncomingFiles(*store), 0u);
}

// A loose file a killed writer renamed into place (its index entry never
// committed) is adopted by a streamed write of the same bytes, and its
// directory is synced before the index names it, as WriteObject does: a
// crash after the commit must not leave the index naming a file whose
// directory entry was never made durable.
TEST(StoreStream, AdoptedOrphanLooseFileIsSyncedBeforeTheIndexNamesIt) {
  TempDir dir;
  test::FaultInjectionEnv env;
  StoreOptions o;
  o.env = &env;
  auto store = OpenStore(dir.path(), o);
  ASSERT_TRUE(store);
  const std::string bytes = Words(2 << 20, 13);
  const Digest d = Sha256Of(bytes);
  const std::string path = odb::LoosePath(store->path(), d);
  {
    auto batch = store->NewBatch();
    ASSERT_OK(batch);
    StringFile in(bytes);
    ASSERT_OK((*batch)->PutBlobStream(in, "text/plain", "x"));
    std::string frame = test::ReadFileOrDie(path);
    batch->reset();
    test::WriteFileOrDie(path, frame);  // as a kill -9 before the commit leaves it
  }
  env.FailSyncDir(true);
  {
    auto batch = store->NewBatch();
    ASSERT_OK(batch);
    StringFile in(bytes);
    ASSERT_OK((*batch)->PutBlobStream(in, "text/plain", "x"));
    EXPECT_TRUE((*batch)->Commit().IsIOError());
  }
  env.FailSyncDir(false);
  {
    auto batch = store->NewBatch();
    ASSERT_OK(batch);
    StringFile in(bytes);
    ASSERT_OK((*batch)->PutBlobStream(in, "text/plain", "x"));
    ASSERT_OK((*batch)->Commit());
  }
  const auto synced = env.synced_dirs();
  EXPECT_NE(std::find(synced.begin(), synced.end(), path.substr(0, path.rfind('/'))), synced.end());
  Status st;
  EXPECT_EQ(ReadStreamed(*store, d, &st), bytes);
  EXPECT_OK(st);
}

// A real file whose mapping shrinks under the reader: on the reader's
// third step (the hash pass is done, zstd has consumed part of the input
// in the second; PutBlobStream maps the file once per pass), another process
// truncates the file to `keep` bytes, as a user's `truncate` or a writer
// rewriting it would. The pages past the new end are gone from the
// mapping: reading one raises SIGBUS.
class ShrinkingFile final : public SequentialFile {
 public:
  ShrinkingFile(std::unique_ptr<SequentialFile> base, std::string path, uint64_t keep)
      : base_(std::move(base)), path_(std::move(path)), keep_(keep) {}
  Result<size_t> Read(char* buf, size_t n) override { return base_->Read(buf, n); }
  Result<FileStat> Stat() override { return base_->Stat(); }
  Result<std::unique_ptr<MappedFile>> Map() override {
    KI_ASSIGN_OR_RETURN(auto m, base_->Map());
    return std::unique_ptr<MappedFile>(new Map_(std::move(m), this));
  }
  void Truncate() {
    pid_t pid = ::fork();
    if (pid == 0) _exit(::truncate(path_.c_str(), off_t(keep_)) == 0 ? 0 : 1);
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  int steps = 0;

 private:
  class Map_ final : public MappedFile {
   public:
    Map_(std::unique_ptr<MappedFile> base, ShrinkingFile* file) : base_(std::move(base)), file_(file) {}
    std::string_view data() const override { return base_->data(); }
    void Release(uint64_t offset) override { base_->Release(offset); }
    bool ReadGuarded(void (*read)(void*), void* arg) override {
      if (++file_->steps == 3) file_->Truncate();
      return base_->ReadGuarded(read, arg);
    }

   private:
    std::unique_ptr<MappedFile> base_;
    ShrinkingFile* file_;
  };
  std::unique_ptr<SequentialFile> base_;
  std::string path_;
  uint64_t keep_;
};

// A file truncated while it is mapped and read is invalid input naming it,
// not a SIGBUS: nothing is stored, no scratch file is left, and the next
// streamed write (on the same thread, with a fresh zstd context) writes the
// frame PutBlob writes.
TEST(StoreStream, FileTruncatedWhileMappedIsAnErrorNotASignal) {
  TempDir dir, files;
  auto store = OpenStore(dir.path());
  ASSERT_TRUE(store);
  const std::string path = files.Join("tensor.bin");
  test::WriteFileOrDie(path, Random(8 << 20, 14));  // incompressible: zstd takes it 1 MiB a step
  {
    auto base = Env::Default()->NewSequentialFile(path);
    ASSERT_OK(base);
    ShrinkingFile in(std::move(base).value(), path, 2 << 20);
    auto batch = store->NewBatch();
    ASSERT_OK(batch);
    auto r = (*batch)->PutBlobStream(in, "application/octet-stream", "tensor.bin");
    EXPECT_GE(in.steps, 3);
    ASSERT_TRUE(r.status().IsInvalidInput()) << r.status().ToString();
    EXPECT_EQ(r.status().message(), "tensor.bin: shrank while being read; nothing was stored");
  }
  ExpectEmptyAndClean(*store);

  const std::string bytes = Words(3 << 20, 15);
  auto streamed = PutStream(*store, bytes);
  ASSERT_OK(streamed);
  TempDir other;
  auto whole_store = OpenStore(other.path());
  auto whole = PutWhole(*whole_store, bytes);
  ASSERT_OK(whole);
  EXPECT_TRUE(test::ReadFileOrDie(odb::LoosePath(store->path(), streamed->digest)) ==
              test::ReadFileOrDie(odb::LoosePath(whole_store->path(), whole->digest)));
}

// Counts the mappings PutBlobStream makes of its input: one per pass over it.
class CountingFile final : public SequentialFile {
 public:
  explicit CountingFile(std::unique_ptr<SequentialFile> base) : base_(std::move(base)) {}
  Result<size_t> Read(char* buf, size_t n) override { return base_->Read(buf, n); }
  Result<FileStat> Stat() override { return base_->Stat(); }
  Result<std::unique_ptr<MappedFile>> Map() override {
    ++maps;
    return base_->Map();
  }
  int maps = 0;

 private:
  std::unique_ptr<SequentialFile> base_;
};

// A pull has hashed a blob as it arrived: the store need not hash it first
// to learn whether it holds it, so a new blob is read once (not twice), a
// held one not at all, and bytes that no longer hash to what they were
// checked to be are refused with nothing stored.
TEST(StoreStream, ExpectedDigestSparesTheHashPass) {
  TempDir dir, files;
  auto store = OpenStore(dir.path());
  ASSERT_TRUE(store);
  const std::string bytes = Words(3 << 20, 21);
  const Digest d = Sha256Of(bytes);
  const std::string path = files.Join("blob.bin");
  test::WriteFileOrDie(path, bytes);
  auto put = [&](const std::optional<Digest>& expected, int* maps) -> Result<PutResult> {
    KI_ASSIGN_OR_RETURN(auto base, Env::Default()->NewSequentialFile(path));
    CountingFile in(std::move(base));
    KI_ASSIGN_OR_RETURN(auto batch, store->NewBatch());
    KI_ASSIGN_OR_RETURN(PutResult r, batch->PutBlobStream(in, "application/octet-stream", "blob.bin", expected));
    KI_RETURN_IF_ERROR(batch->Commit());
    *maps = in.maps;
    return r;
  };
  int maps = -1;
  auto r = put(d, &maps);
  ASSERT_OK(r);
  EXPECT_EQ(r->digest, d);
  EXPECT_FALSE(r->existed);
  EXPECT_EQ(maps, 1);  // the frame pass only
  auto back = store->Read(d);
  ASSERT_OK(back);
  EXPECT_EQ(*back, bytes);
  r = put(d, &maps);
  ASSERT_OK(r);
  EXPECT_TRUE(r->existed);
  EXPECT_EQ(maps, 0);  // held: not read at all

  // Without a digest, a new file is read twice (hash first, then the frame).
  TempDir dir2;
  store = OpenStore(dir2.path());
  ASSERT_TRUE(store);
  r = put(std::nullopt, &maps);
  ASSERT_OK(r);
  EXPECT_EQ(maps, 2);

  // Changed since it was checked: refused, nothing stored, no scratch left.
  TempDir dir3;
  store = OpenStore(dir3.path());
  ASSERT_TRUE(store);
  const Digest other = Sha256Of("something else");
  r = put(other, &maps);
  ASSERT_TRUE(r.status().IsCorruption()) << r.status().ToString();
  EXPECT_NE(r.status().message().find("blob.bin hashes to " + d.str() + ", not the " + other.str()), std::string::npos)
      << r.status().message();
  ExpectEmptyAndClean(*store);
}

}  // namespace
}  // namespace ki
