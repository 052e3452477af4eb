// The schema pattern matcher (src/manifest/pattern.h): ECMAScript answers on
// the schemas' patterns, and bounded stack and time on hostile subjects
// (issue 18 item 1: a date-time of 100,000 fraction digits crashed std::regex).
#include <chrono>
#include <string>

#include "manifest/pattern.h"
#include "testutil/testutil.h"

namespace ki::schema {
namespace {

constexpr const char* kDateTime =
    "^(?:(?:\\d\\d[2468][048]|\\d\\d[13579][26]|\\d\\d0[48]|[02468][048]00|[13579][26]00)-02-29|\\d{4}-(?:(?:0[13578]|"
    "1[02])-(?:0[1-9]|[12]\\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\\d|30)|(?:02)-(?:0[1-9]|1\\d|2[0-8])))T(?:(?:[01]"
    "\\d|2[0-3]):[0-5]\\d(?::[0-5]\\d(?:\\.\\d+)?)?(?:Z))$";

std::unique_ptr<Pattern> P(const std::string& src) {
  auto p = Pattern::Compile(src);
  EXPECT_TRUE(p.ok()) << src << ": " << p.status().message();
  return p.ok() ? std::move(p).value() : nullptr;
}

TEST(Pattern, DateTime) {
  auto p = P(kDateTime);
  ASSERT_TRUE(p);
  for (const char* ok : {"2026-08-01T12:00:00Z", "2025-10-16T01:25:11.078Z", "2024-02-29T00:00Z", "2000-02-29T23:59Z",
                         "1999-12-31T23:59:59.123456789Z"})
    EXPECT_TRUE(p->Matches(ok)) << ok;
  for (const char* bad : {"2026-08-01", "2023-02-29T00:00Z", "1900-02-29T00:00Z", "2026-13-01T00:00Z",
                          "2026-04-31T00:00Z", "2026-08-01T24:00Z", "2026-08-01T12:00:00.Z", "2026-08-01T12:00:00",
                          " 2026-08-01T12:00:00Z", "2026-08-01T12:00:00Zx", ""})
    EXPECT_FALSE(p->Matches(bad)) << bad;
}

TEST(Pattern, HugeFractionIsLinear) {
  auto p = P(kDateTime);
  ASSERT_TRUE(p);
  for (size_t digits : {100000u, 900000u}) {
    std::string s = "2026-08-01T12:00:00." + std::string(digits, '7') + "Z";
    auto t0 = std::chrono::steady_clock::now();
    EXPECT_TRUE(p->Matches(s));
    s.back() = 'x';
    EXPECT_FALSE(p->Matches(s));
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    EXPECT_LT(secs, 5.0) << digits << " digits";
  }
}

TEST(Pattern, SchemaPatterns) {
  struct Case {
    const char* pattern;
    std::vector<const char*> yes, no;
  };
  const Case kCases[] = {
      {"^[a-z][a-z0-9_]*$", {"a", "gqa_paged_decode", "x9"}, {"", "9a", "aB", "a-b", "a\n"}},
      {"^[a-z0-9][a-z0-9._-]*$", {"v1.2-rc_3", "0"}, {"-a", ".a", "a b", "A"}},
      {"^[0-9a-f]{40}$", {"0123456789abcdef0123456789abcdef01234567"}, {"0123456789abcdef0123456789abcdef0123456", "g"}},
      {"^sha256:[0-9a-f]{64}$", {"sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
       {"sha256:E3B0", "sha512:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"}},
      {"^[a-z0-9_+\\-*%/() ]+$", {"a + b", "(x*2)%3/y-z"}, {"", "a=b", "A"}},
      {"^\\d+(\\.\\d+)?\\s?(ns|us|µs|ms|s)$",
       {"8 us", "8us", "8 µs", "1.5 s", "8120\u00a0ns", "0.008 ms", "8\u3000ns"},
       {"8", "8  us", ".5 s", "8 ks", "8 \u00b5", "1.s"}},
      // Unanchored, alternation, negation, counted repeats, lazy forms.
      {"b+", {"abba", "b"}, {"", "aaa"}},
      {"^(?:cat|dog)s?$", {"cat", "dogs"}, {"cats!", "do"}},
      {"^[^0-9]{2,3}$", {"ab", "é€x"}, {"a", "abcd", "a1"}},
      {"^a.c$", {"abc", "aéc"}, {"ac", "a\nc", "abbc"}},
      {"^(ab)*?c{0,2}$", {"", "ababcc", "c"}, {"abcccc", "ba"}},
      {"^\\w+\\W\\D$", {"ab_9 x"}, {"ab 9"}},
      {"^x{3,}$", {"xxx", "xxxxxx"}, {"xx"}},
      {"^[\\s]$", {" ", "\u2028"}, {"x"}},
      {"^\\u00e9\\x41$", {"éA"}, {"eA"}},
  };
  for (const Case& c : kCases) {
    auto p = P(c.pattern);
    ASSERT_TRUE(p) << c.pattern;
    for (const char* y : c.yes) EXPECT_TRUE(p->Matches(y)) << c.pattern << " vs " << y;
    for (const char* n : c.no) EXPECT_FALSE(p->Matches(n)) << c.pattern << " vs " << n;
  }
}

TEST(Pattern, PathologicalPatternsStayLinear) {
  // Exponential for a backtracker: (a|a)*b, (a*)*b against a^n.
  for (const char* src : {"^(a|a)*b$", "^(a*)*b$", "^(a+)+$", "(x+x+)+y"}) {
    auto p = P(src);
    ASSERT_TRUE(p);
    std::string s(200000, src[0] == '(' ? 'x' : 'a');
    auto t0 = std::chrono::steady_clock::now();
    (void)p->Matches(s);
    EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0) << src;
  }
}

// The DFA (used for every schema pattern) and the NFA simulation agree, on
// strings made of the bytes the patterns care about.
TEST(Pattern, DfaAgreesWithNfa) {
  const std::vector<std::string> patterns = {
      kDateTime, "^[a-z][a-z0-9_]*$", "^[a-z0-9][a-z0-9._-]*$", "^sha256:[0-9a-f]{64}$",
      "^\\d+(\\.\\d+)?\\s?(ns|us|µs|ms|s)$", "b+", "^(?:cat|dog)s?$", "^[^0-9]{2,3}$", "a$", "^$|x", "(a|ab)(c|bcd)d"};
  const std::string alphabet[] = {"0", "2", "9", "a", "b", "c", "d", "s", "x", "_", "-", ".", ":", " ", "T", "Z", "\u00b5",
                                  "\u00a0", "\n"};
  uint64_t rng = 88172645463325252ull;
  for (const auto& src : patterns) {
    auto p = P(src);
    ASSERT_TRUE(p);
    EXPECT_TRUE(p->has_dfa()) << src;
    for (int i = 0; i < 3000; ++i) {
      std::string s;
      rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
      int len = int(rng % 24);
      for (int k = 0; k < len; ++k) {
        rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
        s += alphabet[rng % std::size(alphabet)];
      }
      if (i % 7 == 0) s = "2026-08-01T12:00:00." + s + "Z";
      EXPECT_EQ(p->Matches(s), p->MatchesWithoutDfa(s)) << src << " vs '" << s << "'";
    }
  }
}

TEST(Pattern, UnsupportedSyntaxFailsToCompile) {
  for (const char* bad : {"(?=a)", "(?!a)", "(?<n>a)", "\\1", "\\b", "\\S", "[é]", "[^\\s]", "a{2", "a{3,1}", "a**",
                          "*a", "(a", "a)", "[a", "\\", "a{1001}", "(?:a{1000}){1000}", "[z-a]", "\\p{L}"}) {
    auto p = Pattern::Compile(bad);
    EXPECT_FALSE(p.ok()) << bad;
  }
}

}  // namespace
}  // namespace ki::schema
