// Python functions as ki_kernels: the interpreter loaded with dlopen, tensors
// handed over as DLPack capsules (harness.h, "Python kernels").
#include <dlfcn.h>
#include <stdlib.h>
#include <sys/types.h>

#include <cstdio>
#include <algorithm>
#include <cstring>
#include <list>
#include <mutex>

#include "ki/harness.h"

namespace ki::harness {
namespace {

// ------------------------------------------------------------- DLPack
// The DLPack ABI (dlpack.h, v0.8 "DLManagedTensor", the form every torch
// since 1.10 accepts in a capsule named "dltensor"); written out here from
// the specification so that ki needs no DLPack header.
struct DLDevice {
  int32_t device_type;  // kDLCPU 1, kDLCUDA 2
  int32_t device_id;
};
struct DLDataType {
  uint8_t code;  // kDLInt 0, kDLUInt 1, kDLFloat 2, kDLBfloat 4, kDLBool 6
  uint8_t bits;
  uint16_t lanes;
};
struct DLTensor {
  void* data;
  DLDevice device;
  int32_t ndim;
  DLDataType dtype;
  int64_t* shape;
  int64_t* strides;  // in elements
  uint64_t byte_offset;
};
struct DLManagedTensor {
  DLTensor dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManagedTensor* self);
};

// One tensor handed over: the managed tensor and the arrays it points to.
// The data stays the harness's; the deleter frees only this.
struct Handed {
  DLManagedTensor managed;
  int64_t shape[KI_MAX_DIMS];
  int64_t strides[KI_MAX_DIMS];
};
void DeleteHanded(DLManagedTensor* self) { delete static_cast<Handed*>(self->manager_ctx); }

bool DlType(int32_t dtype, DLDataType* out) {
  switch (dtype) {
    case KI_DTYPE_BF16: *out = {4, 16, 1}; return true;
    case KI_DTYPE_F16: *out = {2, 16, 1}; return true;
    case KI_DTYPE_F32: *out = {2, 32, 1}; return true;
    case KI_DTYPE_F64: *out = {2, 64, 1}; return true;
    case KI_DTYPE_I32: *out = {0, 32, 1}; return true;
    case KI_DTYPE_I64: *out = {0, 64, 1}; return true;
    case KI_DTYPE_U8: *out = {1, 8, 1}; return true;
    case KI_DTYPE_BOOL: *out = {6, 8, 1}; return true;
    default: return false;  // fp8: DLPack's codes for it are newer than the torch versions ki meets
  }
}

// ------------------------------------------------------- the C API
// The few functions of Python's stable C API that ki calls, found with dlsym.
using PyObj = void;  // PyObject, opaque here
struct PyApi {
  int (*IsInitialized)() = nullptr;
  void (*InitializeEx)(int) = nullptr;
  PyObj* (*DictNew)() = nullptr;
  PyObj* (*DictGetItemString)(PyObj*, const char*) = nullptr;
  int (*DictSetItemString)(PyObj*, const char*, PyObj*) = nullptr;
  PyObj* (*EvalGetBuiltins)() = nullptr;
  PyObj* (*RunString)(const char*, int, PyObj*, PyObj*) = nullptr;
  PyObj* (*CallObject)(PyObj*, PyObj*) = nullptr;
  PyObj* (*TupleNew)(ssize_t) = nullptr;
  int (*TupleSetItem)(PyObj*, ssize_t, PyObj*) = nullptr;
  PyObj* (*ListNew)(ssize_t) = nullptr;
  int (*ListSetItem)(PyObj*, ssize_t, PyObj*) = nullptr;
  PyObj* (*UnicodeFromString)(const char*) = nullptr;
  const char* (*UnicodeAsUTF8)(PyObj*) = nullptr;
  PyObj* (*LongFromLongLong)(long long) = nullptr;
  PyObj* (*LongFromVoidPtr)(void*) = nullptr;
  PyObj* (*FloatFromDouble)(double) = nullptr;
  PyObj* (*CapsuleNew)(void*, const char*, void (*)(PyObj*)) = nullptr;
  int (*CapsuleIsValid)(PyObj*, const char*) = nullptr;
  void* (*CapsuleGetPointer)(PyObj*, const char*) = nullptr;
  void (*DecRef)(PyObj*) = nullptr;
  void (*IncRef)(PyObj*) = nullptr;
  PyObj* (*ErrOccurred)() = nullptr;
  void (*ErrPrint)() = nullptr;
  void (*ErrClear)() = nullptr;
  PyObj* none = nullptr;  // &_Py_NoneStruct
};
PyApi g_py;
constexpr int kPyFileInput = 257;  // Py_file_input

// A capsule nobody consumed still owns its managed tensor (DLPack's rule: a
// consumer renames it "used_dltensor" and calls the deleter itself).
void CapsuleDestructor(PyObj* capsule) {
  if (!g_py.CapsuleIsValid(capsule, "dltensor")) return;
  auto* m = static_cast<DLManagedTensor*>(g_py.CapsuleGetPointer(capsule, "dltensor"));
  if (m && m->deleter) m->deleter(m);
}

// Owns one reference.
class Ref {
 public:
  Ref() = default;
  explicit Ref(PyObj* p) : p_(p) {}
  ~Ref() { reset(); }
  Ref(Ref&& o) noexcept : p_(o.p_) { o.p_ = nullptr; }
  Ref& operator=(Ref&& o) noexcept {
    if (this != &o) reset(), p_ = o.p_, o.p_ = nullptr;
    return *this;
  }
  Ref(const Ref&) = delete;
  Ref& operator=(const Ref&) = delete;
  PyObj* get() const { return p_; }
  PyObj* release() {
    PyObj* p = p_;
    p_ = nullptr;
    return p;
  }
  explicit operator bool() const { return p_ != nullptr; }
  void reset() {
    if (p_) g_py.DecRef(p_);
    p_ = nullptr;
  }

