// Blob readers and writers (ki/blob_stream.h): the store's own streams,
// which a push pulls uploads from and a pull downloads into.
#include "ki/blob_stream.h"

#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "odb/tables.h"
#include "testutil/fault_env.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

using test::TempDir;

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

class BlobStreamTest : public ::testing::Test {
 protected:
  void SetUp() override { Reopen(); }
  void Reopen(Env* env = nullptr) {
    store_.reset();
    StoreOptions o;
    o.env = env;
    auto s = Store::Init(dir_.path(), o);
    ASSERT_OK(s);
    store_ = std::move(s).value();
  }
  Digest Put(const std::string& bytes) {
    auto b = store_->NewBatch();
    EXPECT_OK(b);
    auto r = (*b)->PutBlob(bytes, "application/octet-stream");
    EXPECT_OK(r);
    EXPECT_OK((*b)->Commit());
    return r->digest;
  }
  // Everything a reader gives, `piece` bytes per Read; the first error
  // ends it (in *st).
  std::string ReadAll(BlobReader& r, size_t piece, Status* st) {
    std::string out, buf(piece, '\0');
    for (;;) {
      auto n = r.Read(buf.data(), buf.size());
      if (!n.ok()) {
        *st = n.status();
        return out;
      }
      if (*n == 0) break;
      out.append(buf.data(), *n);
    }
    *st = Status::OK();
    return out;
  }
  size_t Incoming() {
    std::error_code ec;
    size_t n = 0;
    for (auto it = std::filesystem::directory_iterator(odb::IncomingDir(store_->path()), ec);
         !ec && it != std::filesystem::directory_iterator(); ++it)
      ++n;
    return n;
  }
  std::string LoosePath(const Digest& d) { return odb::LoosePath(store_->path(), d); }

  TempDir dir_;
  std::unique_ptr<Store> store_;
};

// Compressed and raw loose objects and one kept in LMDB read back whole,
// whatever the size of the reads.
TEST_F(BlobStreamTest, ReadsEveryKindOfObjectBack) {
  for (const std::string& bytes : {Words(5 << 20, 1), Random(3 << 20, 2), Words(3000, 3), std::string()}) {
    const Digest d = Put(bytes);
    for (size_t piece : {size_t(1) << 20, size_t(7777), size_t(1)}) {
      if (piece == 1 && bytes.size() > (64 << 10)) continue;  // slow, and says nothing more
      auto r = OpenBlobReader(*store_, d);
      ASSERT_OK(r);
      EXPECT_EQ((*r)->size(), bytes.size());
      Status st;
      std::string got = ReadAll(**r, piece, &st);
      ASSERT_OK(st);
      EXPECT_TRUE(got == bytes) << bytes.size() << " bytes read in pieces of " << piece;
    }
  }
  auto none = OpenBlobReader(*store_, Sha256Of("not stored"));
  ASSERT_FALSE(none.ok());
  EXPECT_TRUE(none.status().IsNotFound()) << none.status().ToString();
}

// A loose object damaged where only its content hash can tell (a raw
// frame's byte flipped): the reader hands out a part of it (its last piece
// waits for the hash) and then fails, so an upload of it never completes.
TEST_F(BlobStreamTest, DamagedObjectNeverReachesItsEnd) {
  const std::string bytes = Random(2 << 20, 4);  // incompressible: stored raw
  const Digest d = Put(bytes);
  const std::string path = LoosePath(d);
  std::filesystem::permissions(path, std::filesystem::perms::owner_write, std::filesystem::perm_options::add);
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(-1000, std::ios::end);
    char c;
    f.read(&c, 1);
    f.seekp(-1000, std::ios::end);
    c ^= 1;
    f.write(&c, 1);
  }
  auto r = OpenBlobReader(*store_, d);
  ASSERT_OK(r);
  Status st;
  std::string got = ReadAll(**r, 1 << 16, &st);
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_NE(st.message().find(d.str()), std::string::npos) << st.ToString();
  EXPECT_LT(got.size(), bytes.size());
  EXPECT_TRUE(got == bytes.substr(0, got.size()));
  // And it stays failed.
  char c;
  EXPECT_FALSE((*r)->Read(&c, 1).ok());
}

