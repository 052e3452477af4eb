// RunResult as JSON. Field names are stable: ki run records them.
#include <cmath>

#include <nlohmann/json.hpp>

#include "ki/harness.h"

namespace ki::harness {
namespace {

using OrderedJson = nlohmann::ordered_json;

// JSON has no Inf/NaN: they are written as strings.
OrderedJson Num(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return v;
}

OrderedJson Clocks(const gpu::ClockReading& c) {
  if (!c.valid) return nullptr;
  return OrderedJson{{"sm_mhz", c.sm_mhz},
              {"mem_mhz", c.mem_mhz},
              {"max_sm_mhz", c.max_sm_mhz},
              {"max_mem_mhz", c.max_mem_mhz},
              {"app_sm_mhz", c.app_sm_mhz},
              {"default_app_sm_mhz", c.default_app_sm_mhz},
              {"temperature_c", c.temperature_c},
              {"power_w", c.power_mw / 1000.0},
              {"clocks_event_reasons", c.event_reasons}};
}

OrderedJson Stats(const SampleStats& s) {
  return OrderedJson{{"count", s.count},       {"median", Num(s.median)},   {"mean", Num(s.mean)},
              {"min", Num(s.min)},      {"max", Num(s.max)},         {"p05", Num(s.p05)},
              {"p95", Num(s.p95)},      {"stddev", Num(s.stddev)},   {"ci95_low", Num(s.ci95_low)},
              {"ci95_high", Num(s.ci95_high)}};
}

}  // namespace

std::string ToJson(const RunResult& r, bool include_samples, int indent) {
  OrderedJson j;
  j["status"] = RunStatusName(r.status);
  j["message"] = r.message;
  j["kernel"] = r.kernel;
  j["definition"] = r.definition;
  j["workload_uuid"] = r.workload_uuid;
  j["seed"] = r.seed;
  j["axes"] = r.axes;
  j["minimum_bytes"] = r.minimum_bytes;
  const Correctness& c = r.correctness;
  OrderedJson cj{{"checked", c.checked}, {"reference", c.reference}, {"atol", c.tolerance.atol},
          {"rtol", c.tolerance.rtol}, {"runs", c.runs}, {"max_abs_error", Num(c.max_abs_error)},
          {"max_rel_error", Num(c.max_rel_error)}, {"matched_ratio", Num(c.matched_ratio)}};
  OrderedJson tensors = OrderedJson::array();
  for (const TensorCheck& t : c.tensors)
    tensors.push_back(OrderedJson{{"name", t.name}, {"shape_ok", t.shape_ok}, {"dtype_ok", t.dtype_ok},
                           {"numel", t.numel}, {"nonfinite", t.nonfinite}, {"mismatched", t.mismatched},
                           {"max_abs_error", Num(t.max_abs_error)}, {"max_rel_error", Num(t.max_rel_error)},
                           {"matched_ratio", Num(t.matched_ratio)}});
  cj["tensors"] = tensors;
  j["correctness"] = cj;
  const Timing& t = r.timing;
  OrderedJson tj{{"measured", t.measured}, {"timer", t.timer}, {"timer_note", t.timer_note},
          {"warmup", t.warmup}, {"iterations", t.iterations}, {"trials", t.trials},
          {"l2_flush", t.l2_flush}, {"flush_bytes", t.flush_bytes}, {"latency_us", Num(t.latency_us)}};
  OrderedJson med = OrderedJson::array();
  for (double m : t.trial_medians_us) med.push_back(Num(m));
  tj["trial_medians_us"] = med;
  tj["stats_us"] = Stats(t.stats);
  if (r.minimum_bytes > 0 && t.measured && t.latency_us > 0)
    tj["achieved_tb_per_s"] = Num(static_cast<double>(r.minimum_bytes) / (t.latency_us * 1e-6) / 1e12);
  tj["graph_per_call_us"] = t.graph_per_call_us >= 0 ? Num(t.graph_per_call_us) : OrderedJson(nullptr);
  tj["graph_calls"] = t.graph_calls;
  tj["graph_note"] = t.graph_note;
  if (include_samples) {
    OrderedJson s = OrderedJson::array();
    for (const auto& trial : t.samples_us) {
      OrderedJson a = OrderedJson::array();
      for (double v : trial) a.push_back(Num(v));
      s.push_back(a);
    }
    tj["samples_us"] = s;
  }
  j["timing"] = tj;
  const Environment& e = r.environment;
  OrderedJson ej{{"captured_at", e.captured_at}, {"host", e.host}, {"cpu_model", e.cpu_model}, {"cpu_vendor", e.cpu_vendor},
          {"cpu_count", e.cpu_count}, {"ki_version", e.ki_version}, {"gpu", e.gpu}};
  if (e.gpu) {
    const gpu::DeviceEnvironment& d = e.device;
    ej["device"] = OrderedJson{{"index", d.device}, {"name", d.name},
                        {"compute_capability", std::to_string(d.cc_major) + "." + std::to_string(d.cc_minor)},
                        {"sm_count", d.sm_count}, {"memory_bytes", d.memory_bytes}, {"l2_bytes", d.l2_bytes},
                        {"memory_bus_bits", d.memory_bus_bits}, {"driver_version", d.driver_version},
                        {"driver_cuda_version", d.driver_api_version}, {"runtime_cuda_version", d.runtime_version},
                        {"pci_bus_id", d.pci_bus_id}, {"nvml", d.nvml}, {"clocks_locked", d.clocks_locked},
                        {"clocks_start", Clocks(d.clocks)}, {"clocks_end", Clocks(e.clocks_end)}};
  }
  j["environment"] = ej;
  return j.dump(indent);
}

}  // namespace ki::harness