 private:
  PyObj* p_ = nullptr;
};

// The driver: Python that imports an implementation, wraps capsules as torch
// tensors and calls the function in the right style and stream. Every entry
// point returns None, or a one-line message saying what went wrong.
constexpr const char* kDriver = R"PY(
import importlib, os, sys, traceback

_slots = {}

def _why(e):
    where = ''
    for f in reversed(traceback.extract_tb(e.__traceback__)):
        where = ' (%s:%d)' % (os.path.basename(f.filename), f.lineno)
        if not f.filename.startswith(sys.prefix) and not f.filename.startswith(sys.base_prefix):
            break
    text = str(e).strip().splitlines()
    return '%s: %s%s' % (type(e).__name__, text[0] if text else '', where)

def ki_path(paths):
    sys.path[:] = [p for p in paths]
    return None

def _extension(src_dir, build_dir, name):
    # A C++/CUDA solution with binding torch: every .cpp/.cc/.cu of its
    # sources built by torch's own extension builder (a pybind11 module named
    # TORCH_EXTENSION_NAME), cached in build_dir.
    from torch.utils.cpp_extension import load
    sources = []
    for root, _, files in os.walk(src_dir):
        for f in sorted(files):
            if f.endswith(('.cpp', '.cc', '.cxx', '.cu')):
                sources.append(os.path.join(root, f))
    os.makedirs(build_dir, exist_ok=True)
    return load(name=name, sources=sorted(sources), build_directory=build_dir, extra_include_paths=[src_dir],
                verbose=False)

def ki_load(slot, src_dir, entry, func, cuda, device_index, dps, n_in, out_names, ext_dir=''):
    try:
        import torch
        import torch.utils.dlpack
    except BaseException as e:
        return 'cannot import torch: ' + _why(e)
    try:
        if cuda:
            torch.cuda.set_device(device_index)
        if src_dir not in sys.path:
            sys.path.insert(0, src_dir)
        if ext_dir:
            mod = _extension(src_dir, ext_dir, 'ki_ext_' + os.path.basename(os.path.normpath(src_dir))[:16])
        else:
            mod_name = entry[:-3] if entry.endswith('.py') else entry
            mod = importlib.import_module(mod_name.replace('/', '.'))
        fn = getattr(mod, func, None)
        if fn is None or not callable(fn):
            return '%s defines no function %s' % (entry, func)
    except BaseException as e:
        return 'importing %s: %s' % (entry, _why(e))
    _slots[slot] = {'fn': fn, 'torch': torch, 'from_dlpack': torch.utils.dlpack.from_dlpack,
                    'cuda': cuda, 'dps': dps, 'n_in': n_in, 'out_names': list(out_names), 'streams': {}}
    return None

def ki_wrap(slot, items):
    s = _slots[slot]
    try:
        return tuple(s['from_dlpack'](x) if type(x).__name__ == 'PyCapsule' else x for x in items)
    except BaseException as e:
        return 'torch.utils.dlpack.from_dlpack: ' + _why(e)

def _invoke(s, args):
    torch = s['torch']
    n = s['n_in']
    with torch.no_grad():
        if s['dps']:
            s['fn'](*args)
            return None
        got = s['fn'](*args[:n])
        outs = args[n:]
        if not isinstance(got, (tuple, list)):
            got = (got,)
        if len(got) != len(outs):
            return 'returned %d value(s); the definition has %d output(s) (%s)' % (
                len(got), len(outs), ', '.join(s['out_names']))
        for name, o, v in zip(s['out_names'], outs, got):
            if not isinstance(v, torch.Tensor):
                return 'output %s: returned a %s, not a tensor' % (name, type(v).__name__)
            if tuple(v.shape) != tuple(o.shape):
                return 'output %s: returned shape %s, the definition gives %s' % (
                    name, list(v.shape), list(o.shape))
            if v.dtype != o.dtype:
                return 'output %s: returned %s, the definition gives %s' % (name, v.dtype, o.dtype)
            o.copy_(v)
    return None

def ki_call(slot, args, stream):
    s = _slots[slot]
    try:
        if s['cuda']:
            st = s['streams'].get(stream)
            if st is None:
                torch = s['torch']
                st = torch.cuda.ExternalStream(stream) if stream else torch.cuda.default_stream()
                s['streams'][stream] = st
            with s['torch'].cuda.stream(st):
                return _invoke(s, args)
        return _invoke(s, args)
    except BaseException as e:
        return _why(e)
)PY";

