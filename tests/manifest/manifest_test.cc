// Manifest parsing: envelope, schema errors, duration normalisation, input
// forms, references, limits.
#include <cctype>
#include <string>

#include "ki/manifest.h"
#include "testutil/testutil.h"

namespace ki {
namespace {

::testing::AssertionResult Contains(const std::string& text, const std::string& part) {
  if (text.find(part) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "\"" << text << "\" does not contain \"" << part << "\"";
}

std::string Example(const std::string& name) {
  return test::ReadFileOrDie(test::DataPath("kernelindex/examples/" + name));
}

std::string Err(std::string_view text, const ParseLimits& limits = {}) {
  auto r = ParseManifestInput(text, DocFormat::kAuto, "in", limits);
  if (r.ok()) return "";
  EXPECT_TRUE(r.status().IsInvalidInput()) << r.status().message();
  return r.status().message();
}

const char* kRunTemplate = R"(apiVersion: kernelindex.dev/v1alpha1
kind: BenchmarkRun
metadata:
  name: r
spec:
  implementationDigest: sha256:4444444444444444444444444444444444444444444444444444444444444444
  workloadDigest: sha256:1111111111111111111111111111111111111111111111111111111111111111
  protocolDigest: sha256:2222222222222222222222222222222222222222222222222222222222222222
  environmentDigest: sha256:3333333333333333333333333333333333333333333333333333333333333333
  status: passed
  timing:
    primaryStatistic: median
    latencyNs:
      median: MEDIAN
      confidence95: [LOW, 9 us]
  observedAt: 2026-08-01T12:00:00Z
)";

Result<Manifest> RunWithMedian(const std::string& median, const std::string& low = "8000") {
  std::string text = kRunTemplate;
  text.replace(text.find("MEDIAN"), 6, median);
  text.replace(text.find("LOW"), 3, low);
  KI_ASSIGN_OR_RETURN(ParsedInput in, ParseManifestInput(text, DocFormat::kYaml, "run.yaml"));
  return std::move(in.manifests.at(0));
}

TEST(Durations, BecomeIntegerNanoseconds) {
  const std::pair<const char*, uint64_t> kCases[] = {
      {"0.008 ms", 8000},   {"8 us", 8000},         {"8us", 8000},         {"8 µs", 8000},
      {"353049 ns", 353049}, {"1.5 s", 1500000000}, {"0.000000001 s", 1}, {"1.2340 us", 1234},
      {"\"8120\u00a0ns\"", 8120},  // ECMAScript \s includes no-break space
      {"8120", 8120},         {"8120.0", 8120},  // already a number (JS has one number type)
  };
  for (const auto& [text, ns] : kCases) {
    auto m = RunWithMedian(text);
    ASSERT_OK(m);
    const Json& v = m->spec["timing"]["latencyNs"]["median"];
    EXPECT_TRUE(v.is_number_integer() || v.is_number_float()) << text;
    EXPECT_EQ(v.get<double>(), static_cast<double>(ns)) << text;
    EXPECT_EQ(m->spec["timing"]["latencyNs"]["confidence95"][1], 9000) << text;
  }
  // The normalised forms hash alike.
  EXPECT_EQ(RunWithMedian("0.008 ms")->digest, RunWithMedian("8000")->digest);
  EXPECT_EQ(RunWithMedian("8 us")->digest, RunWithMedian("8000 ns")->digest);
  // Durations inside prefixItems are normalised too.
  EXPECT_EQ(RunWithMedian("8000", "7.5 us")->spec["timing"]["latencyNs"]["confidence95"][0], 7500);
}

TEST(Durations, RejectedWhenNotWholeOrMalformed) {
  for (const char* bad : {"0.0000005 ms", "1.2345 us", "0.5 ns", "0.0000000001 s"}) {
    auto m = RunWithMedian(bad);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_TRUE(Contains(m.status().message(), "is not a whole number of nanoseconds")) << bad;
    EXPECT_TRUE(Contains(m.status().message(), "/spec/timing/latencyNs/median")) << bad;
  }
  for (const char* bad : {"8 min", "-8 us", "8  us", ".5 us", "8. us", "8e3 ns", "fast", "-1", "8.5"}) {
    auto m = RunWithMedian(bad);
    EXPECT_FALSE(m.ok()) << bad;
  }
  auto huge = RunWithMedian("9007199254740992 ns");  // 2^53
  ASSERT_FALSE(huge.ok());
  EXPECT_TRUE(Contains(huge.status().message(), "2^53-1"));
  EXPECT_OK(RunWithMedian("9007199.254740991 s"));
}

TEST(Durations, ProtocolWarmupDuration) {
  std::string text = Example("benchmark-protocol.yaml");
  text.replace(text.find("    warmupIterations: 50\n"), 25, "    warmupDuration: 25 ms\n");
  auto in = ParseManifestInput(text, DocFormat::kYaml, "p");
  ASSERT_OK(in);
  EXPECT_EQ(in->manifests[0].spec["measurement"]["warmupDuration"], 25000000);
}

TEST(Envelope, Rejections) {
  std::string sp = Example("software-project.yaml");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = sp;
    size_t at = t.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    t.replace(at, from.size(), to);
    return t;
  };
  EXPECT_TRUE(Contains(Err(with("kind: SoftwareProject", "kind: SoftwareProjekt")),
                       "in: /kind: unknown kind \"SoftwareProjekt\""));
  EXPECT_TRUE(Contains(Err(with("kernelindex.dev/v1alpha1", "kernelindex.dev/v1")),
                       "in: /apiVersion: unsupported apiVersion \"kernelindex.dev/v1\""));
  EXPECT_TRUE(Contains(Err(with("apiVersion: kernelindex.dev/v1alpha1\n", "")), "/apiVersion: missing"));
  EXPECT_TRUE(Contains(Err(with("spec:\n  name: Meridian Kernels\n", "spec: 3\nx:\n  name: Meridian Kernels\n")),
                       "/spec: must be an object"));
  EXPECT_TRUE(Contains(Err("apiVersion: kernelindex.dev/v1alpha1\nkind: SoftwareProject\nspec: {name: x}\n"),
                       "/metadata: missing"));
  EXPECT_TRUE(Contains(Err("[1, 2]"), "a manifest must be an object"));
  EXPECT_TRUE(Contains(Err("# nothing\n"), "no manifest in the input"));
  // Metadata is checked by the schema too (strict: unknown fields rejected).
  EXPECT_TRUE(Contains(Err(with("  title:", "  colour: red\n  title:")), "/metadata/colour: unknown field"));
  EXPECT_TRUE(Contains(Err(with("name: meridian-kernels", "name: Meridian")), "/metadata/name: \"Meridian\" does not match"));
}

TEST(Schema, ErrorsNameTheJsonPointer) {
  std::string run = Example("benchmark-run.yaml");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = run;
    t.replace(t.find(from), from.size(), to);
    return Err(t);
  };
  EXPECT_TRUE(Contains(with("      mad: 24\n", "      mad: 24\n      spread: 3\n"),
                       "in: /spec/timing/latencyNs/spread: unknown field"));
  EXPECT_TRUE(Contains(with("status: passed", "status: great"), "/spec/status: \"great\" is not one of"));
  EXPECT_TRUE(Contains(with("matchedRatio: 1.0", "matchedRatio: 1.5"), "/spec/correctness/matchedRatio: 1.5 is greater than 1"));
  EXPECT_TRUE(Contains(with("samples: 200", "samples: 0"), "/spec/timing/samples: 0 must be greater than 0"));
  EXPECT_TRUE(Contains(with("samples: 200", "samples: \"200\""), "/spec/timing/samples: expected integer, got string"));
  EXPECT_TRUE(Contains(with("confidence95: [8095, 8151]", "confidence95: [8095, -1]"),
                       "/spec/timing/latencyNs/confidence95/1"));
  EXPECT_TRUE(Contains(with("observedAt: 2026-08-01T12:00:00Z", "observedAt: 2026-02-30T12:00:00Z"),
                       "/spec/observedAt"));
  EXPECT_TRUE(Contains(with("  status: passed\n", ""), "/spec: missing required field \"status\""));
  // An integral float is an integer (ECMAScript has one number type).
  EXPECT_EQ(with("samples: 200", "samples: 200.0"), "");
  EXPECT_TRUE(Contains(with("samples: 200", "samples: 200.5"), "expected integer, got number"));
}

