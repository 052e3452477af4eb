// Manifest identity against KernelIndex's published values: the pinned
// digests of docs/identity.md, the registry examples, the seed bundle and
// every manifest-carrying row of the catalog export slice.
#include <fstream>
#include <map>
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

const char* kSeed = "kernelindex/fixtures/gpt-o3_cuda_5548d0.gqa_paged_decode_h32_kv4_d128_ps1.manifest.json";

Result<Manifest> FromFile(const std::string& rel) {
  std::string text = test::ReadFileOrDie(test::DataPath(rel));
  KI_ASSIGN_OR_RETURN(ParsedInput in, ParseManifestInput(text, DocFormat::kAuto, rel));
  if (in.manifests.size() != 1) return Status::InvalidInput("expected one manifest");
  return std::move(in.manifests[0]);
}

// Pinned: the identity body of a SoftwareProject, given directly.
TEST(Identity, PinnedSoftwareProjectBody) {
  const std::string body =
      R"({"apiVersion":"kernelindex.dev/v1alpha1","kind":"SoftwareProject","spec":{"name":"Vector Project","repository":"https://example.invalid/vector/project"}})";
  const std::string want = "sha256:bea60af06f12216679b113d6624c5293d59bef2104ccc27cd33c992d124e039d";
  auto canon = ManifestFromCanonical(body, "body");
  ASSERT_OK(canon);
  EXPECT_EQ(canon->digest.str(), want);
  EXPECT_EQ(canon->kind, Kind::kSoftwareProject);
  EXPECT_TRUE(canon->metadata.is_null());
  // The same project as a full manifest, in another key order and with
  // metadata: metadata is never hashed.
  auto doc = ParseDocument(R"({"spec": {"repository": "https://example.invalid/vector/project", "name": "Vector Project"},
    "metadata": {"name": "vector", "title": "anything"}, "kind": "SoftwareProject",
    "apiVersion": "kernelindex.dev/v1alpha1"})",
                           DocFormat::kJson, "doc");
  ASSERT_OK(doc);
  auto m = ManifestFromJson(*doc, "doc");
  ASSERT_OK(m);
  EXPECT_EQ(m->digest.str(), want);
  EXPECT_EQ(m->canonical, body);
  EXPECT_EQ(m->name(), "vector");
}

