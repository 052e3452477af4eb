// flashinfer-bench definition constraints over axes ("len_indptr ==
// batch_size + 1"): a small recursive-descent evaluator, so that a workload
// the definition rules out is refused as invalid input instead of reaching a
// kernel and being stored as that kernel's runtime_error.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <optional>

#include "ki/harness.h"

namespace ki::harness {
namespace {

// Grammar (Python's precedence):
//   constraint := sum (cmp sum)+                 cmp: == != <= >= < >
//   sum        := product (('+' | '-') product)*
//   product    := unary (('*' | '//' | '%') unary)*
//   unary      := ('+' | '-') unary | atom
//   atom       := integer | axis name | '(' sum ')'
// Parsing and evaluation are one pass. A syntax error or a name that is not
// an axis makes the constraint not evaluated (whatever else it says); an
// arithmetic failure is kept and reported only if the whole text parsed.
// A chain stops at its first false comparison, as Python's does: the
// operands after it are still parsed (a syntax error there still makes the
// constraint not evaluated) but not evaluated, so an overflow, a division by
// zero or a name that is not an axis there is no error and names no axis.
class Evaluator {
 public:
  Evaluator(std::string_view text, const std::map<std::string, int64_t>& axes) : text_(text), axes_(axes) {}

  Result<ConstraintCheck> Run() {
    ConstraintCheck out;
    const std::optional<bool> holds = Constraint();
    Skip();
    if (!holds || pos_ != text_.size() || unknown_) return out;  // kNotEvaluated
    if (!arith_error_.empty())
      return Status::InvalidInput("constraint '" + std::string(text_) + "' cannot be checked: " + arith_error_ +
                                  (used_.empty() ? "" : " (" + Values() + ")"));
    out.outcome = *holds ? ConstraintCheck::Outcome::kHolds : ConstraintCheck::Outcome::kBroken;
    if (!*holds) out.values = Values();
    return out;
  }

 private:
  std::string Values() const {
    std::string s;
    for (const std::string& name : used_) s += (s.empty() ? "" : ", ") + name + " = " + std::to_string(axes_.at(name));
    return s;
  }

  void Skip() {
    while (pos_ < text_.size() && (text_[pos_] == ' ' || text_[pos_] == '\t')) ++pos_;
  }
  bool Eat(std::string_view op) {
    Skip();
    if (text_.substr(pos_, op.size()) != op) return false;
    pos_ += op.size();
    return true;
  }
  void Fail(const std::string& what) {
    if (!skipping_ && arith_error_.empty()) arith_error_ = what;
  }

  std::optional<bool> Constraint() {
    std::optional<int64_t> left = Sum();
    if (!left) return std::nullopt;
    bool holds = true;
    int comparisons = 0;
    for (;;) {
      // Two-character operators first: "<=" before "<".
      static constexpr std::string_view kOps[] = {"==", "!=", "<=", ">=", "<", ">"};
      int op = -1;
      for (int i = 0; i < 6 && op < 0; ++i)
        if (Eat(kOps[i])) op = i;
      if (op < 0) break;
      skipping_ = !holds;
      const std::optional<int64_t> right = Sum();
      if (!right) return std::nullopt;
      const int64_t a = *left, b = *right;
      const bool r = op == 0 ? a == b : op == 1 ? a != b : op == 2 ? a <= b : op == 3 ? a >= b : op == 4 ? a < b : a > b;
      holds = holds && r;
      left = right;
      ++comparisons;
    }
    if (comparisons == 0) return std::nullopt;  // a bare expression: Python truthiness, not a constraint we know
    return holds;
  }

  std::optional<int64_t> Sum() {
    std::optional<int64_t> v = Product();
    for (;;) {
      if (!v) return std::nullopt;
      Skip();
      const bool plus = Eat("+");
      if (!plus && !Eat("-")) return v;
      const std::optional<int64_t> r = Product();
      if (!r) return std::nullopt;
      int64_t out = 0;
      if (plus ? __builtin_add_overflow(*v, *r, &out) : __builtin_sub_overflow(*v, *r, &out))
        Fail(std::to_string(*v) + (plus ? " + " : " - ") + std::to_string(*r) + " passes int64");
      v = out;
    }
  }