TEST(Schema, OperationShapesAndMinItems) {
  std::string op = Example("operation-spec.yaml");
  auto with = [&](const std::string& from, const std::string& to) {
    std::string t = op;
    t.replace(t.find(from), from.size(), to);
    return Err(t);
  };
  EXPECT_TRUE(Contains(with("shape: [hidden]", "shape: []"), "/spec/inputs/1/tensor/shape: needs at least 1 items"));
  EXPECT_TRUE(Contains(with("shape: [hidden]", "shape: [Hidden]"), "/spec/inputs/1/tensor/shape/0"));
  EXPECT_EQ(with("shape: [hidden]", "shape: [4096]"), "");
}

TEST(Input, JsonNanAndInfinity) {
  std::string sp = R"({"apiVersion":"kernelindex.dev/v1alpha1","kind":"ModelRevision","metadata":{"name":"m"},
    "spec":{"model":"x","parameterCount":NaN}})";
  EXPECT_TRUE(Contains(Err(sp), "in:2:"));
  std::string inf = R"({"apiVersion":"kernelindex.dev/v1alpha1","kind":"ModelRevision","metadata":{"name":"m"},"spec":{"model":"x","parameterCount":1e999}})";
  EXPECT_TRUE(Contains(Err(inf), "Infinity"));
  EXPECT_TRUE(Contains(Err("apiVersion: kernelindex.dev/v1alpha1\nkind: ModelRevision\nmetadata: {name: m}\n"
                           "spec: {model: x, parameterCount: .inf}\n"),
                       "in:4:"));
}

