#include "ki/status.h"

namespace ki {

int Status::ExitCode() const {
  // The one table of exit codes (docs/cli.md, "Exit codes").
  switch (code_) {
    case Code::kOk: return 0;
    case Code::kCorruption:
    case Code::kVerifyFailed: return 1;
    case Code::kUsage: return 2;
    case Code::kNotFound:
    case Code::kAmbiguous: return 3;
    case Code::kInvalidInput: return 4;
    case Code::kIOError: return 5;
  }
  return 5;
}

std::string Status::ToString() const {
  const char* name = "ok";
  switch (code_) {
    case Code::kOk: return "ok";
    case Code::kCorruption: name = "corruption"; break;
    case Code::kVerifyFailed: name = "verification failed"; break;
    case Code::kUsage: name = "usage"; break;
    case Code::kNotFound: name = "not found"; break;
    case Code::kAmbiguous: name = "ambiguous"; break;
    case Code::kInvalidInput: name = "invalid input"; break;
    case Code::kIOError: name = "I/O error"; break;
  }
  return std::string(name) + ": " + msg_;
}

}  // namespace ki
