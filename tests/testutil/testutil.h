// Shared helpers for ki's tests: status assertions, temporary directories,
// test data paths and running the `ki` binary.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "ki/status.h"

#define ASSERT_OK(expr)                                      \
  do {                                                       \
    const auto& _ki_s = (expr);                              \
    ASSERT_TRUE(_ki_s.ok()) << ::ki::test::StatusText(_ki_s); \
  } while (0)
#define EXPECT_OK(expr)                                      \
  do {                                                       \
    const auto& _ki_s = (expr);                              \
    EXPECT_TRUE(_ki_s.ok()) << ::ki::test::StatusText(_ki_s); \
  } while (0)

namespace ki::test {

inline std::string StatusText(const Status& s) { return s.ToString(); }
template <typename T>
std::string StatusText(const Result<T>& r) { return r.status().ToString(); }

// A fresh directory under $TMPDIR, removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string Join(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// Path of a file under tests/data/.
std::string DataPath(const std::string& rel);
std::string ReadFileOrDie(const std::string& path);
void WriteFileOrDie(const std::string& path, const std::string& data);

// Runs the built `ki` binary with args (shell-quoted here), capturing output.
struct CommandResult {
  int exit_code = -1;
  std::string out;
  std::string err;
};
CommandResult RunKi(const std::string& args, const std::string& env_prefix = "");

}  // namespace ki::test
