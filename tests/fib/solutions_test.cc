// flashinfer-bench Solution JSON -> ImplementationRevision (src/fib/solutions.h).
#include "fib/solutions.h"

#include <gtest/gtest.h>

#include "ki/digest.h"
#include "ki/manifest.h"

namespace ki::fib {
namespace {

Json Solution() {
  return Json{{"name", "Some_Solution_ab12"},
              {"definition", "gqa_paged_decode_h32_kv4_d128_ps1"},
              {"author", "someone"},
              {"description", "a test"},
              {"spec",
               {{"language", "triton"},
                {"target_hardware", {"NVIDIA H200"}},
                {"entry_point", "pkg/main.py::run"},
                {"dependencies", {"torch"}},
                {"destination_passing_style", false}}},
              {"sources", {{{"path", "pkg/main.py"}, {"content", "def run(): pass\n"}},
                           {{"path", "./pkg/util.py"}, {"content", "X = 1\n"}}}}};
}

Status ParseError(const Json& j) { return ParseSolution(j.dump(), "solutions/s.json").status(); }

TEST(Solutions, ParsesNormalisesAndNamesAsKernelIndexDoes) {
  auto s = ParseSolution(Solution().dump(), "solutions/s.json");
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->entry_file, "pkg/main.py");
  EXPECT_EQ(s->function, "run");
  EXPECT_FALSE(s->destination_passing);
  EXPECT_EQ(s->files.count("pkg/util.py"), 1u);  // `./` normalised away
  EXPECT_EQ(SolutionInterface(*s), "flashinfer_bench_returning");
  auto blob = SourceBlob(*s);
  ASSERT_TRUE(blob.ok());
  EXPECT_EQ(blob->media_type, "application/vnd.ki.source-bundle+json");  // two files: a bundle
  const Json op = {{"inputs", {{{"name", "q"}, {"tensor", {{"dtype", "bf16"}}}}}},
                   {"outputs", {{{"name", "lse"}, {"tensor", {{"dtype", "fp32"}}}}}}};
  Json doc = ImplementationDocument(*s, Sha256Of("op"), op, Sha256Of(blob->bytes), blob->bytes.size());
  EXPECT_EQ(doc["metadata"]["name"], "some-solution-ab12");
  EXPECT_EQ(doc["spec"]["callable"]["path"], "pkg/main.py");
  EXPECT_EQ(doc["spec"]["support"]["dtypes"], Json::array({"bf16", "fp32"}));
  auto m = ManifestFromJson(doc, "test");
  EXPECT_TRUE(m.ok()) << m.status().message();  // valid against the schema
}

TEST(Solutions, OneTopLevelFileIsStoredAsItself) {
  Json j = Solution();
  j["spec"]["entry_point"] = "main.py::run";
  j["sources"] = {{{"path", "main.py"}, {"content", "def run(): pass\n"}}};
  auto s = ParseSolution(j.dump(), "s.json");
  ASSERT_TRUE(s.ok());
  auto blob = SourceBlob(*s);
  ASSERT_TRUE(blob.ok());
  EXPECT_EQ(blob->bytes, "def run(): pass\n");
  EXPECT_EQ(blob->media_type, "text/x-python");
}

TEST(Solutions, PathRulesAreEnforcedWithClearErrors) {
  Json j = Solution();
  j["sources"][1]["path"] = "../util.py";
  Status st = ParseError(j);
  EXPECT_TRUE(st.IsInvalidInput());
  EXPECT_NE(st.message().find("solutions/s.json: sources[1]: source path `../util.py` leaves the solution"),
            std::string::npos)
      << st.message();
  j["sources"][1]["path"] = "pkg/../../util.py";
  EXPECT_NE(ParseError(j).message().find("leaves the solution"), std::string::npos);
  j["sources"][1]["path"] = "/abs/util.py";
  EXPECT_NE(ParseError(j).message().find("is not relative"), std::string::npos);
  j["sources"][1]["path"] = "pkg\\util.py";
  EXPECT_NE(ParseError(j).message().find("is not relative"), std::string::npos);
  j["sources"][1]["path"] = "pkg//main.py";  // the entry file again, spelled otherwise
  EXPECT_NE(ParseError(j).message().find("appears twice"), std::string::npos) << ParseError(j).message();
  j["sources"][1]["path"] = "";
  EXPECT_NE(ParseError(j).message().find("empty `path`"), std::string::npos);
  j = Solution();
  j["spec"]["entry_point"] = "other.py::run";
  EXPECT_NE(ParseError(j).message().find("`other.py` is not among the sources"), std::string::npos);
  for (const char* bad : {"main.py", "::run", "main.py::", "a::b::c"}) {
    j["spec"]["entry_point"] = bad;
    EXPECT_NE(ParseError(j).message().find("not `<file>::<function>`"), std::string::npos) << bad;
  }
  j = Solution();
  j["sources"] = Json::array();
  EXPECT_NE(ParseError(j).message().find("has no `sources`"), std::string::npos);
  j = Solution();
  j["spec"]["destination_passing_style"] = "yes";
  EXPECT_NE(ParseError(j).message().find("destination_passing_style"), std::string::npos);
  j = Solution();
  j["sources"][0]["content"] = 5;
  EXPECT_NE(ParseError(j).message().find("`content` must be a string"), std::string::npos);
}

TEST(Solutions, CppBindingsAreNamedInTheInterface) {
  Json j = Solution();
  j["spec"]["language"] = "cuda";
  auto s = ParseSolution(j.dump(), "s.json");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(SolutionInterface(*s), "flashinfer_bench_binding_tvm_ffi");  // flashinfer-bench's default
  j["spec"]["binding"] = "torch";
  s = ParseSolution(j.dump(), "s.json");
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(SolutionInterface(*s), "flashinfer_bench_binding_torch");
}

TEST(Solutions, ReferenceIsAReturningPythonSolution) {
  ParsedSolution r = ReferenceSolution("gqa_x", "def run(a):\n    return a\n");
  EXPECT_EQ(r.entry_file, "reference.py");
  EXPECT_FALSE(r.destination_passing);
  auto blob = SourceBlob(r);
  ASSERT_TRUE(blob.ok());
  EXPECT_EQ(blob->bytes, "def run(a):\n    return a\n");  // the definition's reference blob, same digest
}

}  // namespace
}  // namespace ki::fib
