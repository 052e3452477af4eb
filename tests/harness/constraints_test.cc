// A definition's constraints over axes: the evaluator and its refusals.
#include <gtest/gtest.h>

#include "ki/harness.h"
#include "testutil/testutil.h"

namespace ki::harness {
namespace {

using Outcome = ConstraintCheck::Outcome;

const std::map<std::string, int64_t> kAxes = {{"batch_size", 3}, {"len_indptr", 4}, {"num_pages", 40}, {"zero", 0}};

Outcome Eval(std::string_view text, const std::map<std::string, int64_t>& axes = kAxes) {
  auto r = EvaluateConstraint(text, axes);
  EXPECT_TRUE(r.ok()) << text << ": " << r.status().message();
  return r.ok() ? r->outcome : Outcome::kNotEvaluated;
}

TEST(Constraints, EvaluatesComparisonsOfAxisArithmetic) {
  EXPECT_EQ(Eval("len_indptr == batch_size + 1"), Outcome::kHolds);
  EXPECT_EQ(Eval("len_indptr != batch_size + 1"), Outcome::kBroken);
  EXPECT_EQ(Eval("len_indptr==batch_size"), Outcome::kBroken);
  EXPECT_EQ(Eval("num_pages // (batch_size + 1) == 10"), Outcome::kHolds);
  EXPECT_EQ(Eval("num_pages % 7 == 5 and 1"), Outcome::kNotEvaluated) << "`and` is not in the grammar";
  EXPECT_EQ(Eval("num_pages % 7 == 5"), Outcome::kHolds);
  EXPECT_EQ(Eval("2 * 3 + 4 * 5 == 26"), Outcome::kHolds) << "* binds tighter than +";
  EXPECT_EQ(Eval("-7 // 2 == -4"), Outcome::kHolds) << "Python floors";
  EXPECT_EQ(Eval("-7 % 2 == 1"), Outcome::kHolds) << "the remainder takes the divisor's sign";
  EXPECT_EQ(Eval("7 % -2 == -1"), Outcome::kHolds);
  EXPECT_EQ(Eval("batch_size - num_pages < 0"), Outcome::kHolds);
  EXPECT_EQ(Eval("0 <= batch_size < len_indptr <= 4"), Outcome::kHolds) << "chained as in Python";
  EXPECT_EQ(Eval("0 <= batch_size > len_indptr"), Outcome::kBroken);
  EXPECT_EQ(Eval("num_pages >= 41"), Outcome::kBroken);
  EXPECT_EQ(Eval("num_pages > 39"), Outcome::kHolds);
}

TEST(Constraints, ABrokenConstraintNamesItsAxesInOrderOfUse) {
  auto r = EvaluateConstraint("len_indptr == batch_size + batch_size", kAxes);
  ASSERT_OK(r);
  EXPECT_EQ(r->outcome, Outcome::kBroken);
  EXPECT_EQ(r->values, "len_indptr = 4, batch_size = 3");
}

TEST(Constraints, TensorValuesUnknownNamesAndOtherSyntaxAreNotEvaluated) {
  for (const char* text : {"num_kv_indices == kv_indptr[-1].item()",  // tensor values
                           "len_indptr == kv_indptr.shape[0]",
                           "len_indptr == unknown_axis + 1",          // not an axis of the definition
                           "len_indptr == max(batch_size, 1) + 1",    // a call
                           "len_indptr == batch_size ** 1 + 1",       // power
                           "len_indptr == num_pages / 10",            // true division
                           "len_indptr = batch_size + 1",             // assignment
                           "len_indptr == 0x4", "len_indptr == 4.0", "len_indptr == 1_0",
                           "len_indptr", "len_indptr ==", "(len_indptr == 4", "", "len_indptr == 4 if 1 else 0"})
    EXPECT_EQ(Eval(text), Outcome::kNotEvaluated) << text;
}

TEST(Constraints, ArithmeticPastInt64OrByZeroIsAnError) {
  const std::map<std::string, int64_t> big = {{"a", int64_t{1} << 62}, {"zero", 0}};
  auto r = EvaluateConstraint("a * 2 == 0", big);
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(r.status().IsInvalidInput());
  EXPECT_EQ(r.status().message(),
            "constraint 'a * 2 == 0' cannot be checked: 4611686018427387904 * 2 passes int64 (a = 4611686018427387904)");
  EXPECT_FALSE(EvaluateConstraint("a + a == 0", big).ok());
  EXPECT_FALSE(EvaluateConstraint("0 - a - a - a == 0", big).ok());
  EXPECT_FALSE(EvaluateConstraint("a == 99999999999999999999", big).ok());
  r = EvaluateConstraint("a // zero == 1", big);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("4611686018427387904 // 0 divides by zero"), std::string::npos)
      << r.status().message();
  EXPECT_FALSE(EvaluateConstraint("a % zero == 1", big).ok());
  // 2^62 * 1 fits: only a step that passes int64 fails.
  EXPECT_EQ(Eval("a * 1 - a + a == a", big), Outcome::kHolds);
}

// The evaluator computed every operand of a chain, so an overflow or a
// division by zero after a comparison already false refused a workload that
// Python calls false without evaluating that part.
TEST(Constraints, AChainStopsAtItsFirstFalseComparisonAsPythonDoes) {
  const std::map<std::string, int64_t> big = {{"a", int64_t{1} << 62}, {"zero", 0}, {"n", 3}};
  for (const char* text : {"n > 5 < a * 4", "n > 5 < a // zero", "n > 5 < 1 % zero", "n < 5 > 9 < a + a + a",
                           "n > 5 < 99999999999999999999", "n > 5 < -(0 - a - a) - a - a", "n > 5 < not_an_axis"}) {
    auto r = EvaluateConstraint(text, big);
    ASSERT_TRUE(r.ok()) << text << ": " << r.status().message();
    EXPECT_EQ(r->outcome, Outcome::kBroken) << text;
    EXPECT_EQ(r->values, "n = 3") << text << ": only what Python evaluated is named";
  }
  // Before the first false comparison, everything is evaluated, as in Python.
  EXPECT_FALSE(EvaluateConstraint("n < a * 4 < 0", big).ok());
  EXPECT_FALSE(EvaluateConstraint("n // zero > 5 < 0", big).ok());
  EXPECT_FALSE(EvaluateConstraint("n < 5 < a * 4", big).ok()) << "true so far: the next operand is evaluated";
  // A syntax error anywhere still leaves the constraint not evaluated.
  EXPECT_EQ(Eval("n > 5 < a ** 2", big), Outcome::kNotEvaluated);
  EXPECT_EQ(Eval("n > 5 < (a", big), Outcome::kNotEvaluated);
  EXPECT_EQ(Eval("n > 5 < kv_indptr[-1]", big), Outcome::kNotEvaluated);
}

TEST(Constraints, CheckConstraintsNamesTheFirstBrokenOne) {
  auto def = LoadDefinition(test::DataPath("flashinfer-bench/gqa_paged_decode_h32_kv4_d128_ps1.json"));
  ASSERT_OK(def);
  ASSERT_EQ(def->constraints.size(), 2u);
  EXPECT_EQ(def->constraints[0], "len_indptr == batch_size + 1");
  EXPECT_EQ(def->constraints[1], "num_kv_indices == kv_indptr[-1].item()");
  std::map<std::string, int64_t> axes = def->const_axes;
  axes["batch_size"] = 3;
  axes["len_indptr"] = 4;
  axes["num_kv_indices"] = 7;
  axes["num_pages"] = 7;
  EXPECT_OK(CheckConstraints(*def, axes));
  axes["len_indptr"] = 5;
  const Status st = CheckConstraints(*def, axes);
  EXPECT_TRUE(st.IsInvalidInput());
  EXPECT_EQ(st.message(), "constraint 'len_indptr == batch_size + 1' does not hold: len_indptr = 5, batch_size = 3");
}

TEST(Constraints, DefinitionKeepsConstraintsAndRefusesOtherTypes) {
  const std::string head = R"({"name":"x","axes":{"n":{"type":"var"}},"inputs":{},"outputs":{})";
  auto d = ParseDefinition(head + R"(,"constraints":["n >= 1", "n.foo"]})", "t.json");
  ASSERT_OK(d);
  EXPECT_EQ(d->constraints, (std::vector<std::string>{"n >= 1", "n.foo"}));
  ASSERT_OK(ParseDefinition(head + "}", "t.json"));
  auto bad = ParseDefinition(head + R"(,"constraints":"n >= 1"})", "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "t.json: constraints is not a list of strings");
  bad = ParseDefinition(head + R"(,"constraints":["n >= 1", 3]})", "t.json");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "t.json: constraints[1] is not a string");
}

}  // namespace
}  // namespace ki::harness
