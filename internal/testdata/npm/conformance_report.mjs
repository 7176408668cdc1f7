// conformance_report.mjs: turns the result directories of MCP conformance
// runner runs (-o DIR: one server-<scenario>-<timestamp>/checks.json per
// scenario) into a Markdown table: scenario, revision, result, checks, note.
// scripts/conformance.sh runs it; it exits 1 when a scenario failed.
//
//   node conformance_report.mjs --endpoint URL --out FILE \
//     --run 2025-11-25=DIR --label '2025-11-25=conformance 0.1.16 …' \
//     --run 2026-07-28=DIR --label '2026-07-28=…'
//
// Tiers come from the runner logs in each DIR: "(extension)", "(pending)"…
// in the "Not scored" list of --requirements runs, and every scenario of a
// run logged to pending.log (the 0.1.16 --suite pending run).
//
// Every scenario that runs must pass: mcpflow relays tools, prompts,
// resources, completions and logging, and the fixture serves them all.
import { readFileSync, readdirSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';

const args = process.argv.slice(2);
const runs = [];
const labels = {};
let endpoint = '';
let out = '';
for (let i = 0; i < args.length; i++) {
  const [flag, value] = [args[i], args[++i]];
  if (flag === '--run') { const [rev, dir] = split(value); runs.push({ rev, dir }); }
  else if (flag === '--label') { const [rev, text] = split(value); labels[rev] = text; }
  else if (flag === '--endpoint') endpoint = value;
  else if (flag === '--out') out = value;
  else { console.error(`conformance_report: unknown flag ${flag}`); process.exit(2); }
}
function split(v) { const i = v.indexOf('='); return [v.slice(0, i), v.slice(i + 1)]; }

/** tiers reads scenario tiers from the runner logs of dir. */
function tiers(dir) {
  const t = {};
  for (const f of readdirSync(dir).filter((f) => f.endsWith('.log'))) {
    const log = readFileSync(join(dir, f), 'utf8').replace(/\x1b\[[0-9;]*m/g, '');
    for (const m of log.matchAll(/^\s+[✓✗]\s+(\S+)\s+\(([^)]+)\)\s*$/gm)) t[m[1]] = m[2];
    if (f === 'pending.log') for (const m of log.matchAll(/^=== Running scenario: (\S+) ===$/gm)) t[m[1]] = 'pending';
  }
  return t;
}

const rows = [];
const totals = { pass: 0, fail: 0, skipped: 0 };
for (const { rev, dir } of runs) {
  if (!existsSync(dir)) continue;
  const tier = tiers(dir);
  const seen = new Map();
  for (const d of readdirSync(dir).sort()) {
    const m = /^server-(.+)-\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}-\d{3}Z$/.exec(d);
    if (!m || !existsSync(join(dir, d, 'checks.json'))) continue;
    seen.set(m[1], JSON.parse(readFileSync(join(dir, d, 'checks.json'), 'utf8'))); // the newest run of a scenario wins
  }
  for (const [scenario, checks] of seen) {
    const counted = checks;
    const failed = counted.filter((c) => c.status === 'FAILURE');
    const warned = counted.filter((c) => c.status === 'WARNING');
    const ran = counted.filter((c) => c.status !== 'SKIPPED' && c.status !== 'INFO');
    const notes = [];
    if (tier[scenario]) notes.push(`${tier[scenario]}, not scored`);
    let result;
    if (ran.length === 0) {
      result = 'skipped';
      const why = counted.find((c) => c.errorMessage)?.errorMessage;
      if (why) notes.push(why);
      totals.skipped++;
    } else if (failed.length) {
      result = '**FAIL**';
      notes.push(...failed.slice(0, 3).map((c) => `${c.id}: ${(c.errorMessage ?? '').slice(0, 160)}`));
      if (failed.length > 3) notes.push(`and ${failed.length - 3} more`);
      totals.fail++;
    } else {
      result = warned.length ? 'pass, with warnings' : 'pass';
      totals.pass++;
    }
    if (warned.length) notes.push(`${warned.length} warning(s): ${warned.map((c) => c.id).join(', ')}`);
    const passed = counted.filter((c) => c.status === 'SUCCESS').length;
    rows.push({ scenario, rev, result, checks: `${passed}/${ran.length}`, note: notes.join('; ') });
  }
}

const cell = (s) => String(s).replace(/\|/g, '\\|').replace(/\n/g, ' ');
const lines = [
  '# MCP conformance',
  '',
  `Endpoint: \`${endpoint}\``,
  '',
  ...runs.map(({ rev }) => `- ${rev}: ${labels[rev] ?? ''}`),
  '',
  `${totals.pass} pass, ${totals.fail} fail, ${totals.skipped} skipped.`,
  '',
  '| Scenario | Revision | Result | Checks passed | Note |',
  '|---|---|---|---|---|',
  ...rows.map((r) => `| ${cell(r.scenario)} | ${r.rev} | ${cell(r.result)} | ${r.checks} | ${cell(r.note)} |`),
  '',
];
writeFileSync(out, lines.join('\n'));
process.exit(totals.fail ? 1 : 0);