TEST(Input, DuplicateKeysJsonAndYaml) {
  EXPECT_TRUE(Contains(Err("{\"apiVersion\":\"kernelindex.dev/v1alpha1\",\n\"kind\":\"SoftwareProject\",\n"
                           "\"metadata\":{\"name\":\"p\"},\"spec\":{\"name\":\"a\",\n  \"name\":\"b\"}}"),
                       "in:4:3: duplicate key \"name\""));
  EXPECT_TRUE(Contains(Err("apiVersion: kernelindex.dev/v1alpha1\nkind: SoftwareProject\nkind: SoftwareProject\n"),
                       "in:3:1: duplicate key \"kind\""));
}

TEST(Input, MalformedWithLineAndColumn) {
  EXPECT_TRUE(Contains(Err("{\"apiVersion\": \"kernelindex.dev/v1alpha1\",\n  \"kind\" \"SoftwareProject\"}"), "in:2:26: syntax error"));
  std::string y = Err("apiVersion: kernelindex.dev/v1alpha1\nkind: [SoftwareProject\nspec: {}\n");
  EXPECT_TRUE(Contains(y, "in:3:")) << y;
}

TEST(Input, LimitsSizeDepthAliases) {
  std::string big = Example("software-project.yaml") + "# " + std::string(1 << 20, 'x') + "\n";
  EXPECT_TRUE(Contains(Err(big), "over the limit of 1048576"));

  std::string deep = "{\"apiVersion\":\"kernelindex.dev/v1alpha1\",\"kind\":\"ServingConfiguration\",\"metadata\":{\"name\":\"c\"},\"spec\":";
  for (int i = 0; i < 80; ++i) deep += "{\"a\":";
  deep += "1";
  for (int i = 0; i < 81; ++i) deep += "}";
  EXPECT_TRUE(Contains(Err(deep), "nesting deeper than 64"));

  // Billion laughs nested under a manifest: stopped while parsing, long
  // before memory is at risk.
  std::string doc = "apiVersion: kernelindex.dev/v1alpha1\nkind: SoftwareProject\nmetadata: {name: p}\n";
  doc += "spec:\n  name: x\njunk:\n  a0: &a0 [z, z, z, z, z, z, z, z, z, z]\n";
  for (int i = 1; i < 8; ++i) {
    std::string prev = "*a";
    prev += std::to_string(i - 1);
    doc += "  a";
    doc += std::to_string(i);
    doc += ": &a";
    doc += std::to_string(i);
    doc += " [";
    for (int k = 0; k < 10; ++k) {
      if (k) doc += ", ";
      doc += prev;
    }
    doc += "]\n";
  }
  ParseLimits limits;
  limits.max_yaml_nodes = 100000;
  EXPECT_TRUE(Contains(Err(doc, limits), "alias bomb"));
}

