// ki audit: everything one store can check about itself offline. The
// store's own check (Store::Audit or Store::Reindex: every object re-hashed,
// every index table compared with what the objects say), the catalog
// tables' format (catalog::CheckTables), and every attestation in the store
// against the trust list (AuditAttestations). The command only prints it.
#pragma once

#include "ki/sign.h"
#include "ki/status.h"
#include "ki/store.h"

namespace ki {

struct WholeStoreAudit {
  // The store's faults, missing references and notes, the catalog tables'
  // included. An index entry found twice (a malformed catalog entry is
  // also one that differs from what the objects give) is one fault, its
  // details joined.
  AuditReport store;
  AttestationAudit attestations;
  bool HasFaults() const { return store.HasFaults() || attestations.faults() > 0; }
};

// `reindex`: rebuild every derived table from the objects first (the store
// must be open read-write), then check. The trust list and keys are read
// from $KI_HOME only when the store holds an attestation.
Result<WholeStoreAudit> AuditWholeStore(Store& store, bool reindex);

}  // namespace ki
