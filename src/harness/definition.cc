// flashinfer-bench Definition and Workload documents.
#include <algorithm>
#include <cstdint>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ki/env.h"
#include "ki/harness.h"

namespace ki::harness {
namespace {

using Json = nlohmann::json;

// flashinfer-bench's largest workloads files are a few MB.
constexpr uint64_t kMaxDocumentBytes = 1ull << 30;

// LoadDefinition and LoadWorkloads read a dataset's files for tests and
// tools that have no store; a store's import reads them through its own Env
// (src/fib/import.cc).
Result<std::string> ReadFile(const std::string& path) { return Env::Default()->ReadFile(path, kMaxDocumentBytes); }

Result<Json> Parse(std::string_view text, std::string_view source) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return Status::InvalidInput(std::string(source) + ": " + e.what());
  }
}

}  // namespace

Result<Definition> ParseDefinition(std::string_view text, std::string_view source) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text.begin(), text.end());
  } catch (const nlohmann::ordered_json::exception& e) {
    return Status::InvalidInput(std::string(source) + ": " + e.what());
  }
  if (!j.is_object() || !j.contains("name") || !j["name"].is_string())
    return Status::InvalidInput(std::string(source) + ": not a definition (no name)");
  Definition d;
  d.name = j["name"].get<std::string>();
  if (j.contains("op_type") && j["op_type"].is_string()) d.op_type = j["op_type"].get<std::string>();
  if (j.contains("reference") && j["reference"].is_string()) d.reference = j["reference"].get<std::string>();
  if (!j.contains("axes") || !j["axes"].is_object())
    return Status::InvalidInput(std::string(source) + ": definition has no axes");
  const nlohmann::ordered_json kNull;
  for (const auto& [name, ax] : j["axes"].items()) {
    // Checked before read: value() throws on a field of another type
    // (nlohmann's type_error, which became exit 5 with its own wording).
    const std::string type = ax.is_object() && ax.contains("type") && ax["type"].is_string() ? ax["type"].get<std::string>() : "";
    if (type == "const") {
      const auto& v = ax.contains("value") ? ax["value"] : kNull;
      if (!v.is_number_integer() || (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX)) ||
          v.get<int64_t>() < 0)
        return Status::InvalidInput(std::string(source) + ": const axis " + name +
                                    " has no value that is a non-negative 64-bit integer");
      d.const_axes[name] = v.get<int64_t>();
    } else if (type == "var") {
      d.var_axes.push_back(name);
    } else {
      return Status::InvalidInput(std::string(source) + ": axis " + name + " has unknown type '" + type + "'");
    }
  }
  auto tensors = [&](const char* key, std::vector<TensorSpec>* out) -> Status {
    if (!j.contains(key)) return Status::InvalidInput(std::string(source) + ": definition has no " + key);
    if (!j[key].is_object()) return Status::InvalidInput(std::string(source) + ": " + key + " is not an object");
    for (const auto& [name, spec] : j[key].items()) {
      TensorSpec t;
      t.name = name;
      const std::string dt = spec.contains("dtype") && spec["dtype"].is_string() ? spec["dtype"].get<std::string>() : "";
      t.dtype = ParseDtype(dt);
      if (t.dtype == KI_DTYPE_INVALID)
        return Status::InvalidInput(std::string(source) + ": " + key + "." + name + ": unknown dtype '" + dt + "'");
      // flashinfer-bench writes a scalar's shape as null.
      if (spec.contains("shape") && !spec["shape"].is_array() && !spec["shape"].is_null())
        return Status::InvalidInput(std::string(source) + ": " + key + "." + name + ": shape is not a list of axis names");
      if (spec.contains("shape") && spec["shape"].is_array()) {
        for (const auto& a : spec["shape"]) {
          if (!a.is_string())
            return Status::InvalidInput(std::string(source) + ": " + key + "." + name + ": axis is not a name");
          const std::string axis = a.get<std::string>();
          if (!d.const_axes.count(axis) &&
              std::find(d.var_axes.begin(), d.var_axes.end(), axis) == d.var_axes.end())
            return Status::InvalidInput(std::string(source) + ": " + key + "." + name + ": unknown axis " + axis);
          t.shape.push_back(axis);
        }
      }
      out->push_back(std::move(t));
    }
    return Status::OK();
  };
  KI_RETURN_IF_ERROR(tensors("inputs", &d.inputs));
  KI_RETURN_IF_ERROR(tensors("outputs", &d.outputs));
  // Kept verbatim; CheckConstraints evaluates the ones over axes alone. Their
  // syntax is not checked here: flashinfer-bench may write expressions this
  // version cannot evaluate, and those are simply not evaluated.
  if (j.contains("constraints") && !j["constraints"].is_null()) {
    if (!j["constraints"].is_array())
      return Status::InvalidInput(std::string(source) + ": constraints is not a list of strings");
    size_t i = 0;
    for (const auto& c : j["constraints"]) {
      if (!c.is_string())
        return Status::InvalidInput(std::string(source) + ": constraints[" + std::to_string(i) + "] is not a string");
      d.constraints.push_back(c.get<std::string>());
      ++i;
    }
  }
  return d;
}

