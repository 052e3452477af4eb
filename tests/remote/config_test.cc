// Remote configuration (URLs, tags, credentials, remotes kept in the
// store) and RunParallel's last line of defence.
#include "remote/remote_fixture.h"

namespace ki {
namespace {

using namespace remote_test;

// RunParallel is the last line of defence: an exception out of a worker
// fails the run with a Status instead of calling std::terminate.
namespace {
class NoConn final : public remote::Conn {
 public:
  Result<bool> HasBlob(const Digest&, uint64_t) override { return false; }
  Status PutBlob(const Digest&, std::string_view) override { return Status::OK(); }
  Result<std::string> GetBlob(const Digest&, uint64_t) override { return Status::NotFound("none"); }
  Status PutBlobFrom(const Digest&, uint64_t, remote::BlobSource&) override { return Status::OK(); }
  Status GetBlobTo(const Digest&, uint64_t, remote::BlobSink&) override { return Status::NotFound("none"); }
  Result<remote::FetchedManifest> GetManifest(std::string_view) override { return Status::NotFound("none"); }
  Result<std::optional<Digest>> ResolveTag(std::string_view) override { return std::optional<Digest>(); }
  Status PutManifest(std::string_view, std::string_view, std::string_view, bool*) override { return Status::OK(); }
  Result<std::optional<std::string>> Referrers(const Digest&) override { return std::optional<std::string>(); }
};
class NoTarget final : public remote::Target {
 public:
  explicit NoTarget(bool throw_on_connect) : throw_(throw_on_connect) {}
  Result<std::unique_ptr<remote::Conn>> Connect() override {
    if (throw_) throw std::runtime_error("connect threw");
    return std::unique_ptr<remote::Conn>(new NoConn);
  }
  uint64_t requests() const override { return 0; }
  std::string describe() const override { return "none"; }
  Status Finish() override { return Status::OK(); }

 private:
  bool throw_;
};
}  // namespace

TEST(RunParallelTest, AWorkerThatThrowsFailsTheRunInsteadOfTheProcess) {
  NoTarget target(false);
  std::atomic<int> ran{0};
  Status st = remote::RunParallel(target, 4, 200, [&](remote::Conn&, size_t i) -> Status {
    ran++;
    if (i == 7) {
      const Json j = {{"mediaType", 5}};
      return Status::NotFound(j.value("mediaType", std::string()));  // throws type_error 302
    }
    return Status::OK();
  });
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.IsIOError()) << st.ToString();
  EXPECT_NE(st.message().find("internal error in a transfer worker"), std::string::npos) << st.ToString();
  EXPECT_LE(ran.load(), 200);
  NoTarget throwing(true);
  st = remote::RunParallel(throwing, 3, 10, [&](remote::Conn&, size_t) { return Status::OK(); });
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("connect threw"), std::string::npos) << st.ToString();
}

// ------------------------------------------------------------ config

TEST(RemoteConfigTest, UrlsTagsAndCredentials) {
  auto u = ParseRemoteUrl("oci://registry.example.com:5000/team/evidence", false);
  ASSERT_OK(u);
  EXPECT_EQ(u->host, "registry.example.com:5000");
  EXPECT_EQ(u->repository, "team/evidence");
  EXPECT_EQ(u->base(), "https://registry.example.com:5000");
  EXPECT_FALSE(ParseRemoteUrl("oci://registry.example.com/team", true).ok());  // http off loopback
  EXPECT_TRUE(ParseRemoteUrl("oci://127.0.0.1:5000/team", true).ok());
  EXPECT_TRUE(ParseRemoteUrl("oci://localhost/team", true).ok());
  EXPECT_FALSE(ParseRemoteUrl("oci://host/Team", false).ok());  // repository names are lower-case
  EXPECT_FALSE(ParseRemoteUrl("https://host/team", false).ok());
  EXPECT_FALSE(ParseRemoteUrl("oci://user@host/team", false).ok());
  EXPECT_FALSE(IsLoopbackHost("127.0.0.1.evil.com"));

  EXPECT_EQ(SanitizeTag("BenchmarkRun/a b:c"), "BenchmarkRun.a_b_c");
  EXPECT_EQ(SanitizeTag(".hidden"), "_hidden");
  std::string long_name = "BenchmarkRun/" + std::string(300, 'x');
  std::string t = SanitizeTag(long_name);
  EXPECT_EQ(t.size(), 128u);
  EXPECT_TRUE(IsValidTag(t));
  EXPECT_NE(t, SanitizeTag(long_name + "y"));

  auto c = CredentialsFromDockerConfig(R"({"auths":{"127.0.0.1:5000":{"auth":"dXNlcjpwYXNz"}}})", "127.0.0.1:5000");
  ASSERT_OK(c);
  EXPECT_EQ(c->username, "user");
  EXPECT_EQ(c->password, "pass");
  c = CredentialsFromDockerConfig(R"({"auths":{"https://ghcr.io":{"username":"u","password":"p"}}})", "ghcr.io");
  ASSERT_OK(c);
  EXPECT_EQ(c->username, "u");
  c = CredentialsFromDockerConfig(R"({"auths":{"other":{"auth":"dXNlcjpwYXNz"}}})", "ghcr.io");
  ASSERT_OK(c);
  EXPECT_TRUE(c->empty());
  EXPECT_FALSE(CredentialsFromDockerConfig(R"({"auths":{"h":{"auth":"!!"}}})", "h").ok());
}

TEST(RemoteConfigTest, RemotesAreKeptInTheStore) {
  TempDir dir;
  auto opened = Store::Init(dir.path());
  ASSERT_OK(opened);
  Store& s = **opened;
  ASSERT_OK(AddRemote(s, {"origin", "oci://127.0.0.1:5000/ki/x", true}));
  EXPECT_FALSE(AddRemote(s, {"origin", "oci://127.0.0.1:5000/ki/x", true}).ok());
  EXPECT_FALSE(AddRemote(s, {"bad/name", "oci://127.0.0.1:5000/ki/x", true}).ok());
  ASSERT_OK(AddRemote(s, {"usb", "oci-layout:/media/usb/ki", false}));
  auto list = ListRemotes(s);
  ASSERT_OK(list);
  ASSERT_EQ(list->size(), 2u);
  auto u = LookupRemote(s, "origin", false);
  ASSERT_OK(u);
  EXPECT_TRUE(u->insecure);
  ASSERT_OK(RemoveRemote(s, "origin"));
  EXPECT_TRUE(RemoveRemote(s, "origin").IsNotFound());
  EXPECT_TRUE(LookupRemote(s, "origin", false).status().IsNotFound());
}

}  // namespace
}  // namespace ki
