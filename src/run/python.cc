// Finding python3 and torch for Python implementations; their files on disk.
#include "run/python.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>

#include "json/fields.h"
#include "run/process.h"

namespace ki::run::internal {
namespace {

namespace fs = std::filesystem;

// Prints one line, after a marker, that FindPython reads: what the
// interpreter is and what it can import. torch and triton are imported
// here once, so that a missing one is said before anything is run.
constexpr const char* kProbe = R"PY(
import json, sys, sysconfig
out = {'executable': sys.executable, 'version': sys.version.split()[0], 'base_prefix': sys.base_prefix,
       'path': [p for p in sys.path if p], 'libdir': sysconfig.get_config_var('LIBDIR') or '',
       'ldlibrary': sysconfig.get_config_var('LDLIBRARY') or '',
       'instsoname': sysconfig.get_config_var('INSTSONAME') or '',
       'multiarch': sysconfig.get_config_var('MULTIARCH') or ''}
try:
    import torch
    out['torch'] = torch.__version__
except BaseException as e:
    out['torch_error'] = '%s: %s' % (type(e).__name__, e)
try:
    import triton
    out['triton'] = triton.__version__
except BaseException as e:
    out['triton_error'] = '%s: %s' % (type(e).__name__, e)
print('KI-PYTHON-PROBE ' + json.dumps(out))
)PY";

std::string PythonCommand() {
  const char* e = std::getenv("KI_PYTHON");
  return e && *e ? std::string(e) : "python3";
}

}  // namespace

Result<PythonFacts> FindPython(Env& env_ref, const std::string& scratch, bool need_triton) {
  Env* env = &env_ref;
  const std::string python = PythonCommand();
  const std::string log = scratch + "/python-probe-" + std::to_string(::getpid()) + ".log";
  (void)env->RemoveFile(log);
  auto end = RunCommand({python, "-c", kProbe}, log, "", 120);
  auto text = env->ReadFile(log, 4 << 20);
  (void)env->RemoveFile(log);
  const std::string who = python + (python == "python3" ? " (on PATH; KI_PYTHON names another)" : " (KI_PYTHON)");
  if (!end.ok() || !text.ok()) return Status::NotFound("Python: cannot run " + who);
  const size_t p = text->rfind("KI-PYTHON-PROBE ");
  if (end->exit_code != 0 || p == std::string::npos) {
    std::string last = *text;
    while (!last.empty() && (last.back() == '\n' || last.back() == '\r')) last.pop_back();
    if (size_t nl = last.rfind('\n'); nl != std::string::npos) last = last.substr(nl + 1);
    return Status::NotFound("Python: cannot run " + who + " (" + end->Describe() + (last.empty() ? "" : ": " + last) +
                            ")");
  }
  const std::string line = text->substr(p + 16, text->find('\n', p) - p - 16);
  Json j = Json::parse(line, nullptr, false);
  if (!j.is_object()) return Status::NotFound("Python: " + who + " printed an unreadable probe line");
  PythonFacts f;
  f.executable = StringOr(j, "executable");
  f.version = StringOr(j, "version");
  f.torch = StringOr(j, "torch");
  f.triton = StringOr(j, "triton");
  const std::string at = f.executable + " (Python " + f.version + ")";
  if (f.torch.empty())
    return Status::NotFound("Python: " + at + " cannot import torch (" + StringOr(j, "torch_error") +
                            "); Debian: apt-get install python3-torch, or set KI_PYTHON to a python3 that has it");
  if (need_triton && f.triton.empty())
    return Status::NotFound("Python: " + at + " cannot import triton (" + StringOr(j, "triton_error") +
                            "), which a Triton implementation needs");
  // The shared library to embed: where sysconfig says it was installed,
  // then the usual places of Debian's and of relocatable builds.
  const std::string libdir = StringOr(j, "libdir"), base = StringOr(j, "base_prefix");
  std::vector<std::string> candidates;
  for (const std::string& name : {StringOr(j, "instsoname"), StringOr(j, "ldlibrary")}) {
    if (name.empty() || name.find(".so") == std::string::npos) continue;
    if (!libdir.empty()) candidates.push_back(libdir + "/" + name);
    if (!StringOr(j, "multiarch").empty()) candidates.push_back("/usr/lib/" + StringOr(j, "multiarch") + "/" + name);
    if (!base.empty()) candidates.push_back(base + "/lib/" + name);
  }
  for (const auto& c : candidates) {
    if (env->Exists(c)) {
      f.runtime.library = c;
      break;
    }
  }
  if (f.runtime.library.empty()) {
    std::string tried;
    for (const auto& c : candidates) tried += (tried.empty() ? "" : ", ") + c;
    return Status::NotFound("Python: " + at + " has no shared libpython for ki to load (looked for " +
                            (tried.empty() ? std::string("none: the interpreter is built without one") : tried) +
                            "); Debian: apt-get install libpython" +
                            f.version.substr(0, f.version.rfind('.')));
  }
  f.runtime.home = base;
  for (const auto& e : j.value("path", Json::array()))
    if (e.is_string()) f.runtime.path.push_back(e.get<std::string>());
  return f;
}

Result<PythonEntry> PythonEntryOf(const Json& callable, bool fallback_dps) {
  PythonEntry e;
  e.file = StringOr(callable, "path");
  e.function = StringOr(callable, "symbol", "run");
  if (e.file.empty()) return Status::InvalidInput("the implementation's callable names no entry file (`path`)");
  if (e.file.size() < 4 || e.file.compare(e.file.size() - 3, 3, ".py") != 0)
    return Status::InvalidInput("the entry file " + e.file + " is not a .py file");
  const std::string iface = StringOr(callable, "interface");
  e.destination_passing = iface == kInterfaceDps ? true : iface == kInterfaceReturning ? false : fallback_dps;
  return e;
}

Result<std::string> MaterializeSources(Env& env, const std::string& cache_dir, const Digest& source,
                                       const SourceBundle& b) {
  const std::string dir = cache_dir + "/py/" + source.hex();
  if (env.IsDirectory(dir)) return dir;
  const std::string tmp = dir + ".tmp-" + std::to_string(::getpid());
  KI_RETURN_IF_ERROR(env.RemoveTree(tmp));
  for (const auto& [path, bytes] : b.files) {
    // DecodeBundle and the import refuse paths that leave the tree.
    const fs::path p = fs::path(tmp) / path;
    KI_RETURN_IF_ERROR(env.CreateDirs(p.parent_path().string()));
    KI_RETURN_IF_ERROR(env.WriteFileAtomic(p.string(), bytes, Durability::kNone));
  }
  if (Status st = env.Rename(tmp, dir); !st.ok()) {
    (void)env.RemoveTree(tmp);
    if (!env.IsDirectory(dir)) return st;  // else another run put it there first
  }
  return dir;
}

}  // namespace ki::run::internal
