// What ki run and ki rerun look up before anything runs: manifests of a
// kind, the harness's view of a workload (Task), the device. Internal to
// src/run.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "ki/harness.h"
#include "ki/manifest.h"
#include "ki/run.h"
#include "ki/store.h"

namespace ki::run::internal {

// The schemas' maxLength for metadata.name and metadata.title.
inline constexpr size_t kMaxNameBytes = 200;

// The manifest `d`, which must be of `kind` (`ref` is what the user typed,
// for the message).
Result<Manifest> ReadKind(Store& store, const Digest& d, Kind kind, std::string_view ref);
// `ref` resolved, checked to be a `kind`, its manifest in `*m`.
Result<Digest> ResolveKind(Store& store, std::string_view ref, Kind kind, Manifest* m);
// The name the object's document gives, else "".
std::string NameOf(Store& store, const Digest& d);
std::string Lower(std::string s);

// What the harness needs about a workload: the definition and the workload
// in flashinfer-bench's form, and which inputs ki generates for lack of files.
struct Task {
  harness::Definition def;
  harness::Workload workload;
  Json workload_spec;
  std::vector<std::string> generated;  // inputs the dataset stores as files ki does not have
};

// The definition an operation was imported from, and the workload in the
// harness's form (from the imported workload object, else rebuilt from the
// WorkloadCase, which says the same: axes, scalars and generators). What
// the store lacks for it is appended to `*missing` (and NotFound returned).
Result<Task> LoadTask(Store& store, const Digest& workload, const Manifest& wm, std::vector<std::string>* missing);

struct Device {
  bool cuda = false;
  int index = 0;
  std::string str() const { return cuda ? "cuda:" + std::to_string(index) : "cpu"; }
};

// --device for an implementation of `lang` ("" gives the language's default).
Result<Device> ParseDevice(const std::string& text, Language lang);

}  // namespace ki::run::internal
