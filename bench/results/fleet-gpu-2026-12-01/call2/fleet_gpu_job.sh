#!/bin/bash
# ki fleet: re-runs of set sha256:a7e706082c78a422064f1807e7185ea489556309ea7c66634446389fef0e566a
# 1 run, 2 replicas each; array task i re-runs run i / 2 (docs/fleet.md).
#SBATCH --job-name=ki-fleet-a7e706082c78
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
'$BIN/ki' fleet task --remote 'oci://127.0.0.1:46815/ki/fleet-gpu' --insecure --array-id "$SLURM_ARRAY_TASK_ID" --replicas 2 --scratch "$scratch" --device 'cuda:0' --tolerance 0.25 --context 'sha256:b63147f3f8d3749563806f5ab2f61a5f166ba542d9ffb30ee0e973440fd87e40' --runs - <<'KI_FLEET_RUNS' &
sha256:f573b5264223727d2456700ef9a5f51b4b0046a4612b33e51181e19cb2e6e567
KI_FLEET_RUNS
wait $!
