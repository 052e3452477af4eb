// Python functions as ki_kernels (harness.h, "Python kernels") and finding
// python3 with torch (src/run/python.h), on the CPU. Needs python3 with torch
// (Debian: python3-torch): skipped, saying so, only when torch is absent.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "ki/harness.h"
#include "run/python.h"

namespace ki::run::internal {
namespace {

namespace fs = std::filesystem;

// The python3 with torch, as ki finds it: KI_PYTHON, python3 on PATH, then
// Debian's own (a development machine's PATH may name another python3).
std::optional<PythonFacts> Python(std::string* why) {
  const fs::path scratch = fs::temp_directory_path();
  const char* set = std::getenv("KI_PYTHON");
  for (const char* c : {set, "python3", "/usr/bin/python3"}) {
    if (!c || !*c) continue;
    ::setenv("KI_PYTHON", c, 1);
    auto f = FindPython(*Env::Default(), scratch.string(), false);
    if (f.ok()) return *f;
    *why += f.status().message() + "\n";
  }
  return std::nullopt;
}

class PythonKernelTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    std::string why;
    facts_ = new std::optional<PythonFacts>(Python(&why));
    if (!facts_->has_value()) skip_ = why;
    dir_ = new fs::path(fs::temp_directory_path() / ("ki-python-test-" + std::to_string(::getpid())));
    fs::create_directories(*dir_ / "pkg");
    std::ofstream(*dir_ / "pkg" / "__init__.py") << "";
    std::ofstream(*dir_ / "pkg" / "funcs.py")
        << "import torch\n"
           "def scale(x, s, y):\n"
           "    y.copy_(x * s)\n"
           "def where(x, s, y):\n"
           "    y[0] = float(x.data_ptr())\n"   // the address torch sees
           "    y[1] = float(y.data_ptr())\n"
           "def returns(x, s):\n"
           "    return x * s\n"
           "def wrong_dtype(x, s):\n"
           "    return (x * s).double()\n"
           "def wrong_count(x, s):\n"
           "    return x, x\n"
           "def raises(x, s, y):\n"
           "    raise RuntimeError('planted')\n";
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    fs::remove_all(*dir_, ec);
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << "no python3 with torch (apt-get install python3-torch): " << skip_;
  }
  // y = f(x, s) on x = [1, 2, 3, 4], s = 0.5, through the kernel ABI.
  int32_t Call(const std::string& function, bool dps, std::vector<float>* y, std::string* error,
               const float** x_data = nullptr) {
    harness::PythonKernelSpec spec;
    spec.name = "test." + function;
    spec.definition = "scale_f32";
    spec.source_dir = dir_->string();
    spec.entry_file = "pkg/funcs.py";
    spec.function = function;
    spec.destination_passing = dps;
    auto def = harness::ParseDefinition(
        R"({"name": "scale_f32", "op_type": "test", "axes": {"n": {"type": "var"}},
            "inputs": {"x": {"shape": ["n"], "dtype": "float32"}, "s": {"shape": null, "dtype": "float32"}},
            "outputs": {"y": {"shape": ["n"], "dtype": "float32"}}, "reference": ""})",
        "test");
    EXPECT_TRUE(def.ok()) << def.status().message();
    auto k = harness::LoadPythonKernel((*facts_)->runtime, spec, *def);
    if (!k.ok()) {
      *error = k.status().message();
      return -1;
    }
    static float x[4] = {1, 2, 3, 4};
    static float s = 0.5f;
    if (x_data) *x_data = x;
    y->assign(4, -1.0f);
    ki_tensor in[2] = {}, out[1] = {};
    in[0] = {"x", x, KI_DTYPE_F32, KI_DEVICE_CPU, 1, 0, {4}};
    in[1] = {"s", &s, KI_DTYPE_F32, KI_DEVICE_CPU, 0, 0, {}};
    out[0] = {"y", y->data(), KI_DTYPE_F32, KI_DEVICE_CPU, 1, 0, {4}};
    char err[512] = {0};
    ki_call c{};
    c.abi_version = KI_ABI_VERSION;
    c.struct_size = sizeof c;
    c.inputs = in;
    c.num_inputs = 2;
    c.outputs = out;
    c.num_outputs = 1;
    c.error = err;
    c.error_capacity = sizeof err;
    const int32_t rc = (*k)->run(&c);
    *error = err;
    return rc;
  }
  static std::optional<PythonFacts>* facts_;
  static fs::path* dir_;
  static std::string skip_;
};
std::optional<PythonFacts>* PythonKernelTest::facts_ = nullptr;
fs::path* PythonKernelTest::dir_ = nullptr;
std::string PythonKernelTest::skip_;

TEST_F(PythonKernelTest, FindsTorchAndTheSharedLibrary) {
  EXPECT_FALSE((*facts_)->torch.empty());
  EXPECT_NE((*facts_)->runtime.library.find("libpython3"), std::string::npos) << (*facts_)->runtime.library;
  EXPECT_FALSE((*facts_)->runtime.path.empty());
}

TEST_F(PythonKernelTest, LoadErrorsSayWhat) {
  std::vector<float> y;
  std::string err;
  EXPECT_EQ(Call("no_such_function", true, &y, &err), -1);
  EXPECT_NE(err.find("pkg/funcs.py defines no function no_such_function"), std::string::npos) << err;
}

// One interpreter and 4 kernel slots per process: the kernels below take
// all four, in one test.
TEST_F(PythonKernelTest, BothStylesWithoutCopiesAndErrorsNamed) {
  std::vector<float> y;
  std::string err;
  // Destination passing writes the caller's buffer.
  ASSERT_EQ(Call("scale", true, &y, &err), KI_OK) << err;
  EXPECT_EQ(y, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  // torch sees the caller's own addresses: DLPack, no copy. (Float32 holds
  // an address only approximately: compared to within its rounding.)
  const float* x = nullptr;
  ASSERT_EQ(Call("where", true, &y, &err, &x), KI_OK) << err;
  const double xa = static_cast<double>(reinterpret_cast<uintptr_t>(x));
  const double ya = static_cast<double>(reinterpret_cast<uintptr_t>(y.data()));
  EXPECT_NEAR(y[0], xa, xa * 1e-6);
  EXPECT_NEAR(y[1], ya, ya * 1e-6);
  // Returning style: copied into the caller's output.
  ASSERT_EQ(Call("returns", false, &y, &err), KI_OK) << err;
  EXPECT_EQ(y, (std::vector<float>{0.5f, 1.0f, 1.5f, 2.0f}));
  // A returned dtype other than the definition's is the call's error, named.
  EXPECT_EQ(Call("wrong_dtype", false, &y, &err), KI_ERR_INTERNAL);
  EXPECT_NE(err.find("output y: returned torch.float64, the definition gives torch.float32"), std::string::npos)
      << err;
  // A fifth kernel in the process: refused, saying why.
  EXPECT_EQ(Call("raises", true, &y, &err), -1);
  EXPECT_NE(err.find("more than 4 Python kernels"), std::string::npos) << err;
}


}  // namespace
}  // namespace ki::run::internal
