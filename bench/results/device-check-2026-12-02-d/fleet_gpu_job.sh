#!/bin/bash
# ki fleet: re-runs of set sha256:6637b965e108fa1eb3ff79bc83d0326fd0263999ad3324583d859f4f2a4188cb
# 1 run, 2 replicas each; array task i re-runs run i / 2 (docs/fleet.md).
#SBATCH --job-name=ki-fleet-6637b965e108
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
'<bindir>/ki' fleet task --remote 'oci://127.0.0.1:50215/ki/fleet-gpu' --insecure --array-id "$SLURM_ARRAY_TASK_ID" --replicas 2 --scratch "$scratch" --device 'cuda:0' --tolerance 0.25 --context 'sha256:b63147f3f8d3749563806f5ab2f61a5f166ba542d9ffb30ee0e973440fd87e40' --runs - <<'KI_FLEET_RUNS' &
sha256:f7117231e3f9a51fb40e5d84e2ea57375d630fb52ae9ea7908e4fc070c410c4e
KI_FLEET_RUNS
wait $!
