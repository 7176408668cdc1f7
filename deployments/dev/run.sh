#!/usr/bin/env bash
# `make dev`: runs the Temporal dev server (Web UI on :8233), the demo MCP
# server and `mcpflow dev` in the foreground. Ctrl-C (or SIGTERM) stops all
# three and waits for them; nothing is left running.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
BIN=$ROOT/bin
DEV=$ROOT/.dev
mkdir -p "$DEV"
SEARCH_ATTRS=(McpTaskStatus McpServer McpTaskName McpUserId McpThreadId)

# Demo tokens: generated once, kept in .dev/ (git-ignored), printed below.
[ -s "$DEV/admin.token" ] || head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DEV/admin.token"
[ -s "$DEV/user.token" ] || head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n' > "$DEV/user.token"
export MCPFLOW_AUTH_ADMIN_TOKENS="$(cat "$DEV/admin.token")"
export MCPFLOW_AUTH_USERS="demo-user:$(cat "$DEV/user.token")"
export DEMO_MCP_BIN="$BIN/demo-mcp"   # the stdio server "files" in extensions_config.json

pids=()
stopping=0
stop_all() {
  [ "$stopping" = 1 ] && return
  stopping=1
  echo; echo "make dev: stopping mcpflow, demo-mcp and Temporal..."
  for ((i=${#pids[@]}-1; i>=0; i--)); do kill -TERM "${pids[i]}" 2>/dev/null || true; done
  for _ in $(seq 1 100); do
    alive=0; for p in "${pids[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    [ $alive = 0 ] && break; sleep 0.1
  done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  echo "make dev: stopped."
}
trap 'stop_all; exit 0' INT TERM
trap 'stop_all' EXIT

sa_flags=()
for a in "${SEARCH_ATTRS[@]}"; do sa_flags+=(--search-attribute "$a=Keyword"); done
"$BIN/temporal" server start-dev --ip 127.0.0.1 --port 7233 --ui-port 8233 \
  --db-filename "$DEV/temporal.db" \
  --sqlite-pragma journal_mode=wal --sqlite-pragma synchronous=normal \
  --dynamic-config-value system.enableActivityEagerExecution=true \
  --log-level warn "${sa_flags[@]}" > "$DEV/temporal.log" 2>&1 &
pids+=($!)

echo "make dev: waiting for Temporal on 127.0.0.1:7233 ..."
for _ in $(seq 1 150); do
  "$BIN/temporal" operator cluster health --address 127.0.0.1:7233 >/dev/null 2>&1 && break
  kill -0 "${pids[0]}" 2>/dev/null || { echo "Temporal exited; see $DEV/temporal.log"; tail -20 "$DEV/temporal.log"; exit 1; }
  sleep 0.2
done
# --search-attribute is ignored when the db file already exists: register what is missing.
existing=$("$BIN/temporal" operator search-attribute list --address 127.0.0.1:7233 --namespace default 2>/dev/null || true)
for a in "${SEARCH_ATTRS[@]}"; do
  grep -qw "$a" <<<"$existing" || "$BIN/temporal" operator search-attribute create --address 127.0.0.1:7233 \
    --namespace default --name "$a" --type Keyword >/dev/null
done

mkdir -p "$DEV/demo-files"
"$BIN/demo-mcp" --transport http --addr 127.0.0.1:8765 --state "$DEV/demo-jobs.json" --workdir "$DEV/demo-files" \
  > "$DEV/demo-mcp.log" 2>&1 &
pids+=($!)

cat <<MSG

  mcpflow dev is starting
    API           http://127.0.0.1:8080   (curl http://127.0.0.1:8080/readyz)
    Temporal UI   http://127.0.0.1:8233
    demo MCP      http://127.0.0.1:8765/mcp
    admin token   $(cat "$DEV/admin.token")     (also in .dev/admin.token)
    user token    $(cat "$DEV/user.token")     (user id demo-user; also in .dev/user.token)
  Logs of Temporal and demo-mcp are in .dev/; Ctrl-C stops everything.

MSG

# The admin API writes the MCP servers file: give it a copy in .dev/ (made
# once) so the repository's deployments/dev/extensions_config.json stays as
# checked in. Remove .dev/extensions_config.json to start from it again.
[ -f "$DEV/extensions_config.json" ] || cp deployments/dev/extensions_config.json "$DEV/extensions_config.json"
export MCPFLOW_EXTENSIONS_CONFIG="$DEV/extensions_config.json"
"$BIN/mcpflow" dev --config deployments/dev/config.yaml &
pids+=($!)

# Stop everything when any of the three exits.
set +e
wait -n "${pids[@]}"
rc=$?
echo "make dev: a process exited (status $rc)"
exit "$rc"
