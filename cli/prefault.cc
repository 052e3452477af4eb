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
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

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

// `ki import` of the KernelIndex export holds ~340 MiB at its peak. Touched
// 4 KiB at a time that is ~68,000 page faults, a large share of its CPU on
// the VMs measured here (bench/results/catalog-*.md). glibc's malloc can back
// its main heap with transparent huge pages (the glibc.malloc.hugetlb
// tunable, glibc >= 2.35; it only advises, so systems without THP are
// unaffected): ~41,000 faults, 10-25% less CPU. (Also forcing one arena,
// glibc.malloc.arena_max=1, removes the worker threads' faults too but
// serialises their allocations: 40% more CPU when both cores are free.)
// Tunables are read once at process start, hence the one re-exec (a few ms
// on a command of seconds). The caller's GLIBC_TUNABLES is restored in the
// re-executed process so that nothing ki starts inherits ours.
void UseHugePageHeap(char** argv) {
  constexpr const char* kMarker = "KI_HEAP_REEXEC";  // set: this is the re-executed process
  constexpr const char* kSaved = "KI_SAVED_GLIBC_TUNABLES";
  if (std::getenv(kMarker) != nullptr) {
    if (const char* saved = std::getenv(kSaved)) {
      ::setenv("GLIBC_TUNABLES", saved, 1);
    } else {
      ::unsetenv("GLIBC_TUNABLES");
    }
    ::unsetenv(kSaved);
    ::unsetenv(kMarker);
    return;
  }
  std::string tunables = "glibc.malloc.hugetlb=1";
  if (const char* old = std::getenv("GLIBC_TUNABLES"); old && *old) {
    ::setenv(kSaved, old, 1);
    tunables = std::string(old) + ":" + tunables;
  }
  ::setenv("GLIBC_TUNABLES", tunables.c_str(), 1);
  ::setenv(kMarker, "1", 1);
  ::execv("/proc/self/exe", argv);
  // No /proc, or exec refused: run as we are, with the environment as it was.
  UseHugePageHeap(argv);
}

}  // namespace ki::cli
