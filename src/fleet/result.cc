// Fleet result records: what one array task did, as JSON (docs/format.md,
// "Fleet results"). Read strictly: a record comes from another machine.
#include "json/fields.h"
#include "ki/fleet.h"

namespace ki::fleet {

namespace {

Json OptDigest(const std::optional<Digest>& d) { return d ? Json(d->str()) : Json(nullptr); }

Result<std::optional<Digest>> ReadOptDigest(const Json& j, std::string_view key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return std::optional<Digest>();
  if (!j[key].is_string()) return WrongType(where, key, j[key], "a digest string");
  auto d = Digest::Parse(j[key].get<std::string>());
  if (!d.ok()) return Status::InvalidInput(where + ": `" + std::string(key) + "`: " + d.status().message());
  return std::optional<Digest>(*d);
}

}  // namespace

Json ResultToJson(const FleetResult& r) {
  Json failure = nullptr;
  if (!r.failure_step.empty()) failure = {{"step", r.failure_step}, {"message", r.failure}};
  return {{"format", kResultFormat},
          {"run", r.run.str()},
          {"runner", {{"keyid", r.keyid}, {"name", r.runner}, {"machine", r.machine}}},
          {"outcome", r.outcome},
          {"status", r.status},
          {"rerun", OptDigest(r.rerun)},
          {"verdict", r.verdict ? *r.verdict : Json(nullptr)},
          {"attestation", OptDigest(r.attestation)},
          {"attestationPredicate", r.attestation_kind},
          {"note", r.note},
          {"failure", failure},
          {"log", OptDigest(r.log)},
          {"slurm", {{"job", r.job}, {"arrayTask", r.array_id}, {"node", r.node}}},
          {"startedAt", r.started_at},
          {"finishedAt", r.finished_at}};
}

Result<FleetResult> ResultFromJson(const Json& j, std::string_view where_in) {
  const std::string where(where_in);
  KI_RETURN_IF_ERROR(CheckObject(j, where));
  KI_ASSIGN_OR_RETURN(std::string format, GetString(j, "format", where));
  if (format != kResultFormat) {
    return Status::InvalidInput(where + ": `format` is '" + format + "', not " + std::string(kResultFormat));
  }
  FleetResult r;
  KI_ASSIGN_OR_RETURN(auto run, ReadOptDigest(j, "run", where));
  if (!run) return Status::InvalidInput(where + ": `run` is missing");
  r.run = *run;
  const std::string rw = where + ".runner";
  if (!j.contains("runner")) return Status::InvalidInput(where + ": `runner` is missing");
  KI_RETURN_IF_ERROR(CheckObject(j["runner"], rw));
  KI_ASSIGN_OR_RETURN(r.keyid, GetString(j["runner"], "keyid", rw));
  if (r.keyid.size() != 64 || r.keyid.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Status::InvalidInput(rw + ": `keyid` is not 64 lowercase hex digits");
  }
  KI_ASSIGN_OR_RETURN(r.runner, GetString(j["runner"], "name", rw));
  KI_ASSIGN_OR_RETURN(r.machine, GetString(j["runner"], "machine", rw));
  KI_ASSIGN_OR_RETURN(r.outcome, GetString(j, "outcome", where));
  if (r.outcome != "rerun" && r.outcome != "failed") {
    return Status::InvalidInput(where + ": `outcome` is '" + r.outcome + "', not rerun or failed");
  }
  KI_ASSIGN_OR_RETURN(r.status, GetString(j, "status", where));
  KI_ASSIGN_OR_RETURN(r.rerun, ReadOptDigest(j, "rerun", where));
  if (r.outcome == "rerun" && !r.rerun) return Status::InvalidInput(where + ": a rerun outcome names no `rerun`");
  if (j.contains("verdict") && !j["verdict"].is_null()) {
    KI_RETURN_IF_ERROR(CheckObject(j["verdict"], where + ".verdict"));
    r.verdict = j["verdict"];
  }
  KI_ASSIGN_OR_RETURN(r.attestation, ReadOptDigest(j, "attestation", where));
  KI_ASSIGN_OR_RETURN(r.attestation_kind, GetString(j, "attestationPredicate", where));
  KI_ASSIGN_OR_RETURN(r.note, GetString(j, "note", where));
  if (j.contains("failure") && !j["failure"].is_null()) {
    KI_RETURN_IF_ERROR(CheckObject(j["failure"], where + ".failure"));
    KI_ASSIGN_OR_RETURN(r.failure_step, GetString(j["failure"], "step", where + ".failure"));
    KI_ASSIGN_OR_RETURN(r.failure, GetString(j["failure"], "message", where + ".failure"));
  }
  if (r.outcome == "failed" && r.failure_step.empty()) {
    return Status::InvalidInput(where + ": a failed outcome names no `failure.step`");
  }
  KI_ASSIGN_OR_RETURN(r.log, ReadOptDigest(j, "log", where));
  if (j.contains("slurm") && !j["slurm"].is_null()) {
    const std::string sw = where + ".slurm";
    KI_RETURN_IF_ERROR(CheckObject(j["slurm"], sw));
    KI_ASSIGN_OR_RETURN(r.job, GetString(j["slurm"], "job", sw));
    KI_ASSIGN_OR_RETURN(r.array_id, GetUnsigned(j["slurm"], "arrayTask", sw));
    KI_ASSIGN_OR_RETURN(r.node, GetString(j["slurm"], "node", sw));
  }
  KI_ASSIGN_OR_RETURN(r.started_at, GetString(j, "startedAt", where));
  KI_ASSIGN_OR_RETURN(r.finished_at, GetString(j, "finishedAt", where));
  return r;
}

}  // namespace ki::fleet