TEST(Input, MultiDocumentYaml) {
  std::string text = Example("operation-spec.yaml") + "---\n" + Example("workload-case.yaml") + "---\n" +
                     Example("software-project.yaml") + "---\n";
  auto in = ParseManifestInput(text, DocFormat::kAuto, "many.yaml");
  ASSERT_OK(in);
  EXPECT_EQ(in->form, InputForm::kMultiDocument);
  ASSERT_EQ(in->manifests.size(), 3u);
  EXPECT_EQ(in->manifests[0].digest.str(), "sha256:7a3b25630f0628b21ed74b6adb588d28f7e29191f9038bed6f56ed393deefb5b");
  EXPECT_EQ(in->manifests[1].digest.str(), "sha256:944ceb3a7d7d4a4c47f1f8ed239363f4be78a2a90293b4325fb18a274cf97aa3");
  EXPECT_EQ(in->manifests[2].kind, Kind::kSoftwareProject);
  EXPECT_EQ(in->documents[1]["metadata"]["name"], "rmsnorm-h4096-tokens-2048");
  // An error names the document.
  std::string bad = Example("operation-spec.yaml") + "---\n" + Example("invalid/unknown-field.yaml");
  EXPECT_TRUE(Contains(Err(bad), "in: document 2: /spec/popularity: unknown field"));
}

TEST(References, RunAndArtifacts) {
  auto in = ParseManifestInput(
      test::ReadFileOrDie(test::DataPath("kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json")),
      DocFormat::kAuto, "seed");
  ASSERT_OK(in);
  auto refs = ExtractReferences(in->manifests[0]);
  std::map<std::string, Reference> by_field;
  for (const auto& r : refs) by_field[r.field] = r;
  ASSERT_EQ(by_field.size(), 5u);
  EXPECT_EQ(by_field["/spec/protocolDigest"].target, in->manifests[1].digest);
  EXPECT_EQ(by_field["/spec/environmentDigest"].target, in->manifests[2].digest);
  EXPECT_EQ(by_field["/spec/workloadDigest"].target.str(), "sha256:fcf16458148fc0adb1372367ac83b468de3af7a4009854a2980b9096ec1e0088");
  EXPECT_EQ(by_field["/spec/implementationDigest"].target.str(), "sha256:9065668f65f0c70486702b4d7105d2a2da70e1aebd03314d68ffce9743ed081e");
  const Reference& log = by_field["/spec/evidence/logs/digest"];
  EXPECT_EQ(log.target.str(), "sha256:7e90ce0aebbdc3c556c70bd8bc23755a6ced33f9edacfdd06be74d2c2515a872");
  EXPECT_EQ(log.uri, "kernelindex:artifact/sha256:7e90ce0aebbdc3c556c70bd8bc23755a6ced33f9edacfdd06be74d2c2515a872");
  EXPECT_TRUE(by_field["/spec/protocolDigest"].uri.empty());
  EXPECT_TRUE(ExtractReferences(in->manifests[1]).empty());
}