// The interpreter, started once per process.
struct Interpreter {
  bool started = false;
  std::string library;
  Ref globals;
  PyObj* load = nullptr;  // borrowed from globals
  PyObj* wrap = nullptr;
  PyObj* call = nullptr;
};
Interpreter g_interp;
std::mutex g_mu;

template <typename F>
bool Sym(void* h, const char* name, F* out) {
  *out = reinterpret_cast<F>(dlsym(h, name));
  return *out != nullptr;
}

// A message when `r` is not None: the driver's text, or the Python error.
std::string Outcome(const Ref& r) {
  if (!r) {
    std::string why = "a Python error";
    if (g_py.ErrOccurred()) {
      g_py.ErrPrint();  // into the run's log, whole
      why += " (traceback in the log)";
    }
    return why;
  }
  if (r.get() == g_py.none) return "";
  const char* text = g_py.UnicodeAsUTF8(r.get());
  if (!text) {
    g_py.ErrClear();
    return "an unexpected value from the driver";
  }
  return text;
}

Ref Str(const std::string& s) { return Ref(g_py.UnicodeFromString(s.c_str())); }

Ref Tuple(std::vector<Ref> items) {
  Ref t(g_py.TupleNew(static_cast<ssize_t>(items.size())));
  for (size_t i = 0; i < items.size(); ++i) g_py.TupleSetItem(t.get(), static_cast<ssize_t>(i), items[i].release());
  return t;
}

