#include "util/process.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>

namespace ki {

bool ProcessIsGone(int64_t pid) {
  if (pid <= 0 || pid > INT32_MAX || pid_t(pid) == ::getpid()) return false;
  return ::kill(pid_t(pid), 0) != 0 && errno == ESRCH;
}

}  // namespace ki
