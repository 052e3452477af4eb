// ReadCpuInfo: the cpuinfo fields ki records, read through Env from a
// fixture instead of the machine's /proc/cpuinfo.
#include <gtest/gtest.h>

#include <map>

#include "ki/harness.h"
#include "testutil/fault_env.h"
#include "testutil/testutil.h"

namespace ki::harness {
namespace {

// An Env whose /proc/cpuinfo is a file of the test's; reads of it can fail
// as FaultInjectionEnv makes them.
class CpuInfoEnv : public test::FaultInjectionEnv {
 public:
  explicit CpuInfoEnv(std::string fixture) : fixture_(std::move(fixture)) {}
  using Env::NewSequentialFile;
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path,
                                                            const SequentialFileOptions& options) override {
    return FaultInjectionEnv::NewSequentialFile(path == "/proc/cpuinfo" ? fixture_ : path, options);
  }

 private:
  std::string fixture_;
};

// Two processors of an x86 machine, as Linux writes them: "model" comes
// before "model name", keys are padded with tabs.
constexpr const char* kTwoProcessors =
    "processor\t: 0\n"
    "vendor_id\t: AuthenticAMD\n"
    "cpu family\t: 25\n"
    "model\t\t: 1\n"
    "model name\t: AMD EPYC 7B13 64-Core Processor\n"
    "flags\t\t: fpu vme de pse\n"
    "\n"
    "processor\t: 1\n"
    "vendor_id\t: GenuineIntel\n"
    "model\t\t: 2\n"
    "model name\t: Another CPU\n"
    "\n";

class CpuInfoTest : public ::testing::Test {
 protected:
  std::string Fixture(const std::string& text) {
    std::string path = dir_.Join("cpuinfo");
    test::WriteFileOrDie(path, text);
    return path;
  }
  test::TempDir dir_;
};

TEST_F(CpuInfoTest, FirstProcessorsFields) {
  CpuInfoEnv env(Fixture(kTwoProcessors));
  auto info = ReadCpuInfo(env);
  ASSERT_OK(info);
  EXPECT_EQ(info->model_name, "AMD EPYC 7B13 64-Core Processor");
  EXPECT_EQ(info->vendor_id, "AuthenticAMD");
}

// An ARM kernel writes neither field: both empty, no error.
TEST_F(CpuInfoTest, MissingKeysAreEmpty) {
  CpuInfoEnv env(Fixture("processor\t: 0\nBogoMIPS\t: 50.00\nCPU implementer\t: 0x41\n\n"));
  auto info = ReadCpuInfo(env);
  ASSERT_OK(info);
  EXPECT_EQ(info->model_name, "");
  EXPECT_EQ(info->vendor_id, "");
  // One present, the other not.
  CpuInfoEnv env2(Fixture("vendor_id\t: GenuineIntel\nmodel\t\t: 85\n"));
  info = ReadCpuInfo(env2);
  ASSERT_OK(info);
  EXPECT_EQ(info->model_name, "");
  EXPECT_EQ(info->vendor_id, "GenuineIntel");
}

// A key with nothing after its colon (ki before 2026-11-30 threw
// std::out_of_range there), and a last line without a newline.
TEST_F(CpuInfoTest, EmptyValueAndNoFinalNewline) {
  CpuInfoEnv env(Fixture("model name\t:\nvendor_id\t: GenuineIntel"));
  auto info = ReadCpuInfo(env);
  ASSERT_OK(info);
  EXPECT_EQ(info->model_name, "");
  EXPECT_EQ(info->vendor_id, "GenuineIntel");
}

// The value is what follows ": ", as ki always recorded it (the model name
// is part of the ExecutionEnvironment's digest): inner and trailing blanks
// stay.
TEST_F(CpuInfoTest, ValueKeptAsWritten) {
  CpuInfoEnv env(Fixture("model name\t:   Intel(R) Xeon(R)  CPU @ 2.20GHz \n"));
  auto info = ReadCpuInfo(env);
  ASSERT_OK(info);
  EXPECT_EQ(info->model_name, "Intel(R) Xeon(R)  CPU @ 2.20GHz ");
}

TEST_F(CpuInfoTest, ReadErrorAndMissingFileAreReturned) {
  CpuInfoEnv env(Fixture(kTwoProcessors));
  env.FailReads("cpuinfo", 40);  // EIO after 40 bytes: mid-file
  auto info = ReadCpuInfo(env);
  ASSERT_FALSE(info.ok());
  EXPECT_TRUE(info.status().IsIOError()) << info.status().ToString();
  CpuInfoEnv missing(dir_.Join("no-such-file"));
  info = ReadCpuInfo(missing);
  ASSERT_FALSE(info.ok());
  EXPECT_TRUE(info.status().IsNotFound()) << info.status().ToString();
}

// An Env in which the files AvailableHostMemory reads are the test's; any
// other path (the machine's own /sys) is absent.
class MemoryEnv : public test::FaultInjectionEnv {
 public:
  explicit MemoryEnv(const test::TempDir& dir) : dir_(dir) {}
  using Env::NewSequentialFile;
  Result<std::unique_ptr<SequentialFile>> NewSequentialFile(const std::string& path,
                                                            const SequentialFileOptions& options) override {
    auto it = files_.find(path);
    return FaultInjectionEnv::NewSequentialFile(it == files_.end() ? dir_.Join("absent") : it->second, options);
  }
  void Set(const std::string& path, const std::string& text) {
    const std::string fixture = dir_.Join(std::to_string(next_++) + ".txt");  // a fresh one: no alias
    test::WriteFileOrDie(fixture, text);
    files_[path] = fixture;
  }

