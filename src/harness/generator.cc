// Deterministic inputs from (workload, seed).
//
// Float inputs are random streams (ki/counter_rng.h) keyed by the seed, the
// workload's uuid and the input's name, so they can be produced on the
// device without the host ever holding them. Index tensors of the paged-KV
// family are built here: kv_indptr splits num_kv_indices tokens over the
// batch (randomly or equally), kv_indices draws distinct pages from
// [0, num_pages). flashinfer-bench's recorded safetensors index files are not
// shipped with the dataset, so ki always generates its own valid ones.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "ki/counter_rng.h"
#include "ki/harness.h"

namespace ki::harness {
namespace {

uint64_t Fnv1a(std::string_view s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

template <typename T>
std::vector<uint8_t> ToBytes(const std::vector<T>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(b.data(), v.data(), b.size());
  return b;
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

Result<std::vector<int32_t>> MakeIndptr(const TensorPlan& plan, const InputSource* src, int64_t total,
                                        LengthSplit split, uint64_t key) {
  const int64_t n = plan.shape.empty() ? 0 : plan.shape[0];
  if (n < 1) return Status::InvalidInput(plan.name + ": an offsets tensor needs at least one element");
  const int64_t batch = n - 1;
  if (total > INT32_MAX)
    return Status::InvalidInput(plan.name + ": int32 offsets cannot count " + std::to_string(total) + " entries");
  std::vector<int32_t> ptr(static_cast<size_t>(n), 0);
  if (src && src->kind == InputSource::Kind::kValues) {
    if (static_cast<int64_t>(src->values.size()) != n)
      return Status::InvalidInput(plan.name + ": explicit values have the wrong length");
    for (int64_t i = 0; i < n; ++i) ptr[i] = static_cast<int32_t>(src->values[i]);
    if (ptr[0] != 0 || ptr[batch] != total)
      return Status::InvalidInput(plan.name + ": must start at 0 and end at " + std::to_string(total));
    for (int64_t i = 0; i < batch; ++i)
      if (ptr[i + 1] < ptr[i]) return Status::InvalidInput(plan.name + ": offsets decrease");
    return ptr;
  }
  if (batch == 0) {
    if (total != 0) return Status::InvalidInput(plan.name + ": tokens but no sequences");
    return ptr;
  }
  if (split == LengthSplit::kEqual) {
    const int64_t base = total / batch, extra = total % batch;
    for (int64_t i = 0; i < batch; ++i) ptr[i + 1] = static_cast<int32_t>(ptr[i] + base + (i < extra ? 1 : 0));
  } else {
    std::vector<int64_t> cuts(static_cast<size_t>(batch - 1));
    for (int64_t i = 0; i < batch - 1; ++i)
      cuts[i] = static_cast<int64_t>(rng::Below(rng::Bits(key, static_cast<uint64_t>(i)), static_cast<uint64_t>(total) + 1));
    std::sort(cuts.begin(), cuts.end());
    for (int64_t i = 0; i < batch - 1; ++i) ptr[i + 1] = static_cast<int32_t>(cuts[i]);
    ptr[batch] = static_cast<int32_t>(total);
  }
  return ptr;
}

Result<std::vector<int32_t>> MakePageIndices(const TensorPlan& plan, const InputSource* src, int64_t num_pages,
                                             uint64_t key) {
  const int64_t n = plan.shape.empty() ? 0 : plan.shape[0];
  if (src && src->kind == InputSource::Kind::kValues) {
    if (static_cast<int64_t>(src->values.size()) != n)
      return Status::InvalidInput(plan.name + ": explicit values have the wrong length");
    std::vector<int32_t> v(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      if (src->values[i] < 0 || src->values[i] >= num_pages)
        return Status::InvalidInput(plan.name + ": page index out of range");
      v[i] = static_cast<int32_t>(src->values[i]);
    }
    return v;
  }
  if (n > num_pages)
    return Status::InvalidInput(plan.name + ": " + std::to_string(n) + " distinct pages asked of " +
                                std::to_string(num_pages));
  if (num_pages > (int64_t{1} << 28)) return Status::InvalidInput(plan.name + ": num_pages too large to draw from");
  // Partial Fisher-Yates: the first n entries of a random permutation of the pages.
  std::vector<int32_t> pages(static_cast<size_t>(num_pages));
  for (int64_t i = 0; i < num_pages; ++i) pages[i] = static_cast<int32_t>(i);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t j = i + static_cast<int64_t>(rng::Below(rng::Bits(key, static_cast<uint64_t>(i)),
                                                          static_cast<uint64_t>(num_pages - i)));
    std::swap(pages[i], pages[j]);
  }
  pages.resize(static_cast<size_t>(n));
  return pages;
}

}  // namespace

namespace {

// Saturating: a product past int64 is INT64_MAX, never a wrapped (possibly
// small or negative) count. Tensors made by PlanInputs and MakeOutputs were
// checked by TensorElements and never get here; hand-made ones might.
int64_t SaturatingNumel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) return 0;
    if (__builtin_mul_overflow(n, d, &n)) return INT64_MAX;
  }
  return n;
}