Status StartInterpreter(const PythonRuntime& rt) {
  if (g_interp.started) {
    if (rt.library != g_interp.library)
      return Status::InvalidInput("a Python runtime (" + g_interp.library + ") is already loaded; cannot load " +
                                  rt.library + " beside it");
    return Status::OK();
  }
  // RTLD_GLOBAL: extension modules (torch's) resolve Python's symbols from
  // the process, as they do from the python3 executable.
  void* h = dlopen(rt.library.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    const char* e = dlerror();
    return Status::NotFound("cannot load the Python library " + rt.library + ": " + (e ? e : "unknown error"));
  }
  bool ok = Sym(h, "Py_IsInitialized", &g_py.IsInitialized) && Sym(h, "Py_InitializeEx", &g_py.InitializeEx) &&
            Sym(h, "PyDict_New", &g_py.DictNew) && Sym(h, "PyDict_GetItemString", &g_py.DictGetItemString) &&
            Sym(h, "PyDict_SetItemString", &g_py.DictSetItemString) &&
            Sym(h, "PyEval_GetBuiltins", &g_py.EvalGetBuiltins) && Sym(h, "PyRun_String", &g_py.RunString) &&
            Sym(h, "PyObject_CallObject", &g_py.CallObject) && Sym(h, "PyTuple_New", &g_py.TupleNew) &&
            Sym(h, "PyTuple_SetItem", &g_py.TupleSetItem) && Sym(h, "PyList_New", &g_py.ListNew) &&
            Sym(h, "PyList_SetItem", &g_py.ListSetItem) && Sym(h, "PyUnicode_FromString", &g_py.UnicodeFromString) &&
            Sym(h, "PyUnicode_AsUTF8", &g_py.UnicodeAsUTF8) && Sym(h, "PyLong_FromLongLong", &g_py.LongFromLongLong) &&
            Sym(h, "PyLong_FromVoidPtr", &g_py.LongFromVoidPtr) && Sym(h, "PyFloat_FromDouble", &g_py.FloatFromDouble) &&
            Sym(h, "PyCapsule_New", &g_py.CapsuleNew) && Sym(h, "PyCapsule_IsValid", &g_py.CapsuleIsValid) &&
            Sym(h, "PyCapsule_GetPointer", &g_py.CapsuleGetPointer) && Sym(h, "Py_DecRef", &g_py.DecRef) && Sym(h, "Py_IncRef", &g_py.IncRef) &&
            Sym(h, "PyErr_Occurred", &g_py.ErrOccurred) && Sym(h, "PyErr_Print", &g_py.ErrPrint) &&
            Sym(h, "PyErr_Clear", &g_py.ErrClear);
  g_py.none = dlsym(h, "_Py_NoneStruct");
  if (!ok || !g_py.none) return Status::InvalidInput(rt.library + " lacks a function of Python's C API that ki calls");
  // The standard library of the interpreter that was asked, not of the
  // prefix this library was built for (a relocated or virtual environment's
  // python would not find it otherwise). This process is ki run's child.
  if (!rt.home.empty()) ::setenv("PYTHONHOME", rt.home.c_str(), 1);
  if (!g_py.IsInitialized()) g_py.InitializeEx(0);  // 0: Python leaves ki's signal handlers alone
  g_interp.globals = Ref(g_py.DictNew());
  g_py.DictSetItemString(g_interp.globals.get(), "__builtins__", g_py.EvalGetBuiltins());
  Ref r(g_py.RunString(kDriver, kPyFileInput, g_interp.globals.get(), g_interp.globals.get()));
  if (!r) {
    g_py.ErrPrint();
    return Status::IOError("the Python driver did not load (traceback in the log)");
  }
  g_interp.load = g_py.DictGetItemString(g_interp.globals.get(), "ki_load");
  g_interp.wrap = g_py.DictGetItemString(g_interp.globals.get(), "ki_wrap");
  g_interp.call = g_py.DictGetItemString(g_interp.globals.get(), "ki_call");
  if (!rt.path.empty()) {
    Ref list(g_py.ListNew(static_cast<ssize_t>(rt.path.size())));
    for (size_t i = 0; i < rt.path.size(); ++i)
      g_py.ListSetItem(list.get(), static_cast<ssize_t>(i), Str(rt.path[i]).release());
    std::vector<Ref> a;
    a.push_back(std::move(list));
    Ref args = Tuple(std::move(a));
    Ref out(g_py.CallObject(g_py.DictGetItemString(g_interp.globals.get(), "ki_path"), args.get()));
    if (std::string why = Outcome(out); !why.empty()) return Status::IOError("setting sys.path: " + why);
  }
  g_interp.started = true;
  g_interp.library = rt.library;
  return Status::OK();
}

// ---------------------------------------------------------- the kernels
// ki_kernel's run has no user pointer: each loaded kernel has a slot and a
// trampoline of its own.
constexpr int kSlots = 4;

class PythonKernel {
 public:
  PythonKernel(int slot, const PythonKernelSpec& spec)
      : name(spec.name), definition(spec.definition), slot_(slot), spec_(spec) {}
  ki_kernel table{};
  const std::string name, definition;  // the table's strings
  int32_t Run(const ki_call* c);

 private:
  // The wrapped argument tuple of one call's tensors, kept while the same
  // buffers come back (every timed call), so a call costs one Python call.
  struct Cached {
    uint64_t key;
    Ref args;
  };
  uint64_t KeyOf(const ki_call* c) const;
  Result<Ref> Wrap(const ki_call* c);