// Every registry example gets the digest KernelIndex gives it. Four are
// pinned in the identity rules; the others are cross-checked by the digests
// the examples name each other by (the run names implementation, workload,
// protocol and environment; the serving run names model, configuration and
// workload; the configuration names the stack; workload and suite name the
// operation), and the remaining three (software-project, workload-suite,
// serving-run) by an independent RFC 8785 implementation.
TEST(Identity, RegistryExamples) {
  const std::map<std::string, std::string> kWant = {
      {"benchmark-protocol.yaml", "sha256:6ac212f99724757d058e7a7f440314debd2fed235c5178bc006b62c0d5e0d295"},
      {"benchmark-run.yaml", "sha256:86d80418deb06f8f6cf44a6b3de9a6b578966773689c18e6c84d44c128207394"},
      {"execution-environment.yaml", "sha256:46cf7b24b586c71505152d0103b9e84101de1ac5b66cdd76aabc88356e93db79"},
      {"implementation-revision.yaml", "sha256:c560b43111f315d75a81c1cf194c827b1c294110fe5b20ad2d4467c09c24809e"},
      {"model-revision.yaml", "sha256:a8bee6f772dc4b4c35b199f27fe3e40f7b3b2266dc57e0da432a047a5d52e22d"},
      {"operation-spec.yaml", "sha256:7a3b25630f0628b21ed74b6adb588d28f7e29191f9038bed6f56ed393deefb5b"},
      {"serving-configuration.yaml", "sha256:8951b4b4c5edbcb2708cacf29f9936bdbc18584aae204ea710c30921c060a5ea"},
      {"serving-run.yaml", "sha256:717ee7e47dd85b4585c148a4689890d5b821afdb86070e2e7f99fae6b9abd920"},
      {"serving-stack-revision.yaml", "sha256:f00ca9e39835e6c1fa6e95d16904fbf633492ea3c61c63774943f0d83fb10717"},
      {"serving-workload.yaml", "sha256:48d84537ce32c83fade011934806f89f1585710e0235921a168a7fed96bb880d"},
      {"software-project.yaml", "sha256:40ac06efff5c790b2b3d853bc207f985a23e677b17c8e3d3b73fb1db32525a09"},
      {"workload-case.yaml", "sha256:944ceb3a7d7d4a4c47f1f8ed239363f4be78a2a90293b4325fb18a274cf97aa3"},
      {"workload-suite.yaml", "sha256:e6768c8169e748b3e3bd18845be0191e45135689a0381af307e1852f867a255d"},
  };
  std::map<std::string, std::string> got;
  for (const auto& [file, want] : kWant) {
    auto m = FromFile("kernelindex/examples/" + file);
    ASSERT_OK(m);
    EXPECT_EQ(m->digest.str(), want) << file;
    EXPECT_EQ(Sha256Of(m->canonical), m->digest) << file;
    got[file] = m->digest.str();
  }
  // The cross-references inside the examples agree with the computed digests.
  auto run = FromFile("kernelindex/examples/benchmark-run.yaml");
  ASSERT_OK(run);
  EXPECT_EQ(run->spec["implementationDigest"], got["implementation-revision.yaml"]);
  EXPECT_EQ(run->spec["workloadDigest"], got["workload-case.yaml"]);
  EXPECT_EQ(run->spec["protocolDigest"], got["benchmark-protocol.yaml"]);
  EXPECT_EQ(run->spec["environmentDigest"], got["execution-environment.yaml"]);
  auto srun = FromFile("kernelindex/examples/serving-run.yaml");
  ASSERT_OK(srun);
  EXPECT_EQ(srun->spec["modelDigest"], got["model-revision.yaml"]);
  EXPECT_EQ(srun->spec["configurationDigest"], got["serving-configuration.yaml"]);
  EXPECT_EQ(srun->spec["workloadDigest"], got["serving-workload.yaml"]);
}

TEST(Identity, PinnedExamples) {
  struct Case {
    const char* file;
    const char* digest;
  } kCases[] = {
      {"operation-spec.yaml", "sha256:7a3b25630f0628b21ed74b6adb588d28f7e29191f9038bed6f56ed393deefb5b"},
      {"implementation-revision.yaml", "sha256:c560b43111f315d75a81c1cf194c827b1c294110fe5b20ad2d4467c09c24809e"},
      {"benchmark-run.yaml", "sha256:86d80418deb06f8f6cf44a6b3de9a6b578966773689c18e6c84d44c128207394"},
  };
  for (const auto& c : kCases) {
    auto m = FromFile(std::string("kernelindex/examples/") + c.file);
    ASSERT_OK(m);
    EXPECT_EQ(m->digest.str(), c.digest) << c.file;
  }
}

// Without the set normalisation the implementation hashes to 9048d56c...
TEST(Identity, ImplementationNeedsSetNormalisation) {
  auto doc = ParseDocument(Example("implementation-revision.yaml"), DocFormat::kYaml, "impl");
  ASSERT_OK(doc);
  Json body = {{"apiVersion", (*doc)["apiVersion"]}, {"kind", (*doc)["kind"]}, {"spec", (*doc)["spec"]}};
  auto raw = Canonicalize(body);
  ASSERT_OK(raw);
  EXPECT_EQ(Sha256Of(*raw).str().substr(0, 15), "sha256:9048d56c");
  auto m = ManifestFromJson(*doc, "impl");
  ASSERT_OK(m);
  EXPECT_EQ(m->digest.str(), "sha256:c560b43111f315d75a81c1cf194c827b1c294110fe5b20ad2d4467c09c24809e");
  // Sorted and de-duplicated: repeating and reordering changes nothing.
  Json shuffled = *doc;
  auto& axes = shuffled["spec"]["support"]["axes"];
  axes = Json::array({"tokens >= 1", "hidden == 4096", "tokens >= 1"});
  auto m2 = ManifestFromJson(shuffled, "impl2");
  ASSERT_OK(m2);
  EXPECT_EQ(m2->digest, m->digest);
  EXPECT_EQ(m2->spec["support"]["axes"], Json::array({"hidden == 4096", "tokens >= 1"}));
}

