#include "testutil/testutil.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace ki::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string tmpl = std::string(base && *base ? base : "/tmp") + "/ki-test-XXXXXX";
  char* p = mkdtemp(tmpl.data());
  if (!p) {
    perror("mkdtemp");
    std::abort();
  }
  path_ = p;
}

TempDir::~TempDir() {
  std::error_code ec;
  // Tests make files read-only to simulate failures: restore before removing.
  for (auto it = std::filesystem::recursive_directory_iterator(path_, ec);
       !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
  }
  std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                               std::filesystem::perm_options::add, ec);
  std::filesystem::remove_all(path_, ec);
}

std::string DataPath(const std::string& rel) { return std::string(KI_TEST_DATA_DIR) + "/" + rel; }

std::string ReadFileOrDie(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    fprintf(stderr, "cannot read %s\n", path.c_str());
    std::abort();
  }
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void WriteFileOrDie(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
  if (!out) {
    fprintf(stderr, "cannot write %s\n", path.c_str());
    std::abort();
  }
}

CommandResult RunKi(const std::string& args, const std::string& env_prefix) {
  TempDir tmp;
  std::string cmd = env_prefix + " " + KI_BINARY + " " + args + " >" + tmp.Join("out") + " 2>" +
                    tmp.Join("err");
  int rc = std::system(cmd.c_str());
  CommandResult r;
  r.exit_code = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + WTERMSIG(rc);
  r.out = ReadFileOrDie(tmp.Join("out"));
  r.err = ReadFileOrDie(tmp.Join("err"));
  return r;
}

}  // namespace ki::test