  int slot_;
  PythonKernelSpec spec_;
  std::list<Cached> cache_;  // most recent first, at most kCacheEntries
  static constexpr size_t kCacheEntries = 4;
};

PythonKernel* g_kernels[kSlots] = {};

template <int N>
int32_t RunSlot(const ki_call* c) {
  return g_kernels[N]->Run(c);
}
constexpr int32_t (*kTrampolines[kSlots])(const ki_call*) = {RunSlot<0>, RunSlot<1>, RunSlot<2>, RunSlot<3>};

// FNV-1a over what decides the wrapped tensors: pointers, dtypes, devices,
// shapes, and the scalars' values.
uint64_t PythonKernel::KeyOf(const ki_call* c) const {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  auto tensor = [&](const ki_tensor& t) {
    mix(&t.data, sizeof t.data);
    mix(&t.dtype, sizeof t.dtype);
    mix(&t.device, sizeof t.device);
    mix(&t.ndim, sizeof t.ndim);
    mix(t.shape, sizeof(int64_t) * static_cast<size_t>(std::min(std::max(t.ndim, 0), KI_MAX_DIMS)));
    if (t.ndim == 0 && t.data) mix(t.data, std::max<size_t>(DtypeSize(static_cast<ki_dtype>(t.dtype)), 1));
  };
  for (int i = 0; i < c->num_inputs; ++i) tensor(c->inputs[i]);
  for (int i = 0; i < c->num_outputs; ++i) tensor(c->outputs[i]);
  return h;
}

Result<Ref> PythonKernel::Wrap(const ki_call* c) {
  std::vector<Ref> items;
  auto add = [&](const ki_tensor& t) -> Status {
    const char* name = t.name ? t.name : "?";
    if (t.ndim == 0) {  // a scalar, in host memory
      if (!t.data) return Status::InvalidInput(std::string("scalar ") + name + " has no value");
      const double v = ElementAsDouble(static_cast<ki_dtype>(t.dtype), t.data);
      const bool integer = t.dtype == KI_DTYPE_I32 || t.dtype == KI_DTYPE_I64 || t.dtype == KI_DTYPE_U8 ||
                           t.dtype == KI_DTYPE_BOOL;
      items.emplace_back(integer ? g_py.LongFromLongLong(static_cast<long long>(v)) : g_py.FloatFromDouble(v));
      return Status::OK();
    }
    if (t.ndim < 0 || t.ndim > KI_MAX_DIMS) return Status::InvalidInput(std::string(name) + ": bad ndim");
    auto* hd = new Handed();
    std::memset(hd, 0, sizeof *hd);
    DLTensor& d = hd->managed.dl_tensor;
    if (!DlType(t.dtype, &d.dtype)) {
      delete hd;
      return Status::InvalidInput(std::string(name) + ": " + DtypeName(static_cast<ki_dtype>(t.dtype)) +
                                  " tensors cannot be handed to Python over DLPack here");
    }
    d.data = t.data;
    d.device = t.device == KI_DEVICE_CUDA ? DLDevice{2, spec_.device_index} : DLDevice{1, 0};
    d.ndim = t.ndim;
    int64_t stride = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      hd->shape[i] = t.shape[i];
      hd->strides[i] = stride;
      stride *= std::max<int64_t>(t.shape[i], 1);
    }
    d.shape = hd->shape;
    d.strides = hd->strides;
    hd->managed.manager_ctx = hd;
    hd->managed.deleter = DeleteHanded;
    PyObj* cap = g_py.CapsuleNew(&hd->managed, "dltensor", CapsuleDestructor);
    if (!cap) {
      delete hd;
      g_py.ErrClear();
      return Status::IOError("PyCapsule_New failed");
    }
    items.emplace_back(cap);
    return Status::OK();
  };
  for (int i = 0; i < c->num_inputs; ++i) KI_RETURN_IF_ERROR(add(c->inputs[i]));
  for (int i = 0; i < c->num_outputs; ++i) KI_RETURN_IF_ERROR(add(c->outputs[i]));
  std::vector<Ref> a;
  a.emplace_back(g_py.LongFromLongLong(slot_));
  a.push_back(Tuple(std::move(items)));
  Ref args = Tuple(std::move(a));
  Ref wrapped(g_py.CallObject(g_interp.wrap, args.get()));
  if (!wrapped) return Status::IOError(Outcome(wrapped));
  if (const char* text = g_py.UnicodeAsUTF8(wrapped.get())) return Status::InvalidInput(text);
  g_py.ErrClear();  // not a str: the tuple of tensors
  return wrapped;
}