 private:
  const test::TempDir& dir_;
  std::map<std::string, std::string> files_;
  int next_ = 0;
};

// MemAvailable, lowered to what a cgroup limit leaves (v2 and v1, at the
// process's cgroup or above it): what the harness compares a workload's
// memory need with before generating its inputs.
TEST(AvailableHostMemory, MemAvailableAndCgroupLimits) {
  test::TempDir dir;
  MemoryEnv env(dir);
  env.Set("/proc/meminfo", "MemTotal:       32768000 kB\nMemFree:  1000 kB\nMemAvailable:   22446212 kB\n");
  auto avail = AvailableHostMemory(env);
  ASSERT_OK(avail);
  EXPECT_EQ(*avail, 22446212ull * 1024) << "no cgroup files: MemAvailable";
  env.Set("/proc/self/cgroup", "0::/user.slice/job\n");
  env.Set("/sys/fs/cgroup/user.slice/job/memory.max", "max\n");
  env.Set("/sys/fs/cgroup/user.slice/job/memory.current", "100\n");
  env.Set("/sys/fs/cgroup/user.slice/memory.max", "1073741824\n");
  env.Set("/sys/fs/cgroup/user.slice/memory.current", "73741824\n");
  avail = AvailableHostMemory(env);
  ASSERT_OK(avail);
  EXPECT_EQ(*avail, 1000000000u) << "v2: the parent's limit less its usage";
  env.Set("/proc/self/cgroup", "4:memory:/box\n1:cpu:/\n0::/\n");
  env.Set("/sys/fs/cgroup/memory/box/memory.limit_in_bytes", "5000\n");
  env.Set("/sys/fs/cgroup/memory/box/memory.usage_in_bytes", "7000\n");
  avail = AvailableHostMemory(env);
  ASSERT_OK(avail);
  EXPECT_EQ(*avail, 0u) << "v1: usage past the limit leaves nothing";
  env.Set("/proc/meminfo", "MemTotal: 1 kB\n");
  EXPECT_FALSE(AvailableHostMemory(env).ok()) << "no MemAvailable: unknown, not 0";
}

}  // namespace
}  // namespace ki::harness