std::string ShapeText(const std::vector<std::string>& names) {
  std::string s = "[";
  for (const std::string& a : names) s += (s.size() > 1 ? ", " : "") + a;
  return s + "]";
}

}  // namespace

Result<int64_t> TensorElements(std::string_view role, const TensorSpec& spec,
                               const std::map<std::string, int64_t>& axes) {
  std::string values = "[";
  std::vector<int64_t> dims;
  for (const std::string& a : spec.shape) {
    auto it = axes.find(a);
    if (it == axes.end())
      return Status::InvalidInput(std::string(role) + " " + spec.name + ": unresolved axis " + a);
    dims.push_back(it->second);
    values += (values.size() > 1 ? ", " : "") + std::to_string(it->second);
  }
  values += "]";
  auto where = [&] { return std::string(role) + " " + spec.name + " " + ShapeText(spec.shape) + " = " + values; };
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0) return Status::InvalidInput(where() + ": a negative axis");
    if (__builtin_mul_overflow(n, d, &n))
      return Status::InvalidInput(where() + ": the element count passes 2^63 - 1");
  }
  int64_t bytes = 0;
  if (__builtin_mul_overflow(n, static_cast<int64_t>(DtypeSize(spec.dtype)), &bytes))
    return Status::InvalidInput(where() + ": " + std::to_string(n) + " elements of " +
                                std::to_string(DtypeSize(spec.dtype)) + " bytes pass 2^63 - 1 bytes");
  return n;
}

int64_t TensorPlan::numel() const { return SaturatingNumel(shape); }
uint64_t TensorPlan::nbytes() const {
  uint64_t b = 0;
  return __builtin_mul_overflow(static_cast<uint64_t>(numel()), DtypeSize(dtype), &b) ? UINT64_MAX : b;
}

int64_t HostTensor::numel() const { return SaturatingNumel(shape); }

Result<std::vector<TensorPlan>> PlanInputs(const Definition& def, const Workload& workload,
                                           const GeneratorOptions& options) {
  KI_ASSIGN_OR_RETURN(auto axes, ResolveAxes(def, workload));
  const uint64_t base = rng::Mix64(options.seed) ^ Fnv1a(workload.uuid);
  std::vector<TensorPlan> plans;
  // Offsets first: the indices they describe are checked against them below.
  std::map<std::string, int64_t> totals;  // prefix -> total from the indices tensor's length
  for (const TensorSpec& spec : def.inputs) {
    // Sizes from the workload are untrusted: a product past int64 is refused
    // here, naming the tensor, not wrapped into a small or negative size.
    KI_RETURN_IF_ERROR(TensorElements("input", spec, axes).status());
    TensorPlan p;
    p.name = spec.name;
    p.dtype = spec.dtype;
    for (const std::string& a : spec.shape) p.shape.push_back(axes.at(a));
    p.key = rng::StreamKey(base, Fnv1a(spec.name));
    plans.push_back(std::move(p));
  }
  auto find_plan = [&](const std::string& name) -> TensorPlan* {
    for (TensorPlan& p : plans)
      if (p.name == name) return &p;
    return nullptr;
  };
  for (TensorPlan& p : plans) {
    auto it = workload.inputs.find(p.name);
    const InputSource* src = it == workload.inputs.end() ? nullptr : &it->second;
    const bool is_float = p.dtype == KI_DTYPE_BF16 || p.dtype == KI_DTYPE_F16 || p.dtype == KI_DTYPE_F32;
    if (src && src->kind == InputSource::Kind::kScalar) {
      if (p.dtype == KI_DTYPE_F32) {
        const float v = static_cast<float>(src->scalar);
        p.bytes.resize(4);
        std::memcpy(p.bytes.data(), &v, 4);
      } else if (p.dtype == KI_DTYPE_F64) {
        p.bytes.resize(8);
        std::memcpy(p.bytes.data(), &src->scalar, 8);
      } else if (p.dtype == KI_DTYPE_I32) {
        const int32_t v = static_cast<int32_t>(src->scalar);
        p.bytes.resize(4);
        std::memcpy(p.bytes.data(), &v, 4);
      } else {
        return Status::InvalidInput(p.name + ": scalar of unsupported dtype " + DtypeName(p.dtype));
      }
      continue;
    }
    if (is_float) {
      if (src && src->kind == InputSource::Kind::kValues)
        return Status::InvalidInput(p.name + ": explicit values are for index tensors");
      p.random = true;
      continue;
    }
    if (p.dtype != KI_DTYPE_I32) return Status::InvalidInput(p.name + ": no generator for dtype " + DtypeName(p.dtype));
    if (EndsWith(p.name, "_indptr")) {
      const std::string prefix = p.name.substr(0, p.name.size() - 7);
      TensorPlan* indices = find_plan(prefix + "_indices");
      const int64_t total = indices ? indices->numel() : 0;
      if (!indices) return Status::InvalidInput(p.name + ": no matching " + prefix + "_indices input");
      KI_ASSIGN_OR_RETURN(auto ptr, MakeIndptr(p, src, total, options.lengths, p.key));
      p.bytes = ToBytes(ptr);
    } else if (EndsWith(p.name, "_indices")) {
      auto pages = axes.find("num_pages");
      if (pages == axes.end()) return Status::InvalidInput(p.name + ": the definition has no num_pages axis");
      KI_ASSIGN_OR_RETURN(auto idx, MakePageIndices(p, src, pages->second, p.key));
      p.bytes = ToBytes(idx);
    } else {
      return Status::InvalidInput(p.name + ": no generator for integer input");
    }
  }
  return plans;
}

