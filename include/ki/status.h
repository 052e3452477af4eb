// Status and Result<T>: how every fallible ki library call reports failure.
//
// A Status is a cheap value: a code plus a human message that already says
// what failed and where (file, line, byte). Codes map one-to-one onto the
// documented exit codes of the `ki` command (docs/cli.md), so the CLI never
// has to guess. Absent is a value, not an error: lookups return
// std::optional, and NotFound is for a name the user asked for.
//
// Thread-safety: plain values; no shared state.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <variant>

namespace ki {

enum class Code {
  kOk = 0,
  kCorruption,       // stored bytes do not match their digest / bad frame
  kVerifyFailed,     // a check the user asked for found a fault
  kUsage,            // command line misuse
  kNotFound,         // a reference the user named does not exist
  kAmbiguous,        // a reference matches several objects
  kInvalidInput,     // the user's input is malformed or inconsistent
  kIOError,          // the filesystem or environment failed (disk full, EACCES)
};

class [[nodiscard]] Status {
 public:
  Status() = default;
  static Status OK() { return Status(); }
  static Status Corruption(std::string msg) { return Status(Code::kCorruption, std::move(msg)); }
  static Status VerifyFailed(std::string msg) { return Status(Code::kVerifyFailed, std::move(msg)); }
  static Status Usage(std::string msg) { return Status(Code::kUsage, std::move(msg)); }
  static Status NotFound(std::string msg) { return Status(Code::kNotFound, std::move(msg)); }
  static Status Ambiguous(std::string msg) { return Status(Code::kAmbiguous, std::move(msg)); }
  static Status InvalidInput(std::string msg) { return Status(Code::kInvalidInput, std::move(msg)); }
  static Status IOError(std::string msg) { return Status(Code::kIOError, std::move(msg)); }

  bool ok() const { return code_ == Code::kOk; }
  Code code() const { return code_; }
  const std::string& message() const { return msg_; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsInvalidInput() const { return code_ == Code::kInvalidInput; }
  bool IsIOError() const { return code_ == Code::kIOError; }

  // Prefixes context ("while adding foo.yaml: ...") without losing the code.
  Status WithContext(std::string_view ctx) const {
    if (ok()) return *this;
    return Status(code_, std::string(ctx) + ": " + msg_);
  }

  // The process exit code documented in docs/cli.md.
  int ExitCode() const;
  std::string ToString() const;

 private:
  Status(Code c, std::string m) : code_(c), msg_(std::move(m)) {}
  Code code_ = Code::kOk;
  std::string msg_;
};

// Result<T>: a T or a non-OK Status.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}              // NOLINT: implicit by design
  Result(Status status) : v_(std::move(status)) {}       // NOLINT: implicit by design

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace ki

#define KI_CONCAT_INNER(a, b) a##b
#define KI_CONCAT(a, b) KI_CONCAT_INNER(a, b)

// Returns the Status from the enclosing function if it is not OK.
#define KI_RETURN_IF_ERROR(expr)              \
  do {                                        \
    ::ki::Status _ki_st = (expr);             \
    if (!_ki_st.ok()) return _ki_st;          \
  } while (0)

// `KI_ASSIGN_OR_RETURN(auto x, Fn());` binds x or returns the error.
#define KI_ASSIGN_OR_RETURN(lhs, expr) \
  KI_ASSIGN_OR_RETURN_IMPL(KI_CONCAT(_ki_res_, __LINE__), lhs, expr)
#define KI_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(tmp).value()