  std::optional<int64_t> Product() {
    std::optional<int64_t> v = Unary();
    for (;;) {
      if (!v) return std::nullopt;
      Skip();
      // "//" before "/" would matter if "/" were accepted; a lone "/" (true
      // division) is not, and ends the expression (then not evaluated).
      int op = Eat("//") ? 1 : Eat("*") ? 0 : Eat("%") ? 2 : -1;
      if (op < 0) return v;
      if (op == 0 && Peek('*')) return std::nullopt;  // "**": power, not ours
      const std::optional<int64_t> r = Unary();
      if (!r) return std::nullopt;
      const int64_t a = *v, b = *r;
      int64_t out = 0;
      if (op == 0) {
        if (__builtin_mul_overflow(a, b, &out)) Fail(std::to_string(a) + " * " + std::to_string(b) + " passes int64");
      } else if (b == 0) {
        Fail(std::to_string(a) + (op == 1 ? " // 0" : " % 0") + " divides by zero");
      } else if (a == INT64_MIN && b == -1) {
        Fail(std::to_string(a) + (op == 1 ? " // -1" : " % -1") + " passes int64");
      } else {
        // Python floors: the quotient rounds toward minus infinity and the
        // remainder takes the divisor's sign.
        int64_t q = a / b, m = a % b;
        if (m != 0 && ((m < 0) != (b < 0))) --q, m += b;
        out = op == 1 ? q : m;
      }
      v = out;
    }
  }

  bool Peek(char c) {
    Skip();
    return pos_ < text_.size() && text_[pos_] == c;
  }

  std::optional<int64_t> Unary() {
    if (Eat("-")) {
      const std::optional<int64_t> v = Unary();
      if (!v) return std::nullopt;
      if (*v == INT64_MIN) {
        Fail("-(" + std::to_string(*v) + ") passes int64");
        return 0;
      }
      return -*v;
    }
    if (Eat("+")) return Unary();
    return Atom();
  }

  std::optional<int64_t> Atom() {
    Skip();
    if (pos_ >= text_.size()) return std::nullopt;
    const char c = text_[pos_];
    if (c == '(') {
      ++pos_;
      const std::optional<int64_t> v = Sum();
      if (!v || !Eat(")")) return std::nullopt;
      return v;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      bool big = false;
      const size_t start = pos_;
      while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
        if (__builtin_mul_overflow(v, int64_t{10}, &v) || __builtin_add_overflow(v, int64_t{text_[pos_] - '0'}, &v))
          big = true;
        ++pos_;
      }
      // "0x10", "1_000", "1e3", "2.5": Python literals this grammar lacks.
      if (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_' ||
                                  text_[pos_] == '.'))
        return std::nullopt;
      if (big) Fail("the literal " + std::string(text_.substr(start, pos_ - start)) + " passes int64");
      return big ? 0 : v;
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      const size_t start = pos_;
      while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) || text_[pos_] == '_')) ++pos_;
      const std::string name(text_.substr(start, pos_ - start));
      if (skipping_) return 0;  // Python never reads it: the chain is already false
      auto it = axes_.find(name);
      if (it == axes_.end()) {
        unknown_ = true;  // a tensor, a Python name: not a constraint on axes
        return 0;
      }
      if (std::find(used_.begin(), used_.end(), name) == used_.end()) used_.push_back(name);
      return it->second;
    }
    return std::nullopt;
  }

  std::string_view text_;
  const std::map<std::string, int64_t>& axes_;
  size_t pos_ = 0;
  bool unknown_ = false;
  bool skipping_ = false;  // past a false comparison of the chain: parse, do not evaluate
  std::string arith_error_;
  std::vector<std::string> used_;
};

}  // namespace

Result<ConstraintCheck> EvaluateConstraint(std::string_view constraint, const std::map<std::string, int64_t>& axes) {
  return Evaluator(constraint, axes).Run();
}

Status CheckConstraints(const Definition& def, const std::map<std::string, int64_t>& axes) {
  for (const std::string& c : def.constraints) {
    KI_ASSIGN_OR_RETURN(ConstraintCheck check, EvaluateConstraint(c, axes));
    if (check.outcome == ConstraintCheck::Outcome::kBroken)
      return Status::InvalidInput("constraint '" + c + "' does not hold: " + check.values);
  }
  return Status::OK();
}

}  // namespace ki::harness
