// flashinfer-bench definitions and workloads, and ToJson.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ki/harness.h"
#include "testutil/testutil.h"

namespace ki::harness {
namespace {

TEST(Definition, ParsesTheGqaDecodeDefinitionInOrder) {
  auto d = LoadDefinition(test::DataPath("flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json"));
  ASSERT_OK(d);
  EXPECT_EQ(d->name, "gqa_paged_decode_h32_kv4_d128_ps1");
  EXPECT_EQ(d->const_axes.at("num_qo_heads"), 32);
  EXPECT_EQ(d->const_axes.at("head_dim"), 128);
  ASSERT_EQ(d->inputs.size(), 6u);
  const char* order[] = {"q", "k_cache", "v_cache", "kv_indptr", "kv_indices", "sm_scale"};
  for (size_t i = 0; i < 6; ++i) EXPECT_EQ(d->inputs[i].name, order[i]);
  EXPECT_EQ(d->inputs[0].dtype, KI_DTYPE_BF16);
  EXPECT_TRUE(d->inputs[5].shape.empty());
  ASSERT_EQ(d->outputs.size(), 2u);
  EXPECT_EQ(d->outputs[1].name, "lse");
  EXPECT_NE(d->reference.find("def run("), std::string::npos);
}

TEST(Definition, RejectsMalformed) {
  EXPECT_FALSE(ParseDefinition("{", "t").ok());
  EXPECT_FALSE(ParseDefinition(R"({"name":"x","axes":{"a":{"type":"what"}},"inputs":{},"outputs":{}})", "t").ok());
  EXPECT_FALSE(ParseDefinition(
                   R"({"name":"x","axes":{},"inputs":{"q":{"shape":["nope"],"dtype":"float32"}},"outputs":{}})", "t")
                   .ok());
  EXPECT_FALSE(ParseDefinition(R"({"name":"x","axes":{},"inputs":{"q":{"dtype":"complex"}},"outputs":{}})", "t").ok());
}

TEST(Workloads, LoadsAll48) {
  auto d = LoadDefinition(test::DataPath("flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json"));
  auto ws = LoadWorkloads(test::DataPath("flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.jsonl"));
  ASSERT_OK(d);
  ASSERT_OK(ws);
  ASSERT_EQ(ws->size(), 48u);
  const Workload& w = (*ws)[1];
  EXPECT_EQ(w.uuid, "27ef153a-4d10-402a-998b-1922904e94b2");
  EXPECT_EQ(w.axes.at("num_kv_indices"), 362);
  EXPECT_EQ(w.inputs.at("sm_scale").kind, InputSource::Kind::kScalar);
  EXPECT_EQ(w.inputs.at("kv_indptr").kind, InputSource::Kind::kSafetensors);
  for (const Workload& x : *ws) {
    auto axes = ResolveAxes(*d, x);
    ASSERT_OK(axes);
    EXPECT_EQ(axes->at("len_indptr"), axes->at("batch_size") + 1);
    EXPECT_OK(PlanInputs(*d, x, {}));
  }
  // q 2*32*128, K and V only the 362 addressed pages, indptr, indices, output, lse.
  auto axes = ResolveAxes(*d, w);
  ASSERT_OK(axes);
  EXPECT_EQ(MinimumBytes(*d, *axes), 8192u + 2 * 362 * 1024 + 8 + 362 * 4 + 4 + 8192 + 128);
}

TEST(Workloads, RejectsBadLines) {
  EXPECT_FALSE(ParseWorkload(R"({"workload":{"axes":{"batch_size":-1}}})", "t").ok());
  EXPECT_FALSE(ParseWorkload(R"({"axes":{"b":1},"inputs":{"q":{"type":"mystery"}}})", "t").ok());
  EXPECT_TRUE(ParseWorkload(R"({"uuid":"u","axes":{"b":1},"inputs":{"q":{"type":"random"}}})", "t").ok());
}

// Fields of another JSON type were read with nlohmann's value(), which
// threw type_error out of the parser (exit 5 from `ki run`, nlohmann's
// words); a const axis past int64 wrapped to a negative size.
TEST(Workloads, WrongTypedFieldsAreInvalidInputNotExceptions) {
  auto w = ParseWorkload(R"({"axes":{"b":1},"inputs":{"q":{"type":5}}})", "t");
  ASSERT_FALSE(w.ok());
  EXPECT_EQ(w.status().message(), "t: input q has unknown type ''");
  w = ParseWorkload(R"({"axes":{"b":1},"inputs":{"k":{"type":"safetensors","path":7}}})", "t");
  ASSERT_OK(w);
  EXPECT_EQ(w->inputs.at("k").path, "");
  const std::string head = R"({"name":"d","inputs":{},"outputs":{},"axes":)";
  auto d = ParseDefinition(head + R"({"a":5}})", "def");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "def: axis a has unknown type ''");
  d = ParseDefinition(head + R"({"a":{"type":["const"]}}})", "def");
  EXPECT_FALSE(d.ok());
  for (const char* value : {"-4", "18446744073709551615", "1.5"}) {
    d = ParseDefinition(head + R"({"a":{"type":"const","value":)" + value + "}}}", "def");
    ASSERT_FALSE(d.ok()) << value;
    EXPECT_EQ(d.status().message(), "def: const axis a has no value that is a non-negative 64-bit integer") << value;
  }
  d = ParseDefinition(R"({"name":"d","axes":{},"inputs":{"x":{"dtype":"float32","shape":"n"}},"outputs":{}})", "def");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "def: inputs.x: shape is not a list of axis names");
  d = ParseDefinition(R"({"name":"d","axes":{},"inputs":{"x":{"dtype":"float32","shape":null}},"outputs":[]})", "def");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "def: outputs is not an object");
}

TEST(ResultJson, CarriesStatusTimerAndSamples) {
  RunResult r;
  r.status = RunStatus::kIncorrectNumerical;
  r.kernel = "k";
  r.timing.measured = true;
  r.timing.timer = "cuda_event";
  r.timing.samples_us = {{1.0, 2.0}, {3.0}};
  r.correctness.max_abs_error = INFINITY;
  const auto j = nlohmann::json::parse(ToJson(r));
  EXPECT_EQ(j["status"], "incorrect_numerical");
  EXPECT_EQ(j["timing"]["timer"], "cuda_event");
  EXPECT_EQ(j["timing"]["samples_us"][1][0], 3.0);
  EXPECT_EQ(j["correctness"]["max_abs_error"], "inf");
  EXPECT_FALSE(nlohmann::json::parse(ToJson(r, false))["timing"].contains("samples_us"));
}

}  // namespace
}  // namespace ki::harness