TEST(References, ImplementationSourceAndOperation) {
  auto in = ParseManifestInput(Example("implementation-revision.yaml"), DocFormat::kAuto, "impl");
  ASSERT_OK(in);
  auto refs = ExtractReferences(in->manifests[0]);
  ASSERT_EQ(refs.size(), 2u);
  EXPECT_EQ(refs[0].field, "/spec/operation/specDigest");
  EXPECT_EQ(refs[0].target.str(), "sha256:7a3b25630f0628b21ed74b6adb588d28f7e29191f9038bed6f56ed393deefb5b");
  EXPECT_EQ(refs[1].field, "/spec/source/contentDigest");
  auto wl = ParseManifestInput(Example("workload-suite.yaml"), DocFormat::kAuto, "suite");
  ASSERT_OK(wl);
  auto wrefs = ExtractReferences(wl->manifests[0]);
  ASSERT_EQ(wrefs.size(), 1u);
  EXPECT_EQ(wrefs[0].field, "/spec/operationSpecDigest");
}

TEST(Canonical, RoundTripAndStrictness) {
  auto in = ParseManifestInput(Example("workload-case.yaml"), DocFormat::kAuto, "wc");
  ASSERT_OK(in);
  const Manifest& m = in->manifests[0];
  auto back = ManifestFromCanonical(m.canonical, "stored");
  ASSERT_OK(back);
  EXPECT_EQ(back->digest, m.digest);
  EXPECT_EQ(back->spec, m.spec);
  EXPECT_EQ(back->canonical, m.canonical);
  EXPECT_TRUE(back->name().empty());
  // Same content, not canonical bytes.
  std::string spaced = m.canonical;
  spaced.insert(1, " ");
  EXPECT_FALSE(ManifestFromCanonical(spaced, "stored").ok());
  // Metadata has no place in a stored manifest.
  std::string with_meta = m.canonical;
  with_meta.insert(with_meta.find("\"spec\""), "\"metadata\":{},");
  EXPECT_FALSE(ManifestFromCanonical(with_meta, "stored").ok());
  // Canonical bytes must still satisfy the schema.
  auto bogus = ManifestFromCanonical(
      R"({"apiVersion":"kernelindex.dev/v1alpha1","kind":"SoftwareProject","spec":{"popularity":9001}})", "stored");
  ASSERT_FALSE(bogus.ok());
  EXPECT_TRUE(Contains(bogus.status().message(), "/spec"));
}

TEST(Kinds, NamesRoundTrip) {
  EXPECT_EQ(AllKinds().size(), 13u);
  for (Kind k : AllKinds()) {
    auto back = ParseKind(KindName(k));
    ASSERT_TRUE(back.has_value());
    EXPECT_EQ(*back, k);
  }
  EXPECT_FALSE(ParseKind("benchmarkrun").has_value());
  EXPECT_EQ(static_cast<int>(Kind::kBenchmarkRun), 8);  // persisted: never renumber
}

// How a user names a kind (a REF's <Kind>/<name>, ki ls --kind): any
// capitalisation, nothing more.
TEST(Kinds, AnyCaseIsHowUsersNameThem) {
  for (Kind k : AllKinds()) {
    std::string lower(KindName(k)), upper(KindName(k));
    for (auto& c : lower) c = char(std::tolower(static_cast<unsigned char>(c)));
    for (auto& c : upper) c = char(std::toupper(static_cast<unsigned char>(c)));
    EXPECT_EQ(ParseKindAnyCase(KindName(k)), k);
    EXPECT_EQ(ParseKindAnyCase(lower), k) << lower;
    EXPECT_EQ(ParseKindAnyCase(upper), k) << upper;
  }
  for (const char* bad : {"", "benchmarkruns", "benchmark-run", "BenchmarkRu", "blob"})
    EXPECT_FALSE(ParseKindAnyCase(bad).has_value()) << bad;
}

}  // namespace
}  // namespace ki