Result<Definition> LoadDefinition(const std::string& path) {
  KI_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  return ParseDefinition(text, path);
}

Result<Workload> ParseWorkload(std::string_view text, std::string_view source) {
  KI_ASSIGN_OR_RETURN(Json j, Parse(text, source));
  if (j.is_object() && j.contains("workload") && j["workload"].is_object()) j = j["workload"];
  if (!j.is_object() || !j.contains("axes") || !j["axes"].is_object())
    return Status::InvalidInput(std::string(source) + ": not a workload (no axes)");
  Workload w;
  if (j.contains("uuid") && j["uuid"].is_string()) w.uuid = j["uuid"].get<std::string>();
  for (const auto& [name, v] : j["axes"].items()) {
    if (!v.is_number_integer() || v.get<int64_t>() < 0)
      return Status::InvalidInput(std::string(source) + ": axis " + name + " is not a non-negative integer");
    w.axes[name] = v.get<int64_t>();
  }
  if (j.contains("inputs") && j["inputs"].is_object()) {
    for (const auto& [name, v] : j["inputs"].items()) {
      InputSource s;
      auto string_field = [&](const char* field) {
        return v.is_object() && v.contains(field) && v[field].is_string() ? v[field].get<std::string>() : std::string();
      };
      const std::string type = string_field("type");
      if (type == "random") {
        s.kind = InputSource::Kind::kRandom;
      } else if (type == "scalar") {
        s.kind = InputSource::Kind::kScalar;
        if (!v.contains("value") || !v["value"].is_number())
          return Status::InvalidInput(std::string(source) + ": scalar input " + name + " has no value");
        s.scalar = v["value"].get<double>();
      } else if (type == "safetensors") {
        s.kind = InputSource::Kind::kSafetensors;
        s.path = string_field("path");
        s.tensor_key = string_field("tensor_key");
      } else {
        return Status::InvalidInput(std::string(source) + ": input " + name + " has unknown type '" + type + "'");
      }
      w.inputs[name] = std::move(s);
    }
  }
  return w;
}

Result<std::vector<Workload>> LoadWorkloads(const std::string& path) {
  KI_ASSIGN_OR_RETURN(std::string text, ReadFile(path));
  std::vector<Workload> out;
  std::istringstream in(text);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    KI_ASSIGN_OR_RETURN(Workload w, ParseWorkload(line, path + ":" + std::to_string(n)));
    out.push_back(std::move(w));
  }
  return out;
}

Workload MakePagedDecodeWorkload(const std::string& uuid, int64_t batch, int64_t tokens, double sm_scale) {
  Workload w;
  w.uuid = uuid;
  w.axes["batch_size"] = batch;
  w.axes["num_pages"] = batch * tokens;
  w.axes["len_indptr"] = batch + 1;
  w.axes["num_kv_indices"] = batch * tokens;
  for (const char* name : {"q", "k_cache", "v_cache", "kv_indptr", "kv_indices"}) w.inputs[name] = InputSource{};
  InputSource scale;
  scale.kind = InputSource::Kind::kScalar;
  scale.scalar = sm_scale;
  w.inputs["sm_scale"] = scale;
  return w;
}

Result<std::map<std::string, int64_t>> ResolveAxes(const Definition& def, const Workload& w) {
  std::map<std::string, int64_t> axes = def.const_axes;
  for (const std::string& a : def.var_axes) {
    auto it = w.axes.find(a);
    if (it == w.axes.end()) return Status::InvalidInput("workload " + w.uuid + " lacks axis " + a);
    axes[a] = it->second;
  }
  return axes;
}

}  // namespace ki::harness
