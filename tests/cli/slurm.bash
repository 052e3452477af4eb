# A one-node Slurm cluster on 127.0.0.1 for tests/cli/fleet_slurm.sh, from
# Debian's slurm-wlm and munge: munged with a temporary key on its own
# socket, slurmctld and slurmd with a temporary slurm.conf (state, spool,
# logs and pid files under WORKDIR, non-default ports), all run as root
# (SlurmUser=SlurmdUser=root) with cgroup-free plugins (proctrack/linuxproc,
# task/none), so that nothing of the machine's own configuration is read or
# written.
#
#   source tests/cli/slurm.bash
#   slurm_start WORKDIR [CPUS] [TASKPROLOG]
#
# Exports SLURM_CONF (every Slurm command reads it) and sets SLURM_NODE;
# returns non-zero with the daemons' last log lines when the node does not
# become idle within 30 s. slurm_stop stops all three (safe to call twice).
# Accounting is off (no slurmdbd): sacct has nothing; squeue and the
# controller's job records are what there is.

SLURM_PIDS=()
SLURM_NODE=kinode

slurm_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

slurm_start() {
  local work=$1 cpus=${2:-2} prolog=${3:-}
  local host
  host=$(hostname -s)
  mkdir -p "$work/state" "$work/spool" "$work/munge"
  chmod 700 "$work/munge"
  # A fresh key: 1 KiB of random bytes, readable by its owner only (munged
  # refuses anything looser).
  dd if=/dev/urandom of="$work/munge/munge.key" bs=1024 count=1 status=none
  chmod 400 "$work/munge/munge.key"
  munged --force --socket="$work/munge/munge.sock" --key-file="$work/munge/munge.key" \
    --pid-file="$work/munge/munged.pid" --log-file="$work/munge/munged.log" \
    --seed-file="$work/munge/munged.seed" || { echo "munged did not start" >&2; return 1; }
  SLURM_PIDS+=("$(cat "$work/munge/munged.pid")")
  local ctl_port d_port
  ctl_port=$(slurm_free_port)
  d_port=$(slurm_free_port)
  cat >"$work/slurm.conf" <<CONF
ClusterName=kitest
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctl_port
SlurmdPort=$d_port
AuthType=auth/munge
AuthInfo=socket=$work/munge/munge.sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/slurmctld.log
SlurmdLogFile=$work/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
MpiDefault=none
ReturnToService=2
MaxArraySize=10001
KillWait=5
${prolog:+TaskProlog=$prolog}
NodeName=$SLURM_NODE NodeHostname=$host NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=ki Nodes=$SLURM_NODE Default=YES MaxTime=INFINITE State=UP
CONF
  export SLURM_CONF=$work/slurm.conf
  slurmctld -f "$SLURM_CONF" -i || { tail -20 "$work/slurmctld.log" >&2; return 1; }
  local _
  for _ in $(seq 50); do [ -s "$work/slurmctld.pid" ] && break; sleep 0.1; done
  SLURM_PIDS+=("$(cat "$work/slurmctld.pid")")
  slurmd -f "$SLURM_CONF" -N "$SLURM_NODE" || { tail -20 "$work/slurmd.log" >&2; return 1; }
  for _ in $(seq 50); do [ -s "$work/slurmd.pid" ] && break; sleep 0.1; done
  SLURM_PIDS+=("$(cat "$work/slurmd.pid")")
  for _ in $(seq 300); do
    if sinfo -h -N -o '%t' 2>/dev/null | grep -q '^idle'; then return 0; fi
    sleep 0.1
  done
  echo "the Slurm node did not become idle:" >&2
  sinfo -N >&2 || true
  tail -10 "$work/slurmctld.log" "$work/slurmd.log" >&2
  return 1
}

slurm_stop() {
  local i _
  # Jobs first: a slurmd stopped under running tasks leaves their
  # slurmstepd processes behind.
  if [ ${#SLURM_PIDS[@]} -ge 3 ]; then
    scancel --quiet --full --user="$(id -un)" 2>/dev/null || true
    for _ in $(seq 100); do
      [ -z "$(squeue -h 2>/dev/null)" ] && break
      sleep 0.1
    done
  fi
  # Newest first: slurmd, slurmctld, munged.
  for ((i = ${#SLURM_PIDS[@]} - 1; i >= 0; i--)); do
    kill "${SLURM_PIDS[$i]}" 2>/dev/null || true
  done
  for i in "${SLURM_PIDS[@]}"; do
    for _ in $(seq 50); do kill -0 "$i" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$i" 2>/dev/null || true
  done
  SLURM_PIDS=()
}
