// Memory policy of the `ki` process: start-up memory mapped in one go, and a
// huge-page heap for the commands that hold a whole catalog in memory.
//
// Why: a `ki show` or `ki resolve` is a few milliseconds of work, and on the
// virtual machines ki runs on (CI runners, cloud VMs) each first touch of a
// page is a fault costing 20-35 µs (measured: bench/results/store-*.md). A
// show touched ~60 pages of heap, writable data and bss one fault at a time,
// more than a millisecond. MADV_POPULATE_WRITE maps the same pages in one
// system call for about 1 µs each. Only the process's own fresh memory is
// touched; nothing here is needed for correctness, and every step is skipped
// where the kernel (< 5.14) or libc does not offer it.
#include <dlfcn.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "command.h"

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif

// Linker-provided bounds of the writable data and bss of a non-PIE binary.
extern "C" char __data_start[];  // NOLINT
extern "C" char _end[];          // NOLINT

namespace {

constexpr uintptr_t kPage = 4096;
// Heap a short command uses (measured 0.3-1.2 MiB for `ki show` / `ki rank`
// on the imported KernelIndex catalog; populating costs ~0.25 ms per MiB);
// a bigger one grows past it with ordinary faults.
constexpr size_t kHeapReserve = 1024 * 1024;

// Whether malloc is glibc's (mimalloc, preloaded by UseBigHeap, defines
// mi_version): the heap steps below are glibc's.
bool GlibcMalloc() { return ::dlsym(RTLD_DEFAULT, "mi_version") == nullptr; }

void Populate(uintptr_t begin, uintptr_t end) {
  begin &= ~(kPage - 1);
  end = (end + kPage - 1) & ~(kPage - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_POPULATE_WRITE);
}

// Priority 101 runs before every ordinary static constructor (iostreams,
// CLI11's validators, command registration), which are what touch the
// memory first.
__attribute__((constructor(101))) void PrefaultStartupMemory() {
  Populate(reinterpret_cast<uintptr_t>(__data_start), reinterpret_cast<uintptr_t>(_end));
  if (!GlibcMalloc()) return;
  // Mid-size blocks (zstd contexts, object buffers) from the heap rather
  // than from one fresh mmap each, and the heap grown once by the reserve.
  ::mallopt(M_MMAP_THRESHOLD, 4 << 20);
  ::mallopt(M_TOP_PAD, kHeapReserve);
  ::mallopt(M_TRIM_THRESHOLD, 8 << 20);
  void* probe = ::malloc(16);
  uintptr_t heap_begin = reinterpret_cast<uintptr_t>(probe);
  uintptr_t heap_end = reinterpret_cast<uintptr_t>(::sbrk(0));
  if (probe && heap_end > heap_begin && heap_end - heap_begin <= 2 * kHeapReserve) Populate(heap_begin, heap_end);
  ::free(probe);
}

}  // namespace

namespace ki::cli {

// `ki import` of the KernelIndex export holds ~340 MiB at its peak, and it,
// `ki audit` and the other whole-store commands make millions of small,
// short-lived blocks (a JSON tree per manifest, a string per key). Two
// remedies, both needing a fresh process (an allocator and glibc's tunables
// are chosen at process start), hence the one re-exec (a few ms on a
// command of seconds):
// - mimalloc (Debian's libmimalloc2.0), preloaded: with glibc's malloc,
//   malloc/free/consolidation were ~20% of audit's and import's profiles;
//   with mimalloc both take ~15% less CPU (bench/catalog/malloc_ab.sh,
//   bench/results/malloc-2026-12-02.md). It is not linked into ki: loading
//   it and faulting in its first segment cost every short command ~0.7 ms
//   (~85 page faults), a quarter of a `ki show`. The library's path is
//   the one CMake found at build time (KI_MIMALLOC_LIBRARY); when that file
//   is not there (a binary copied to another machine) or KI_MALLOC=system
//   is set, the command runs on glibc's malloc as below.
// - Otherwise glibc's malloc backs its main heap with transparent huge
//   pages (the glibc.malloc.hugetlb tunable, glibc >= 2.35; it only advises,
//   so systems without THP are unaffected): ~68,000 page faults of the
//   import become ~41,000, 10-25% less CPU. (Forcing one arena,
//   glibc.malloc.arena_max=1, removes the worker threads' faults too but
//   serialises their allocations: 40% more CPU when both cores are free.)
// The caller's LD_PRELOAD and GLIBC_TUNABLES are restored in the
// re-executed process, so that nothing ki starts (a compiler, Python, sbatch)
// inherits ours.
namespace {

constexpr const char* kReexecMarker = "KI_HEAP_REEXEC";  // set: this is the re-executed process
constexpr const char* kOverridden[] = {"LD_PRELOAD", "GLIBC_TUNABLES"};

std::string SavedName(const char* name) { return std::string("KI_SAVED_") + name; }

// The caller's value of each variable UseBigHeap may change, kept for
// RestoreEnvironment (absent: the caller had none).
void SaveEnvironment() {
  for (const char* name : kOverridden) {
    if (const char* old = std::getenv(name); old && *old) ::setenv(SavedName(name).c_str(), old, 1);
  }
}

// `item` first in the `sep`-separated variable `name`.
void Prepend(const char* name, const std::string& item, char sep) {
  std::string value = item;
  if (const char* old = std::getenv(name); old && *old) {
    value += sep;
    value += old;
  }
  ::setenv(name, value.c_str(), 1);
}

// Ours last in the `sep`-separated variable `name` (glibc reads tunables
// left to right: the last one wins).
void Append(const char* name, const std::string& item, char sep) {
  std::string value;
  if (const char* old = std::getenv(name); old && *old) {
    value = old;
    value += sep;
  }
  value += item;
  ::setenv(name, value.c_str(), 1);
}

void RestoreEnvironment() {
  for (const char* name : kOverridden) {
    const std::string saved = SavedName(name);
    if (const char* old = std::getenv(saved.c_str())) {
      ::setenv(name, old, 1);
    } else {
      ::unsetenv(name);
    }
    ::unsetenv(saved.c_str());
  }
  ::unsetenv(kReexecMarker);
}

// The mimalloc library to preload, or "" to keep glibc's malloc.
std::string MimallocLibrary() {
#ifdef KI_MIMALLOC_LIBRARY
  if (const char* m = std::getenv("KI_MALLOC"); m && std::string_view(m) == "system") return "";
  if (::access(KI_MIMALLOC_LIBRARY, R_OK) == 0) return KI_MIMALLOC_LIBRARY;
#endif
  return "";
}

}  // namespace

void UseBigHeap(char** argv) {
  if (std::getenv(kReexecMarker) != nullptr) {
    RestoreEnvironment();
    return;
  }
  SaveEnvironment();
  if (std::string lib = MimallocLibrary(); !lib.empty()) {
    Prepend("LD_PRELOAD", lib, ':');
  } else {
    Append("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", ':');
  }
  ::setenv(kReexecMarker, "1", 1);
  ::execv("/proc/self/exe", argv);
  // No /proc, or exec refused: run as we are, with the environment as it was.
  RestoreEnvironment();
}

}  // namespace ki::cli
