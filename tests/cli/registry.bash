# Starts Debian's docker-registry (the CNCF distribution registry) on
# 127.0.0.1 for tests/cli/remote_registry.sh and bench/remote/bench_remote.sh,
# so that both run the registry configured the same way.
#
#   source tests/cli/registry.bash
#   registry_start WORKDIR STORAGE [CACHE] [GOGC]
#
# WORKDIR receives registry.yml and registry.log; STORAGE is the storage
# root directory (created). CACHE "inmemory" adds the blob descriptor cache
# (`cache: blobdescriptor: inmemory`); GOGC, when given, is the registry
# process's Go GC setting. Sets REG_PID and REG_PORT; returns non-zero with
# a message when the registry does not start listening within 10 s.
# registry_stop kills it (safe to call twice, or when it never started).
#
# Variables named REGISTRY_* in the environment would be read by the
# registry as configuration: callers keep their own settings elsewhere.

REG_PID=""
REG_PORT=""

registry_free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])' 2>/dev/null ||
    echo $((20000 + RANDOM % 40000))
}

registry_start() {
  local work=$1 storage=$2 cache=${3:-} gogc=${4:-} cache_yml=""
  REG_PORT=$(registry_free_port)
  mkdir -p "$storage"
  [ "$cache" = inmemory ] && cache_yml=$'  cache:\n    blobdescriptor: inmemory'
  cat >"$work/registry.yml" <<YML
version: 0.1
log:
  level: error
  accesslog:
    disabled: true
storage:
  filesystem:
    rootdirectory: $storage
$cache_yml
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$REG_PORT
YML
  if [ -n "$gogc" ]; then
    GOGC=$gogc docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
  else
    docker-registry serve "$work/registry.yml" >"$work/registry.log" 2>&1 &
  fi
  REG_PID=$!
  local _
  for _ in $(seq 100); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$REG_PORT") 2>/dev/null; then return 0; fi
    if ! kill -0 "$REG_PID" 2>/dev/null; then
      echo "docker-registry did not start:" >&2
      head -5 "$work/registry.log" >&2
      return 1
    fi
    sleep 0.1
  done
  echo "docker-registry is not listening on 127.0.0.1:$REG_PORT" >&2
  return 1
}

registry_stop() {
  if [ -n "$REG_PID" ]; then
    kill "$REG_PID" 2>/dev/null || true
    wait "$REG_PID" 2>/dev/null || true
  fi
  REG_PID=""
}
