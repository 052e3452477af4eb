// Building an implementation into a shared library, cached by what decides
// the bytes of the result: source digest, compiler version, flags, targets.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "ki/digest.h"
#include "ki/env.h"
#include "ki/run.h"
#include "run/process.h"
#include "run/python.h"

namespace ki::run {
namespace {

namespace fs = std::filesystem;

std::string EnvOr(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

std::string FindNvcc() {
  std::string n = EnvOr("KI_NVCC", "");
  if (!n.empty()) return n;
  // PATH first, then the toolkit's usual home.
  if (const char* path = std::getenv("PATH")) {
    std::string p = path;
    size_t s = 0;
    while (s <= p.size()) {
      size_t e = p.find(':', s);
      if (e == std::string::npos) e = p.size();
      std::string cand = p.substr(s, e - s) + "/nvcc";
      if (::access(cand.c_str(), X_OK) == 0) return cand;
      s = e + 1;
    }
  }
  if (::access("/usr/local/cuda/bin/nvcc", X_OK) == 0) return "/usr/local/cuda/bin/nvcc";
  return "nvcc";
}

// The digest of a file, read a piece at a time (a CUDA library for a few
// architectures is tens of MiB; nothing needs it whole in memory).
Result<Digest> HashFile(Env& env, const std::string& path) {
  KI_ASSIGN_OR_RETURN(auto file, env.NewSequentialFile(path));
  Sha256 hash;
  std::string buf(1 << 20, '\0');
  for (;;) {
    KI_ASSIGN_OR_RETURN(size_t n, file->Read(buf.data(), buf.size()));
    if (n == 0) break;
    hash.Update(std::string_view(buf.data(), n));
  }
  return hash.Finish();
}

// The `ok` marker: the compiler's version line, then the digest of
// libkernel.so. Written last, after everything it vouches for is synced.
std::string OkMarker(const std::string& compiler, const Digest& library) {
  return compiler + "\n" + library.str() + "\n";
}

// Whether `dir` is a whole cache entry: an `ok` marker that reads exactly
// as this build would write it, naming the library that is there. A power
// loss could leave an entry without its marker, with an empty or partial
// one, or (before markers carried the digest) with a truncated library.
bool EntryIsWhole(Env& env, const std::string& dir, const std::string& compiler) {
  auto ok = env.ReadFile(dir + "/ok", 64 << 10);
  if (!ok.ok()) return false;
  auto lib = HashFile(env, dir + "/libkernel.so");
  return lib.ok() && *ok == OkMarker(compiler, *lib);
}

std::string Joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

namespace internal {
std::string ToolchainLine(Env& env, bool cuda) {
  if (cuda) {
    std::string line = FirstLineOf(env, {FindNvcc(), "--version"}, "release");
    return line.empty() ? "nvcc (not found)" : line;
  }
  const std::string cxx = EnvOr("CXX", "c++");
  std::string line = FirstLineOf(env, {cxx, "--version"});
  return line.empty() ? cxx + " (not found)" : line;
}
}  // namespace internal

Result<BuildResult> Build(Env& env, const std::string& cache_dir, const BuildRequest& req) {
  BuildResult out;
  std::string compiler;
  std::vector<std::string> flags;
  if (req.language == Language::kCuda) {
    compiler = FindNvcc();
    out.compiler = internal::FirstLineOf(env, {compiler, "--version"}, "release");
    if (out.compiler.empty()) out.compiler = "nvcc (not found)";
    flags = {"-std=c++17", "-O3", "--expt-relaxed-constexpr", "-Xcompiler", "-fPIC", "-shared", "-cudart", "static"};
    for (const auto& a : req.archs) flags.push_back("-gencode=arch=compute_" + a + ",code=sm_" + a);
  } else {
    compiler = EnvOr("CXX", "c++");
    out.compiler = internal::FirstLineOf(env, {compiler, "--version"});
    if (out.compiler.empty()) out.compiler = compiler + " (not found)";
    flags = {"-std=c++17", "-O2", "-fPIC", "-shared"};
  }
  Json keyj = {{"v", 1}, {"source", req.source_digest.str()}, {"compiler", out.compiler},
               {"flags", flags}, {"language", LanguageName(req.language)}};
  KI_ASSIGN_OR_RETURN(std::string keytext, Canonicalize(keyj));
  out.key = Sha256Of(keytext).hex();
  const std::string dir = cache_dir + "/build/" + out.key;
  const std::string lib = dir + "/libkernel.so";
  auto cached = [&] {
    out.ok = true;
    out.cached = true;
    out.library = lib;
    out.log = internal::ReadLog(env, dir + "/build.log", internal::kMaxStoredLogBytes);
    auto cmd = env.ReadFile(dir + "/command", 1 << 20);
    out.command = cmd.ok() ? *cmd : "";
    return out;
  };
  if (EntryIsWhole(env, dir, out.compiler)) return cached();
  // Build in a private directory, then rename it into place: a concurrent
  // build of the same key, or an interrupted one, never leaves half a cache entry.
  const std::string tmp = cache_dir + "/build/tmp-" + out.key.substr(0, 16) + "-" + std::to_string(::getpid());
  KI_RETURN_IF_ERROR(env.RemoveTree(tmp));
  if (env.Exists(dir)) {
    if (EntryIsWhole(env, dir, out.compiler)) return cached();  // another ki run just built it
    // An entry that is not whole (see EntryIsWhole) is discarded and built
    // again: left in place, it made every later rename onto it fail until
    // .ki/cache/build was deleted by hand. Moved aside under this build's
    // temporary name first: the rename is atomic, so of two ki runs finding
    // it only one moves it, and what a killed ki leaves there is swept
    // with its other leftovers (RemoveLeftovers in run.cc).
    if (env.Rename(dir, tmp).ok()) KI_RETURN_IF_ERROR(env.RemoveTree(tmp));
  }
  KI_RETURN_IF_ERROR(env.CreateDirs(tmp + "/src"));
  for (const auto& [path, bytes] : req.sources.files) {
    fs::path p = fs::path(tmp) / "src" / path;
    KI_RETURN_IF_ERROR(env.CreateDirs(p.parent_path().string()));
    KI_RETURN_IF_ERROR(env.WriteFileAtomic(p.string(), bytes, Durability::kNone));
  }
  std::vector<std::string> argv = {compiler};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.push_back("-I");
  argv.push_back("src");
  for (const auto& u : req.sources.units) argv.push_back("src/" + u);
  argv.push_back("-o");
  argv.push_back("libkernel.so");
  out.command = Joined(argv);
  KI_RETURN_IF_ERROR(env.WriteFileAtomic(tmp + "/command", out.command, Durability::kSync));
  const std::string log_path = tmp + "/build.log";
  KI_ASSIGN_OR_RETURN(internal::ProcessEnd end, internal::RunCommand(argv, log_path, tmp, req.timeout_s));
  out.log = internal::ReadLog(env, log_path, internal::kMaxStoredLogBytes);
  if (end.timed_out || end.signaled || end.exit_code != 0) {
    out.log += "ki: compiler " + end.Describe() + "\n";
    (void)env.RemoveTree(tmp);  // a failed build is not kept; its log is in `out`
    return out;
  }
  // Durable before the marker, the marker before the rename: after a power
  // loss an entry is whole or has no valid marker, never a marker that
  // vouches for a library or log the disk never got. The compiler wrote
  // libkernel.so outside Env: it is synced where it is (Env::SyncFile), then
  // hashed. The log is written again through Env, synced, as stored (what
  // ReadLog kept of it: head and tail past the cap).
  KI_RETURN_IF_ERROR(env.SyncFile(tmp + "/libkernel.so"));
  KI_ASSIGN_OR_RETURN(Digest library, HashFile(env, tmp + "/libkernel.so"));
  KI_RETURN_IF_ERROR(env.WriteFileAtomic(log_path, out.log, Durability::kSync));
  KI_RETURN_IF_ERROR(env.SyncDir(tmp));
  KI_RETURN_IF_ERROR(env.WriteFileAtomic(tmp + "/ok", OkMarker(out.compiler, library), Durability::kSync));
  KI_RETURN_IF_ERROR(env.SyncDir(tmp));
  if (Status moved = env.Rename(tmp, dir); moved.ok()) {
    KI_RETURN_IF_ERROR(env.SyncDir(cache_dir + "/build"));
  } else {
    (void)env.RemoveTree(tmp);  // another process won the race: use its build
    if (!EntryIsWhole(env, dir, out.compiler))
      return Status::IOError("cannot move the build into " + dir + ": " + moved.message());
  }
  out.ok = true;
  out.library = lib;
  return out;
}

}  // namespace ki::run
