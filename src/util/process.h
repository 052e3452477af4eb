// Whether the process that left a file behind has ended. Scratch files of
// the store, the run cache and the keyring carry their writer's pid in
// their names; each sweep removes only the files of writers that are gone.
#pragma once

#include <cstdint>

namespace ki {

// True only when `pid` names another process of this machine that no
// longer exists: kill(pid, 0) fails with ESRCH. EPERM (a process of another
// user has the pid) or success means the writer may still be at work, and
// this process's own pid, 0, negatives and pids past pid_t's range are never
// "gone". One store or KI_HOME, one pid namespace: a writer in another
// namespace would be taken for dead, as LMDB's lock file assumes one machine.
bool ProcessIsGone(int64_t pid);

}  // namespace ki