TEST(Identity, InvalidExamplesRejectedForTheirReason) {
  const std::map<std::string, std::string> kWhy = {
      {"ambiguous-duration.yaml", "/spec/timing/latencyNs/median: \"0.0000005 ms\" is not a whole number of nanoseconds"},
      {"bad-digest.yaml", "/spec/operationSpecDigest: \"md5:abc123\" does not match pattern"},
      {"duplicate-key.yaml", ":8:3: duplicate key \"name\""},
      {"unknown-field.yaml", "/spec/popularity: unknown field \"popularity\""},
  };
  for (const auto& [file, why] : kWhy) {
    std::string rel = "kernelindex/examples/invalid/" + file;
    auto r = ParseManifestInput(test::ReadFileOrDie(test::DataPath(rel)), DocFormat::kAuto, rel);
    ASSERT_FALSE(r.ok()) << file;
    EXPECT_TRUE(r.status().IsInvalidInput()) << file;
    EXPECT_TRUE(Contains(r.status().message(), why)) << file;
    EXPECT_TRUE(Contains(r.status().message(), rel)) << file;
  }
}

TEST(Identity, SeedBundleSplits) {
  std::string text = test::ReadFileOrDie(test::DataPath(kSeed));
  auto in = ParseManifestInput(text, DocFormat::kAuto, "seed");
  ASSERT_OK(in);
  EXPECT_EQ(in->form, InputForm::kBundle);
  ASSERT_EQ(in->manifests.size(), 3u);
  ASSERT_EQ(in->documents.size(), 3u);
  EXPECT_EQ(in->manifests[0].kind, Kind::kBenchmarkRun);
  EXPECT_EQ(in->manifests[1].kind, Kind::kBenchmarkProtocol);
  EXPECT_EQ(in->manifests[2].kind, Kind::kExecutionEnvironment);
  EXPECT_EQ(in->manifests[1].digest.str(), "sha256:7d44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec02095");
  EXPECT_EQ(in->manifests[2].digest.str(), "sha256:f4292a8be127b7230cd3995c1d605fb6c644e2c2f94566e1d28cc1be766ca5d5");
  EXPECT_EQ(in->manifests[0].spec["protocolDigest"], in->manifests[1].digest.str());
  EXPECT_EQ(in->manifests[0].spec["environmentDigest"], in->manifests[2].digest.str());
  EXPECT_EQ(in->manifests[0].name(), "sol-trace-gqa-paged-decode-h32-kv4-d128-ps1-27ef153a");
  EXPECT_EQ(in->documents[1]["metadata"]["name"], "flashinfer-bench-trace");
}

