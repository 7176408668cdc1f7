#!/usr/bin/env bash
# conformance.sh: runs the official MCP conformance runner's server scenarios
# against an MCP endpoint for both protocol revisions and writes a Markdown
# report (scenario, revision, result, checks, note).
#
#   scripts/conformance.sh (--url URL | --fixture) [--token T] [--header 'Name: value']...
#                          [--out FILE] [--results DIR] [--scenario NAME]
#
#   --url URL       the endpoint (e.g. mcpflow's http://127.0.0.1:8080/mcp)
#   --fixture       start internal/testdata/npm/conformance_fixture_server.mjs
#                   and test it directly (stopped on exit)
#   --token T       send "Authorization: Bearer T" (same as --header)
#   --header H      send header H ("Name: value") on every request; repeatable
#   --out FILE      the report (default .conformance/report.md)
#   --results DIR   the runners' per-scenario results (default .conformance/results)
#   --scenario S    run only scenario S (for both revisions)
#
# Runs (all pinned in internal/testdata/npm/package.json, `make testdeps`):
#   2025-11-25  @modelcontextprotocol/conformance 0.1.16 (npm alias
#               conformance-2025), --suite active, then --suite pending
#   2026-07-28  @modelcontextprotocol/conformance 0.2.0-alpha.12,
#               --requirements 2026-07-28 (the scored scenarios plus the
#               unscored tasks-* extension and pending ones)
# The runner needs Node 22 or later: the local node_modules/node/bin/node.
#
# Headers: the runner has no option to send any (no --header flag, no
# environment variable, in either version), so they are added by a preload,
# conformance_auth.mjs (node --import), that gives undici's process-wide
# dispatcher, used by both the runner's fetch and its undici request(), the
# extra headers for requests to the endpoint's origin.
#
# It exits 1 when a scenario failed, 2 on a usage or setup error.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
npm_dir=$root/internal/testdata/npm
url='' fixture=0 out=$root/.conformance/report.md results=$root/.conformance/results scenario=''
headers=()
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --url) url=$2; shift 2 ;;
    --fixture) fixture=1; shift ;;
    --token) headers+=("Authorization: Bearer $2"); shift 2 ;;
    --header) headers+=("$2"); shift 2 ;;
    --out) out=$2; shift 2 ;;
    --results) results=$2; shift 2 ;;
    --scenario) scenario=$2; shift 2 ;;
    -h|--help) usage ;;
    *) echo "conformance.sh: unknown argument $1" >&2; usage ;;
  esac
done
if { [ -n "$url" ] && [ $fixture = 1 ]; } || { [ -z "$url" ] && [ $fixture = 0 ]; }; then
  echo "conformance.sh: give exactly one of --url and --fixture" >&2; exit 2
fi

node=$npm_dir/node_modules/node/bin/node
runner26=$npm_dir/node_modules/@modelcontextprotocol/conformance/dist/index.js
runner25=$npm_dir/node_modules/conformance-2025/dist/index.js
for f in "$node" "$runner26" "$runner25"; do
  [ -e "$f" ] || { echo "conformance.sh: $f is missing: run \`make testdeps\`" >&2; exit 2; }
done

if [ $fixture = 1 ]; then
  log=$(mktemp)
  "$node" "$npm_dir/conformance_fixture_server.mjs" --port 0 >"$log" 2>&1 &
  fixture_pid=$!
  trap 'kill $fixture_pid 2>/dev/null; wait $fixture_pid 2>/dev/null; rm -f "$log"' EXIT
  for _ in $(seq 300); do
    url=$(head -n1 "$log" | grep -E '^http://' || true)
    [ -n "$url" ] && break
    kill -0 $fixture_pid 2>/dev/null || { echo "conformance.sh: the fixture server exited: $(cat "$log")" >&2; exit 2; }
    sleep 0.1
  done
  [ -n "$url" ] || { echo "conformance.sh: the fixture server printed no URL: $(cat "$log")" >&2; exit 2; }
  echo "conformance fixture server at $url"
fi

# The extra headers, as JSON for conformance_auth.mjs.
headers_json=$("$node" -e '
  const h = {};
  for (const line of process.argv.slice(1)) {
    const i = line.indexOf(":");
    if (i < 1) { console.error(`conformance.sh: header ${JSON.stringify(line)} is not "Name: value"`); process.exit(2); }
    h[line.slice(0, i).trim()] = line.slice(i + 1).trim();
  }
  process.stdout.write(JSON.stringify(h));' "${headers[@]+"${headers[@]}"}")
origin=$("$node" -e 'process.stdout.write(new URL(process.argv[1]).origin)' "$url")

rm -rf "$results"
mkdir -p "$results/2025-11-25" "$results/2026-07-28" "$(dirname "$out")"
only=()
[ -n "$scenario" ] && only=(--scenario "$scenario")

# run LOG ARGS...: one runner invocation; its output goes to LOG (and a
# summary line to stdout). A failing scenario makes the runner exit 1; the
# report decides what that means.
run() {
  local log=$1; shift
  CONFORMANCE_HEADERS=$headers_json CONFORMANCE_HEADERS_ORIGIN=$origin \
    "$node" --import "$npm_dir/conformance_auth.mjs" "$@" --url "$url" >"$log" 2>&1 || true
  sed 's/\x1b\[[0-9;]*m//g' "$log" | grep -E '^Total:' || echo "  (no summary: see $log)"
}

echo "2025-11-25: conformance 0.1.16 against $url"
run "$results/2025-11-25/active.log" "$runner25" server --suite active -o "$results/2025-11-25" "${only[@]+"${only[@]}"}"
[ -n "$scenario" ] || run "$results/2025-11-25/pending.log" "$runner25" server --suite pending -o "$results/2025-11-25"
echo "2026-07-28: conformance 0.2.0-alpha.12 --requirements 2026-07-28 against $url"
if [ -n "$scenario" ]; then
  run "$results/2026-07-28/run.log" "$runner26" server "${only[@]}" -o "$results/2026-07-28"
else
  run "$results/2026-07-28/run.log" "$runner26" server --requirements 2026-07-28 -o "$results/2026-07-28"
fi

rc=0
"$node" "$npm_dir/conformance_report.mjs" --endpoint "$url" --out "$out" \
  --run "2025-11-25=$results/2025-11-25" \
  --label "2025-11-25=@modelcontextprotocol/conformance 0.1.16, server --suite active and --suite pending" \
  --run "2026-07-28=$results/2026-07-28" \
  --label "2026-07-28=@modelcontextprotocol/conformance 0.2.0-alpha.12, server --requirements 2026-07-28" || rc=$?
echo "report: $out (per-scenario checks in $results)"
exit $rc
