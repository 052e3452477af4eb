// What the fleet module's files share (not part of the public header).
#pragma once

#include <chrono>
#include <string>

#include "ki/fleet.h"

namespace ki::fleet::internal {

double Seconds(std::chrono::steady_clock::time_point since);

// The kSetsTable value of a submission, and back.
Json SetRecordJson(const SetRecord& r, const Json& jobs);
Result<SetRecord> SetRecordFromJson(const Json& j, const std::string& where);

}  // namespace ki::fleet::internal
