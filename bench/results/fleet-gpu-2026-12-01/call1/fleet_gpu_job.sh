#!/bin/bash
# ki fleet: re-runs of set sha256:42b484e8db6eb52f1fdf592a4b83374c243fdee91d196e30faaa714a7530bbe9
# 1 run, 2 replicas each; array task i re-runs run i / 2 (docs/fleet.md).
#SBATCH --job-name=ki-fleet-42b484e8db6e
#SBATCH --array=0-1
#SBATCH --output=ki-fleet-%A_%a.out
#SBATCH --gres=gpu:1
set -u
# The scratch store is on the node's own disk (LMDB never goes on a shared
# filesystem) and goes when the task ends, however it ends; a TERM (scancel,
# the time limit) ends the task before its result's tag is written, so the
# remote holds the whole result or none of it.
scratch_parent='$WORK/scratch'
scratch=$(mktemp -d "$scratch_parent/ki-fleet-task.XXXXXXXX") || exit 5
trap 'rm -rf -- "$scratch"' EXIT
trap 'exit 143' TERM
'$BIN/ki' fleet task --remote 'oci://127.0.0.1:55995/ki/fleet-gpu' --insecure --array-id "$SLURM_ARRAY_TASK_ID" --replicas 2 --scratch "$scratch" --device 'cuda:0' --tolerance 0.25 --context 'sha256:b63147f3f8d3749563806f5ab2f61a5f166ba542d9ffb30ee0e973440fd87e40' --runs - <<'KI_FLEET_RUNS' &
sha256:35ef869553c508d29f6e992ccabc3d908ffe6ce693bebe3114efdff089ac9f2f
KI_FLEET_RUNS
wait $!
