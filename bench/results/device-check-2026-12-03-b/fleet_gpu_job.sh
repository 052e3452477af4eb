#!/bin/bash
# ki fleet: re-runs of set sha256:e7d662c49581121b4a7a225cb130777466f42af0b4a154d125f8c3995c2d73f5
# 1 run, 2 replicas each; array task i re-runs run i / 2 (docs/fleet.md).
#SBATCH --job-name=ki-fleet-e7d662c49581
#SBATCH --array=0-1
#SBATCH --output=ki-fleet-%A_%a.out
#SBATCH --gres=gpu:1
set -u
# The scratch store is on the node's own disk (LMDB never goes on a shared
# filesystem) and goes when the task ends, however it ends; a TERM (scancel,
# the time limit) ends the task before its result's tag is written, so the
# remote holds the whole result or none of it.
scratch_parent='<tmp>/scratch'
scratch=$(mktemp -d "$scratch_parent/ki-fleet-task.XXXXXXXX") || exit 5
trap 'rm -rf -- "$scratch"' EXIT
trap 'exit 143' TERM
'<bin>/ki' fleet task --remote 'oci://127.0.0.1:41017/ki/fleet-gpu' --insecure --array-id "$SLURM_ARRAY_TASK_ID" --replicas 2 --scratch "$scratch" --device 'cuda:0' --tolerance 0.25 --context 'sha256:b63147f3f8d3749563806f5ab2f61a5f166ba542d9ffb30ee0e973440fd87e40' --runs - <<'KI_FLEET_RUNS' &
sha256:ad3159fd0e80db688cf5737d19198c2b2644d3899fa86eed0e2aac99f687d69f
KI_FLEET_RUNS
wait $!
