#include "runtime/cupti_trace.h"

#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <mutex>

#if KI_HAVE_CUPTI_HEADERS
#include <cupti_activity.h>
#include <cupti_result.h>
#endif

namespace ki::gpu::internal {

#if KI_HAVE_CUPTI_HEADERS
namespace {

struct Api {
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};

Api g_api;
std::mutex g_mu;                 // guards g_spans (CUPTI calls back from its own thread)
std::vector<KernelSpan> g_spans;
constexpr size_t kBufferBytes = 8u << 20;

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI BufferCompleted(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  std::vector<KernelSpan> got;
  while (g_api.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
    if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
      // start/end/name sit at the same offsets in every version of the kernel record.
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      got.push_back({k->name ? k->name : "", k->start, k->end});
    }
  }
  free(buffer);
  std::lock_guard<std::mutex> lock(g_mu);
  g_spans.insert(g_spans.end(), got.begin(), got.end());
}

std::string ResultText(CUptiResult r) {
  const char* s = nullptr;
  if (g_api.result_string && g_api.result_string(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

void* OpenLibrary() {
  std::vector<std::string> names = {"libcupti.so.13", "libcupti.so", "libcupti.so.12"};
  for (const char* env : {"CUDA_HOME", "CUDA_PATH"}) {
    if (const char* root = getenv(env)) {
      names.push_back(std::string(root) + "/extras/CUPTI/lib64/libcupti.so");
      names.push_back(std::string(root) + "/lib64/libcupti.so");
    }
  }
  names.push_back("/usr/local/cuda/extras/CUPTI/lib64/libcupti.so");
  names.push_back("/usr/local/cuda/lib64/libcupti.so");
  for (const std::string& n : names)
    if (void* h = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL)) return h;
  return nullptr;
}

}  // namespace

CuptiTrace* CuptiTrace::Get(std::string* why) {
  static std::once_flag once;
  static CuptiTrace* instance = nullptr;
  static std::string failure;
  std::call_once(once, [] {
    if (getenv("KI_DISABLE_CUPTI")) {
      failure = "CUPTI disabled by KI_DISABLE_CUPTI";
      return;
    }
    void* h = OpenLibrary();
    if (!h) {
      failure = "libcupti not found";
      return;
    }
    Api api;
    api.enable = reinterpret_cast<decltype(api.enable)>(dlsym(h, "cuptiActivityEnable"));
    api.disable = reinterpret_cast<decltype(api.disable)>(dlsym(h, "cuptiActivityDisable"));
    api.register_callbacks =
        reinterpret_cast<decltype(api.register_callbacks)>(dlsym(h, "cuptiActivityRegisterCallbacks"));
    api.flush_all = reinterpret_cast<decltype(api.flush_all)>(dlsym(h, "cuptiActivityFlushAll"));
    api.next_record = reinterpret_cast<decltype(api.next_record)>(dlsym(h, "cuptiActivityGetNextRecord"));
    api.result_string = reinterpret_cast<decltype(api.result_string)>(dlsym(h, "cuptiGetResultString"));
    if (!api.enable || !api.disable || !api.register_callbacks || !api.flush_all || !api.next_record) {
      failure = "libcupti lacks the activity API";
      return;
    }
    g_api = api;
    const CUptiResult r = g_api.register_callbacks(BufferRequested, BufferCompleted);
    if (r != CUPTI_SUCCESS) {
      failure = "cuptiActivityRegisterCallbacks: " + ResultText(r);
      return;
    }
    instance = new CuptiTrace();
  });
  if (!instance && why) *why = failure;
  return instance;
}

bool CuptiTrace::Start(std::string* why) {
  g_api.flush_all(1);
  {
    std::lock_guard<std::mutex> lock(g_mu);
    g_spans.clear();
  }
  const CUptiResult r = g_api.enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    if (why) *why = "cuptiActivityEnable: " + ResultText(r);
    return false;
  }
  return true;
}

bool CuptiTrace::Stop(std::vector<KernelSpan>* spans, std::string* why) {
  const CUptiResult r = g_api.flush_all(1);
  g_api.disable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    if (why) *why = "cuptiActivityFlushAll: " + ResultText(r);
    return false;
  }
  std::lock_guard<std::mutex> lock(g_mu);
  *spans = std::move(g_spans);
  g_spans.clear();
  std::sort(spans->begin(), spans->end(),
            [](const KernelSpan& a, const KernelSpan& b) { return a.start_ns < b.start_ns; });
  return true;
}

#else  // no CUPTI headers at build time

CuptiTrace* CuptiTrace::Get(std::string* why) {
  if (why) *why = "built without CUPTI headers";
  return nullptr;
}
bool CuptiTrace::Start(std::string*) { return false; }
bool CuptiTrace::Stop(std::vector<KernelSpan>*, std::string*) { return false; }

#endif

}  // namespace ki::gpu::internal