TEST(Identity, BundleWithMismatchedDigestNamesBoth) {
  auto doc = ParseDocument(test::ReadFileOrDie(test::DataPath(kSeed)), DocFormat::kJson, "seed");
  ASSERT_OK(doc);
  Json changed = *doc;
  changed["protocol"]["spec"]["measurement"]["primaryStatistic"] = "median";
  auto actual = ManifestFromJson(changed["protocol"], "p");
  ASSERT_OK(actual);
  auto r = ParseManifestInput(changed.dump(), DocFormat::kJson, "bundle.json");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput());
  const std::string& msg = r.status().message();
  EXPECT_TRUE(Contains(msg, "bundle.json: /run/spec/protocolDigest"));
  EXPECT_TRUE(Contains(msg, "sha256:7d44d206ad086b4bece35ce31f6531ebb11f07e0d9dcfb74c75be86d3ec02095"));
  EXPECT_TRUE(Contains(msg, actual->digest.str()));

  Json env = *doc;
  env["environment"]["spec"]["hardware"]["product"] = "NVIDIA H200";
  auto r2 = ParseManifestInput(env.dump(), DocFormat::kJson, "bundle.json");
  ASSERT_FALSE(r2.ok());
  EXPECT_TRUE(Contains(r2.status().message(), "/run/spec/environmentDigest"));
  EXPECT_TRUE(Contains(r2.status().message(), "sha256:f4292a8be127b7230cd3995c1d605fb6c644e2c2f94566e1d28cc1be766ca5d5"));

  Json wrong_kind = *doc;
  wrong_kind["protocol"] = (*doc)["environment"];
  auto r3 = ParseManifestInput(wrong_kind.dump(), DocFormat::kJson, "bundle.json");
  ASSERT_FALSE(r3.ok());
  EXPECT_TRUE(Contains(r3.status().message(), "/protocol/kind"));

  Json missing = *doc;
  missing.erase("environment");
  EXPECT_TRUE(Contains(ParseManifestInput(missing.dump(), DocFormat::kJson, "b").status().message(),
                       "/environment: missing"));
  Json extra = *doc;
  extra["notes"] = "x";
  EXPECT_TRUE(Contains(ParseManifestInput(extra.dump(), DocFormat::kJson, "b").status().message(),
                       "/notes: unknown bundle field"));
}

// Every manifest-carrying row of the catalog export slice recomputes to the
// digest KernelIndex stored for it.
TEST(Identity, CatalogSliceRecomputes) {
  const std::map<std::string, std::string> kColumn = {
      {"operations", "semanticDigest"},
      {"workloads", "workloadDigest"},
      {"implementations", "implementationDigest"},
      {"benchmark_runs", "runDigest"},
      {"model_revisions", "modelDigest"},
      {"serving_stack_revisions", "stackDigest"},
      {"serving_configurations", "configurationDigest"},
      {"serving_workloads", "workloadDigest"},
      {"serving_runs", "runDigest"},
      {"projects", ""},  // no digest column; must still be a valid manifest
  };
  std::ifstream in(test::DataPath("kernelindex/catalog-export-slice/catalog-2026-08-16-0022af0b.slice.jsonl"));
  ASSERT_TRUE(in.good());
  std::string line;
  std::map<std::string, int> checked;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    auto rec = ParseDocument(line, DocFormat::kJson, "slice");
    ASSERT_OK(rec);
    const std::string table = (*rec)["table"];
    auto col = kColumn.find(table);
    if (col == kColumn.end()) continue;
    const Json& row = (*rec)["row"];
    ASSERT_TRUE(row.contains("manifest")) << table;
    const std::string where = "slice line " + std::to_string(lineno) + " (" + table + ")";
    auto parsed = ParseManifestInput(row["manifest"].dump(), DocFormat::kJson, where);
    ASSERT_OK(parsed);
    const Manifest& m = parsed->manifests[0];
    if (table == "benchmark_runs") {
      ASSERT_EQ(parsed->form, InputForm::kBundle) << where;
      EXPECT_EQ(row["protocolKey"], parsed->manifests[1].digest.str()) << where;
      EXPECT_EQ(row["environmentKey"], parsed->manifests[2].digest.str()) << where;
    } else {
      EXPECT_EQ(parsed->form, InputForm::kSingle) << where;
    }
    if (!col->second.empty()) {
      EXPECT_EQ(row[col->second], m.digest.str()) << where;
    }
    // The stored form re-reads to the same identity.
    for (const Manifest& each : parsed->manifests) {
      auto back = ManifestFromCanonical(each.canonical, where);
      ASSERT_OK(back);
      EXPECT_EQ(back->digest, each.digest) << where;
    }
    checked[table]++;
  }
  for (const auto& [table, _] : kColumn) EXPECT_GT(checked[table], 0) << table << " not covered by the slice";
}

}  // namespace
}  // namespace ki
