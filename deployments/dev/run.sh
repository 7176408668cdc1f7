#!/usr/bin/env bash
# `make dev`: runs the Temporal dev server (with its Web UI), the demo MCP
# server and `mcpflow dev` in the foreground. Ctrl-C, SIGINT or SIGTERM (to
# this script or to the make running it) stops mcpflow first, then the demo
# server, then Temporal, waiting for each; nothing is left running.
#
# Settings (environment; `make dev` passes its variables of the same names):
#   DEV_API_PORT       mcpflow's API                        (default 8080)
#   DEV_TEMPORAL_PORT  Temporal's frontend (gRPC)           (default 7233)
#   DEV_UI_PORT        Temporal's Web UI                    (default 8233)
#   DEV_DEMO_PORT      the demo MCP server (streamable HTTP) (default 8765)
#   DEV_DIR            state: databases, logs, tokens, the MCP servers file
#                      (default .dev in the repository; relative to the
#                      directory run.sh is started from)
# config.yaml and extensions_config.json hold no port: the ports reach
# mcpflow as MCPFLOW_* variables and $DEMO_MCP_URL.
set -euo pipefail
CALLER_PWD=$PWD
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$ROOT/bin
API_PORT=${DEV_API_PORT:-8080}
TEMPORAL_PORT=${DEV_TEMPORAL_PORT:-7233}
UI_PORT=${DEV_UI_PORT:-8233}
DEMO_PORT=${DEV_DEMO_PORT:-8765}
DEV=${DEV_DIR:-$ROOT/.dev}
case $DEV in /*) ;; *) DEV=$CALLER_PWD/$DEV ;; esac
PORT_VARS=(DEV_API_PORT DEV_TEMPORAL_PORT DEV_UI_PORT DEV_DEMO_PORT)
PORT_WHAT=("mcpflow's API" "Temporal's frontend" "Temporal's Web UI" "the demo MCP server")
PORTS=("$API_PORT" "$TEMPORAL_PORT" "$UI_PORT" "$DEMO_PORT")
for i in "${!PORTS[@]}"; do
  p=${PORTS[i]}
  [[ $p =~ ^[0-9]+$ ]] && ((p > 0 && p < 65536)) || { echo "make dev: '$p' is not a port (${PORT_VARS[i]})" >&2; exit 2; }
  for ((j = 0; j < i; j++)); do
    [ "${PORTS[j]}" != "$p" ] || { echo "make dev: ${PORT_VARS[j]} and ${PORT_VARS[i]} are both $p: give each its own port" >&2; exit 2; }
  done
done
# listening PORT: whether something accepts connections on 127.0.0.1:PORT.
listening() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# The Temporal dev server also listens on random free ports (its HTTP API,
# metrics and internal services), taken from the kernel's ephemeral range:
# a chosen port in that range can be taken while Temporal starts.
read -r EPHEMERAL_LOW EPHEMERAL_HIGH < /proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || EPHEMERAL_LOW=
# check_ports WHEN INDEX...: stops make dev, naming the port, when one of
# the chosen ports is already taken.
check_ports() {
  local when=$1 i p hint
  shift
  for i in "$@"; do
    p=${PORTS[i]}
    listening "$p" || continue
    hint="choose a free port: make dev ${PORT_VARS[i]}=<port>"
    if [ -n "$EPHEMERAL_LOW" ] && ((p >= EPHEMERAL_LOW && p <= EPHEMERAL_HIGH)); then
      hint+=" outside $EPHEMERAL_LOW-$EPHEMERAL_HIGH (the range the Temporal dev server takes its random ports from)"
    fi
    echo "make dev: port $p (${PORT_VARS[i]}, ${PORT_WHAT[i]}) is taken $when; $hint" >&2
    return 1
  done
}
check_ports "by another program" 0 1 2 3 || exit 2
mkdir -p "$DEV"
SEARCH_ATTRS=(McpTaskStatus McpServer McpTaskName McpUserId McpThreadId McpApprovers)
TEMPORAL_ADDR=127.0.0.1:$TEMPORAL_PORT

# Demo tokens: generated once, kept in $DEV (git-ignored), printed below.
[ -s "$DEV/admin.token" ] || head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DEV/admin.token"
[ -s "$DEV/user.token" ] || head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DEV/user.token"

# make dev runs its own Temporal: the shell's TEMPORAL_* client settings and
# temporal.toml profiles (another cluster, TLS, an API key) must not reach
# mcpflow or the temporal commands below.
unset $(compgen -e | grep '^TEMPORAL_') || true
: > "$DEV/temporal.toml"
export TEMPORAL_CONFIG_FILE=$DEV/temporal.toml

# mcpflow's settings that depend on the ports and the state directory
# (the environment beats deployments/dev/config.yaml).
export MCPFLOW_AUTH_ADMIN_TOKENS="$(cat "$DEV/admin.token")"
export MCPFLOW_AUTH_USERS="demo-user:$(cat "$DEV/user.token")"
export MCPFLOW_SERVER_ADDR=127.0.0.1:$API_PORT
export MCPFLOW_TEMPORAL_ADDRESS=$TEMPORAL_ADDR
export MCPFLOW_TEMPORAL_WEB_UI_URL=http://127.0.0.1:$UI_PORT
export MCPFLOW_DATABASE_DSN=$DEV/mcpflow.db
export MCPFLOW_WORKSPACE_ROOT=$DEV/workspace
export MCPFLOW_EXTENSIONS_CONFIG=$DEV/extensions_config.json
# The servers in extensions_config.json: "demo" at $DEMO_MCP_URL, and
# "files", the same binary started as `demo-mcp` from the PATH. The admin API
# lets a stdio command through only when it is on the allowlist: extend it.
export DEMO_MCP_URL=http://127.0.0.1:$DEMO_PORT/mcp
export PATH=$BIN:$PATH
export MCPFLOW_MCP_STDIO_COMMAND_ALLOWLIST=${MCPFLOW_MCP_STDIO_COMMAND_ALLOWLIST:+$MCPFLOW_MCP_STDIO_COMMAND_ALLOWLIST,}demo-mcp

# Each process runs in a process group of its own (job control), so a Ctrl-C
# in the terminal reaches only make and this script, which stop them in order.
set -m
names=() pids=()
start() { # start NAME LOG COMMAND...: runs COMMAND in the background
  local name=$1 log=$2; shift 2
  if [ "$log" = - ]; then "$@" & else "$@" > "$log" 2>&1 & fi
  names+=("$name") pids+=($!)
}

stopping=0
stop_all() { # newest first: mcpflow, then demo-mcp, then Temporal
  [ "$stopping" = 1 ] && return
  stopping=1
  trap '' INT TERM
  echo; echo "make dev: stopping mcpflow, demo-mcp and Temporal..."
  local i p n
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do
    p=${pids[i]}
    kill -TERM "$p" 2>/dev/null || continue
    for ((n = 0; n < 300; n++)); do   # 30 s, more than mcpflow's shutdown_timeout_seconds
      kill -0 "$p" 2>/dev/null || break
      sleep 0.1
    done
    kill -KILL "$p" 2>/dev/null && echo "make dev: ${names[i]} did not stop within 30 s: killed"
    wait "$p" 2>/dev/null || true
    echo "make dev: stopped ${names[i]}"
  done
  echo "make dev: stopped."
}
trap 'stop_all; exit 0' INT TERM
trap 'stop_all' EXIT

# make does not pass a SIGINT sent to its own pid on (a terminal's Ctrl-C
# reaches the whole foreground group; `kill -INT <make pid>` only make): it
# resets its handler and waits for this script. Notice that and stop.
make_pid=
if [ -n "${MAKELEVEL:-}" ] && [[ $(ps -o comm= -p "$PPID" 2>/dev/null) == *make ]]; then make_pid=$PPID; fi
caught_int() { # whether process $1 has a SIGINT handler
  local mask
  mask=$(awk '/^SigCgt:/ {print $2}' "/proc/$1/status" 2>/dev/null) || return 1
  [ -n "$mask" ] && (((16#$mask & 2) != 0))
}
if [ -n "$make_pid" ] && ! caught_int "$make_pid"; then make_pid=; fi # make ignores SIGINT (started with it ignored)

sa_flags=()
for a in "${SEARCH_ATTRS[@]}"; do sa_flags+=(--search-attribute "$a=Keyword"); done
start Temporal "$DEV/temporal.log" "$BIN/temporal" server start-dev --ip 127.0.0.1 \
  --port "$TEMPORAL_PORT" --ui-port "$UI_PORT" \
  --db-filename "$DEV/temporal.db" \
  --sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal \
  --dynamic-config-value system.enableActivityEagerExecution=true \
  --log-level error "${sa_flags[@]}"

echo "make dev: waiting for Temporal on $TEMPORAL_ADDR ..."
for _ in $(seq 1 150); do
  "$BIN/temporal" operator cluster health --address "$TEMPORAL_ADDR" >/dev/null 2>&1 && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "Temporal exited; see $DEV/temporal.log"; tail -20 "$DEV/temporal.log"; exit 1; }
  sleep 0.2
done
# --search-attribute is ignored when the db file already exists: register what is missing.
existing=$("$BIN/temporal" operator search-attribute list --address "$TEMPORAL_ADDR" --namespace default 2>/dev/null || true)
for a in "${SEARCH_ATTRS[@]}"; do
  grep -qw "$a" <<<"$existing" || "$BIN/temporal" operator search-attribute create --address "$TEMPORAL_ADDR" \
    --namespace default --name "$a" --type Keyword >/dev/null
done

check_ports "by the Temporal dev server, which started on random free ports" 0 3 || exit 2
mkdir -p "$DEV/demo-files"
start demo-mcp "$DEV/demo-mcp.log" "$BIN/demo-mcp" --transport http --addr "127.0.0.1:$DEMO_PORT" \
  --state "$DEV/demo-jobs.json" --workdir "$DEV/demo-files"

# The admin API writes the MCP servers file: give it a copy in $DEV (made
# once) so the repository's deployments/dev/extensions_config.json stays as
# checked in. Remove $DEV/extensions_config.json to start from it again.
if [ ! -f "$DEV/extensions_config.json" ]; then
  cp deployments/dev/extensions_config.json "$DEV/extensions_config.json"
elif grep -qF -e '"$DEMO_MCP_BIN"' -e '"http://127.0.0.1:8765/mcp"' "$DEV/extensions_config.json"; then
  # A copy made by an earlier make dev: the command by name, the port from DEV_DEMO_PORT.
  sed -i.bak -e 's|"\$DEMO_MCP_BIN"|"demo-mcp"|' -e 's|"http://127\.0\.0\.1:8765/mcp"|"$DEMO_MCP_URL"|' "$DEV/extensions_config.json"
  echo "make dev: updated $DEV/extensions_config.json (\"command\": \"demo-mcp\", \"url\": \"\$DEMO_MCP_URL\"); the old one is extensions_config.json.bak"
fi

# The client commands (bin/mcpflow tools, call, tasks, events) default to
# port 8080 and ./.dev/user.token: say what they need on other ports, or
# with another state directory.
CLI_EXPORT="export MCPFLOW_URL=http://127.0.0.1:$API_PORT"
if [ "$DEV" != "$ROOT/.dev" ]; then CLI_EXPORT+=" MCPFLOW_TOKEN=\$(cat $(printf %q "$DEV/user.token"))"; fi

cat <<MSG

  mcpflow dev is starting
    API           http://127.0.0.1:$API_PORT   (curl http://127.0.0.1:$API_PORT/readyz)
                  (bin/mcpflow: $CLI_EXPORT)
    Temporal UI   http://127.0.0.1:$UI_PORT
    Temporal      $TEMPORAL_ADDR   (bin/temporal: export TEMPORAL_ADDRESS=$TEMPORAL_ADDR)
    demo MCP      $DEMO_MCP_URL
    admin token   $(cat "$DEV/admin.token")     (also in $DEV/admin.token)
    user token    $(cat "$DEV/user.token")     (user id demo-user; also in $DEV/user.token)
  Logs of Temporal and demo-mcp are in $DEV; Ctrl-C stops everything.

MSG

start mcpflow - "$BIN/mcpflow" dev --config deployments/dev/config.yaml

# Stop everything when one of the three exits, or when make got a SIGINT.
set +e
while :; do
  for i in "${!pids[@]}"; do
    if ! kill -0 "${pids[i]}" 2>/dev/null; then
      wait "${pids[i]}"
      rc=$?
      echo "make dev: ${names[i]} exited (status $rc)"
      exit "$rc"
    fi
  done
  if [ -n "$make_pid" ] && ! caught_int "$make_pid"; then stop_all; exit 0; fi
  sleep 0.5 & wait $!
done
