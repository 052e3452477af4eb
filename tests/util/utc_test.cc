// The UTC text forms of include/ki/utc.h, against values worked out by hand
// (and with `date -u -d @SECONDS`).
#include "ki/utc.h"

#include <chrono>
#include <regex>

#include "testutil/testutil.h"

namespace ki {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using std::chrono::system_clock;

TEST(Utc, EachFormOfOneInstant) {
  // 2026-12-01T23:30:05Z is 1796167805 s after the epoch.
  const system_clock::time_point t = system_clock::time_point(seconds(1796167805)) + milliseconds(123);
  EXPECT_EQ(UtcText(t), "2026-12-01T23:30:05Z");
  EXPECT_EQ(UtcText(t, UtcForm::kMillis), "2026-12-01T23:30:05.123Z");
  EXPECT_EQ(UtcText(t, UtcForm::kCompact), "20261201T233005Z");
  EXPECT_EQ(UtcText(int64_t{1796167805}), "2026-12-01T23:30:05Z");
}

TEST(Utc, EpochLeapDayAndTimesBefore1970) {
  EXPECT_EQ(UtcText(int64_t{0}), "1970-01-01T00:00:00Z");
  EXPECT_EQ(UtcText(int64_t{951782400}), "2000-02-29T00:00:00Z");
  // Half a second before the epoch is still in 1969's last second, and
  // its milliseconds count up from that second (floor, not truncation).
  EXPECT_EQ(UtcText(system_clock::time_point(milliseconds(-500)), UtcForm::kMillis), "1969-12-31T23:59:59.500Z");
  EXPECT_EQ(UtcText(int64_t{-1}), "1969-12-31T23:59:59Z");
}

TEST(Utc, NowHasTheFormAndIsCurrent) {
  const std::string a = UtcNow(UtcForm::kMillis);
  EXPECT_TRUE(std::regex_match(a, std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)"))) << a;
  const std::string before = UtcText(system_clock::now());
  const std::string b = UtcNow();
  // One form, fixed width: text order is time order.
  EXPECT_GE(b, before);
  EXPECT_LE(b, UtcText(system_clock::now()));
}

}  // namespace
}  // namespace ki