HostTensor Materialize(const TensorPlan& plan) {
  HostTensor t;
  t.name = plan.name;
  t.dtype = plan.dtype;
  t.shape = plan.shape;
  if (!plan.random) {
    t.bytes = plan.bytes;
    return t;
  }
  const int64_t n = plan.numel();
  t.bytes.resize(plan.nbytes());
  uint8_t* out = t.bytes.data();
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t bits = rng::Bits(plan.key, static_cast<uint64_t>(i));
    if (plan.dtype == KI_DTYPE_BF16) {
      const uint16_t v = rng::Bf16Bits(bits);
      std::memcpy(out + 2 * i, &v, 2);
    } else if (plan.dtype == KI_DTYPE_F16) {
      const uint16_t v = rng::F16Bits(bits);
      std::memcpy(out + 2 * i, &v, 2);
    } else {
      const uint32_t v = rng::F32Bits(bits);
      std::memcpy(out + 4 * i, &v, 4);
    }
  }
  return t;
}

Result<std::vector<HostTensor>> MakeOutputs(const Definition& def, const std::map<std::string, int64_t>& axes,
                                            uint8_t byte) {
  std::vector<HostTensor> out;
  for (const TensorSpec& spec : def.outputs) {
    KI_RETURN_IF_ERROR(TensorElements("output", spec, axes).status());
    HostTensor t;
    t.name = spec.name;
    t.dtype = spec.dtype;
    for (const std::string& a : spec.shape) t.shape.push_back(axes.at(a));
    t.bytes.assign(static_cast<size_t>(t.numel()) * DtypeSize(t.dtype), byte);
    out.push_back(std::move(t));
  }
  return out;
}

uint64_t MinimumBytes(const Definition& def, const std::map<std::string, int64_t>& axes) {
  auto get = [&](const std::string& a) -> int64_t {
    auto it = axes.find(a);
    return it == axes.end() ? 0 : it->second;
  };
  uint64_t total = 0;
  auto add = [&](const TensorSpec& s) {
    uint64_t n = DtypeSize(s.dtype);
    for (size_t i = 0; i < s.shape.size(); ++i) {
      int64_t d = get(s.shape[i]);
      // A paged cache: only the pages the indices address are read.
      if (i == 0 && s.shape[i] == "num_pages" && axes.count("num_kv_indices") && axes.count("page_size")) {
        const int64_t ps = std::max<int64_t>(1, get("page_size")), nk = get("num_kv_indices");
        d = std::min<int64_t>(d, nk / ps + (nk % ps != 0));  // ceil(nk / ps), without nk + ps overflowing
      }
      // Saturating: this is a figure for reports, and axes are untrusted.
      if (d < 0 || __builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) n = d < 0 ? 0 : UINT64_MAX;
    }
    if (__builtin_add_overflow(total, n, &total)) total = UINT64_MAX;
  };
  for (const TensorSpec& s : def.inputs) add(s);
  for (const TensorSpec& s : def.outputs) add(s);
  return total;
}

}  // namespace ki::harness
