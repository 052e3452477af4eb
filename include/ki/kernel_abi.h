/* ki kernel ABI, version 1: how ki calls a kernel it runs.
 *
 * Plain C, no CUDA types, so that host code (and kernels written in any
 * language that can export C symbols) can use it. docs/kernel-abi.md is the
 * specification; this header is its machine-readable half.
 *
 * Destination-passing: the caller owns every buffer. It passes tensor
 * descriptors for the inputs and for preallocated outputs, a stream and an
 * optional workspace; the kernel enqueues its work and returns a status code.
 * A kernel never allocates, frees, synchronizes or copies to the host inside
 * `run`, so that a call can be timed and captured into a CUDA graph.
 *
 * Thread-safety: a ki_kernel table is immutable; `run` may be called from
 * several threads only if the kernel says so in its description.
 */
#ifndef KI_KERNEL_ABI_H_
#define KI_KERNEL_ABI_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define KI_ABI_VERSION 1u
#define KI_MAX_DIMS 8

/* Element types. Values are part of the ABI: never renumber. */
typedef enum ki_dtype {
  KI_DTYPE_INVALID = 0,
  KI_DTYPE_BF16 = 1,
  KI_DTYPE_F16 = 2,
  KI_DTYPE_F32 = 3,
  KI_DTYPE_F64 = 4,
  KI_DTYPE_I32 = 5,
  KI_DTYPE_I64 = 6,
  KI_DTYPE_U8 = 7,
  KI_DTYPE_BOOL = 8,
  KI_DTYPE_F8_E4M3 = 9,
  KI_DTYPE_F8_E5M2 = 10
} ki_dtype;

/* Where a tensor's bytes live. */
typedef enum ki_device_kind {
  KI_DEVICE_CPU = 1,  /* host memory */
  KI_DEVICE_CUDA = 2  /* device memory of the current CUDA device */
} ki_device_kind;

/* Status codes returned by every ABI function. */
typedef enum ki_status {
  KI_OK = 0,
  KI_ERR_INVALID_ARGUMENT = 1,   /* shapes, dtypes or counts do not fit the definition */
  KI_ERR_UNSUPPORTED = 2,        /* valid, but this kernel cannot run it (device, size) */
  KI_ERR_WORKSPACE_TOO_SMALL = 3,
  KI_ERR_LAUNCH = 4,             /* the device refused the launch */
  KI_ERR_ABI_VERSION = 5,        /* caller and kernel disagree on KI_ABI_VERSION */
  KI_ERR_INTERNAL = 6
} ki_status;

/* A dense, row-major tensor. A scalar has ndim 0 and its value always lives
 * in host memory (device KI_DEVICE_CPU), whatever device the kernel runs on,
 * so that reading it needs no device round trip. */
typedef struct ki_tensor {
  const char* name; /* the definition's input or output name; for messages */
  void* data;
  int32_t dtype;    /* ki_dtype */
  int32_t device;   /* ki_device_kind */
  int32_t ndim;
  int32_t reserved; /* zero */
  int64_t shape[KI_MAX_DIMS];
} ki_tensor;

/* One call. Inputs and outputs come in the order the definition lists them. */
typedef struct ki_call {
  uint32_t abi_version;  /* KI_ABI_VERSION */
  uint32_t struct_size;  /* sizeof(ki_call) */
  const ki_tensor* inputs;
  int32_t num_inputs;
  int32_t num_outputs;
  const ki_tensor* outputs; /* preallocated by the caller; the kernel writes every element */
  void* stream;             /* cudaStream_t for CUDA kernels (NULL: the legacy default stream) */
  void* workspace;          /* device memory of workspace_size() bytes, see below */
  uint64_t workspace_bytes;
  char* error;              /* optional: a message buffer the kernel may fill, NUL-terminated */
  uint32_t error_capacity;
  uint32_t reserved;
} ki_call;

/* What a kernel is. Strings are static. */
typedef struct ki_kernel_info {
  uint32_t abi_version; /* KI_ABI_VERSION the kernel was built against */
  int32_t device;       /* ki_device_kind the kernel runs on */
  const char* name;     /* unique, e.g. "ki.gqa_paged_decode.fast" */
  const char* definition; /* the definition it implements, e.g. "gqa_paged_decode_h32_kv4_d128_ps1" */
  const char* description;
} ki_kernel_info;

/* A kernel's function table.
 *
 * workspace_size (may be NULL: no workspace): bytes of device scratch the
 *   kernel needs for these shapes (call->workspace is ignored). It may depend
 *   on shapes and on the device, never on tensor contents. The caller
 *   allocates it once, fills it with zero bytes once, never writes it
 *   afterwards, and passes it to every later call with the same shapes; two
 *   calls in flight at once never share one. The kernel owns its contents
 *   between calls and must leave it reusable (e.g. reset its counters to
 *   zero itself), so that no memset is ever needed between calls.
 * run: enqueues the computation on call->stream and returns. Returns KI_OK or
 *   an error code (and, if call->error is set, a message). Errors that occur
 *   asynchronously on the device surface on the caller's next synchronize. */
typedef struct ki_kernel {
  ki_kernel_info info;
  int32_t (*workspace_size)(const ki_call* call, uint64_t* bytes);
  int32_t (*run)(const ki_call* call);
} ki_kernel;

/* The symbol a shared library of kernels exports (found with dlsym):
 *   const ki_kernel* ki_kernel_get(uint32_t abi_version, int32_t index);
 * returns the index-th kernel of the library (0, 1, ...) or NULL past the
 * last one, or NULL for every index when abi_version is not supported. */
#define KI_KERNEL_ENTRY_SYMBOL "ki_kernel_get"
typedef const ki_kernel* (*ki_kernel_get_fn)(uint32_t abi_version, int32_t index);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* KI_KERNEL_ABI_H_ */
