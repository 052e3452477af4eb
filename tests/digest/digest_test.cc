#include "ki/digest.h"

#include "testutil/testutil.h"

namespace ki {
namespace {

TEST(Digest, KnownVectors) {
  // FIPS 180-2 test vectors.
  EXPECT_EQ(Sha256Of("abc").str(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Sha256Of("").hex(), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  Sha256 h;
  h.Update("a");
  h.Update("bc");
  EXPECT_EQ(h.Finish(), Sha256Of("abc"));
  // The hasher is reusable after Finish.
  h.Update("abc");
  EXPECT_EQ(h.Finish(), Sha256Of("abc"));
}

TEST(Digest, ParseRoundTrip) {
  std::string s = "sha256:7d44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec02095";
  auto d = Digest::Parse(s);
  ASSERT_OK(d);
  EXPECT_EQ(d->str(), s);
  EXPECT_EQ(Digest::FromRaw(d->raw()), *d);
}

TEST(Digest, RejectsNonCanonicalText) {
  for (std::string bad : {
           "sha256:7D44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec02095",  // upper case
           "sha256:7d44",                                                              // short
           "md5:abc123",                                                               // other algorithm
           "7d44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec02095",         // no prefix
           "sha256:7d44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec020950",  // long
           "sha256:7d44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec0209g",   // not hex
       }) {
    auto d = Digest::Parse(bad);
    EXPECT_FALSE(d.ok()) << bad;
    EXPECT_TRUE(d.status().IsInvalidInput());
  }
}

TEST(Status, ExitCodesFollowTheTable) {
  EXPECT_EQ(Status::OK().ExitCode(), 0);
  EXPECT_EQ(Status::Corruption("x").ExitCode(), 1);
  EXPECT_EQ(Status::VerifyFailed("x").ExitCode(), 1);
  EXPECT_EQ(Status::Usage("x").ExitCode(), 2);
  EXPECT_EQ(Status::NotFound("x").ExitCode(), 3);
  EXPECT_EQ(Status::Ambiguous("x").ExitCode(), 3);
  EXPECT_EQ(Status::InvalidInput("x").ExitCode(), 4);
  EXPECT_EQ(Status::IOError("x").ExitCode(), 5);
  EXPECT_EQ(Status::IOError("disk").WithContext("adding a.json").message(), "adding a.json: disk");
}

}  // namespace
}  // namespace ki
