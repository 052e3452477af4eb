#!/bin/bash
# ki fleet: re-runs of set sha256:9cfad7805580c4afdc3a0fdf6a2cb1962ae865a809b044c7e16c8910a91a1c28
# 1 run, 2 replicas each; array task i re-runs run i / 2 (docs/fleet.md).
#SBATCH --job-name=ki-fleet-9cfad7805580
#SBATCH --array=0-1
#SBATCH --output=ki-fleet-%A_%a.out
#SBATCH --gres=gpu:1
set -u
# The scratch store is on the node's own disk (LMDB never goes on a shared
# filesystem) and goes when the task ends, however it ends; a TERM (scancel,
# the time limit) ends the task before its result's tag is written, so the
# remote holds the whole result or none of it.
scratch_parent='/tmp/ki-cli-UqFmXb/scratch'
scratch=$(mktemp -d "$scratch_parent/ki-fleet-task.XXXXXXXX") || exit 5
trap 'rm -rf -- "$scratch"' EXIT
trap 'exit 143' TERM
'<tree>/.wt/bin/ki' fleet task --remote 'oci://127.0.0.1:34197/ki/fleet-gpu' --insecure --array-id "$SLURM_ARRAY_TASK_ID" --replicas 2 --scratch "$scratch" --device 'cuda:0' --tolerance 0.25 --context 'sha256:b63147f3f8d3749563806f5ab2f61a5f166ba542d9ffb30ee0e973440fd87e40' --runs - <<'KI_FLEET_RUNS' &
sha256:a7516d5eed9849cf681b18a770df906f3ab836fcdcd42f592706b0e6a32dac8c
KI_FLEET_RUNS
wait $!