int32_t PythonKernel::Run(const ki_call* c) {
  auto fail = [&](int32_t rc, const std::string& msg) {
    if (c->error && c->error_capacity > 0) std::snprintf(c->error, c->error_capacity, "%s", msg.c_str());
    return rc;
  };
  if (c->abi_version != KI_ABI_VERSION) return KI_ERR_ABI_VERSION;
  for (int i = 0; i < c->num_inputs + c->num_outputs; ++i) {
    const ki_tensor& t = i < c->num_inputs ? c->inputs[i] : c->outputs[i - c->num_inputs];
    if (t.ndim > 0 && t.device != spec_.device)
      return fail(KI_ERR_INVALID_ARGUMENT, std::string(t.name ? t.name : "?") + " is not on the kernel's device");
  }
  const uint64_t key = KeyOf(c);
  auto it = cache_.begin();
  while (it != cache_.end() && it->key != key) ++it;
  if (it == cache_.end()) {
    auto w = Wrap(c);
    if (!w.ok()) return fail(KI_ERR_INVALID_ARGUMENT, w.status().message());
    cache_.push_front({key, std::move(*w)});
    if (cache_.size() > kCacheEntries) cache_.pop_back();
  } else if (it != cache_.begin()) {
    cache_.splice(cache_.begin(), cache_, it);
  }
  PyObj* wrapped = cache_.front().args.get();
  g_py.IncRef(wrapped);  // the args tuple steals one reference; the cache keeps its own
  std::vector<Ref> a;
  a.emplace_back(g_py.LongFromLongLong(slot_));
  a.emplace_back(wrapped);
  a.emplace_back(g_py.LongFromVoidPtr(c->stream));
  Ref args = Tuple(std::move(a));
  Ref r(g_py.CallObject(g_interp.call, args.get()));
  if (std::string why = Outcome(r); !why.empty()) return fail(KI_ERR_INTERNAL, spec_.name + ": " + why);
  return KI_OK;
}

}  // namespace

Result<const ki_kernel*> LoadPythonKernel(const PythonRuntime& rt, const PythonKernelSpec& spec,
                                          const Definition& def) {
  std::lock_guard<std::mutex> lock(g_mu);
  KI_RETURN_IF_ERROR(StartInterpreter(rt));
  int slot = 0;
  while (slot < kSlots && g_kernels[slot]) ++slot;
  if (slot == kSlots) return Status::InvalidInput("more than 4 Python kernels in one process");
  std::vector<Ref> names;
  for (const TensorSpec& t : def.outputs) names.push_back(Str(t.name));
  std::vector<Ref> a;
  a.emplace_back(g_py.LongFromLongLong(slot));
  a.push_back(Str(spec.source_dir));
  a.push_back(Str(spec.entry_file));
  a.push_back(Str(spec.function));
  a.emplace_back(g_py.LongFromLongLong(spec.device == KI_DEVICE_CUDA ? 1 : 0));
  a.emplace_back(g_py.LongFromLongLong(spec.device_index));
  a.emplace_back(g_py.LongFromLongLong(spec.destination_passing ? 1 : 0));
  a.emplace_back(g_py.LongFromLongLong(static_cast<long long>(def.inputs.size())));
  a.push_back(Tuple(std::move(names)));
  a.push_back(Str(spec.torch_extension_dir));
  Ref args = Tuple(std::move(a));
  Ref r(g_py.CallObject(g_interp.load, args.get()));
  if (std::string why = Outcome(r); !why.empty()) return Status::InvalidInput(spec.name + ": " + why);
  // Lives as long as the process: its table is handed out.
  auto* k = new PythonKernel(slot, spec);
  k->table.info = {KI_ABI_VERSION, spec.device, k->name.c_str(), k->definition.c_str(), "Python function (DLPack)"};
  k->table.workspace_size = nullptr;
  k->table.run = kTrampolines[slot];
  g_kernels[slot] = k;
  return &k->table;
}

}  // namespace ki::harness