// A compressed loose object cut short: Corruption, never a clean end.
TEST_F(BlobStreamTest, TruncatedObjectIsCorruption) {
  const std::string bytes = Words(4 << 20, 5);
  const Digest d = Put(bytes);
  const std::string path = LoosePath(d);
  std::filesystem::resize_file(path, std::filesystem::file_size(path) - 100);
  auto r = OpenBlobReader(*store_, d);
  ASSERT_OK(r);
  Status st;
  std::string got = ReadAll(**r, 1 << 20, &st);
  EXPECT_TRUE(st.IsCorruption()) << st.ToString();
  EXPECT_LT(got.size(), bytes.size());
}

// A writer's bytes stored through a batch: the digest of what was appended
// since the last Restart, nothing left in objects/incoming; and when the
// bytes do not hash to what the caller expected, nothing stored either.
TEST_F(BlobStreamTest, WriterStoresWhatWasAppendedAndLeavesNoScratch) {
  const std::string bytes = Words(3 << 20, 6);
  {
    auto w = OpenBlobWriter(*store_, "test input");
    ASSERT_OK(w);
    ASSERT_OK((*w)->Append("a false start"));
    EXPECT_EQ(Incoming(), 1u);
    ASSERT_OK((*w)->Restart());
    for (size_t i = 0; i < bytes.size(); i += 100000) ASSERT_OK((*w)->Append(std::string_view(bytes).substr(i, 100000)));
    EXPECT_EQ((*w)->size(), bytes.size());
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    auto r = (*w)->Finish(**b, "text/plain", Sha256Of(bytes));
    ASSERT_OK(r);
    EXPECT_EQ(r->digest, Sha256Of(bytes));
    EXPECT_EQ(Incoming(), 0u);
    ASSERT_OK((*b)->Commit());
  }
  auto back = store_->Read(Sha256Of(bytes));
  ASSERT_OK(back);
  EXPECT_TRUE(*back == bytes);

  const std::string other = Words(2 << 20, 7);
  {
    auto w = OpenBlobWriter(*store_, "test input");
    ASSERT_OK(w);
    ASSERT_OK((*w)->Append(other));
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    auto r = (*w)->Finish(**b, "text/plain", Sha256Of("something else"));
    ASSERT_FALSE(r.ok());
    EXPECT_TRUE(r.status().IsCorruption()) << r.status().ToString();
    EXPECT_EQ(Incoming(), 0u);
  }
  EXPECT_FALSE(store_->Stat(Sha256Of(other))->has_value());
  // A writer dropped before Finish leaves nothing either.
  {
    auto w = OpenBlobWriter(*store_, "test input");
    ASSERT_OK(w);
    ASSERT_OK((*w)->Append(other));
  }
  EXPECT_EQ(Incoming(), 0u);
}

// The writer's files go through the store's Env: a full disk fails the
// append, naming the scratch file, and nothing is left behind.
TEST_F(BlobStreamTest, WriterGoesThroughTheStoresEnv) {
  test::FaultInjectionEnv env;
  Reopen(&env);
  auto w = OpenBlobWriter(*store_, "test input");
  ASSERT_OK(w);
  env.SetWriteBudget(1000);
  Status st = (*w)->Append(Random(1 << 20, 8));
  if (st.ok()) {  // buffered: the failure surfaces at the commit
    auto b = store_->NewBatch();
    ASSERT_OK(b);
    st = (*w)->Finish(**b, "text/plain").status();
  }
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("No space left on device"), std::string::npos) << st.ToString();
  EXPECT_NE(st.message().find(std::string(odb::kIncomingDir) + "/"), std::string::npos) << st.ToString();
  w->reset();
  env.SetWriteBudget(-1);
  EXPECT_EQ(Incoming(), 0u);
}

// What a killed process left in objects/incoming (named after its pid) is
// removed by the next writer opened on the store; a live process's file
// and a file of no such name are not.
TEST_F(BlobStreamTest, FirstWriterRemovesWhatDeadProcessesLeft) {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  const std::string incoming = odb::IncomingDir(store_->path());
  std::filesystem::create_directories(incoming);
  const std::string dead = incoming + "/" + std::to_string(child) + "-3.part";
  const std::string live = incoming + "/" + std::to_string(::getppid()) + "-3.part";
  const std::string other = incoming + "/notes";
  for (const auto& p : {dead, live, other}) test::WriteFileOrDie(p, "left over");
  auto w = OpenBlobWriter(*store_, "test input");
  ASSERT_OK(w);
  EXPECT_FALSE(std::filesystem::exists(dead));
  EXPECT_TRUE(std::filesystem::exists(live));
  EXPECT_TRUE(std::filesystem::exists(other));
}

}  // namespace
}  // namespace ki
