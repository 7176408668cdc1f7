// Lists the options of `npx` (npm exec) that take no value: npm's Boolean
// config definitions as --<name>, and the shorthands that expand to a
// Boolean flag or to a flag together with its value, as -<name>.
//
// Source of truth: @npmcli/config as bundled in the pinned npm. Regenerate
// the table in config/launch_tables.go with:
//
//   cd /tmp && npm pack npm@10.9.4 && tar xzf npm-10.9.4.tgz
//   node <repo>/config/launchgen/npx_boolean_args.js /tmp/package
//
// -p is left out: for `npm exec` it is --package <spec> and consumes a value,
// although npm's shorthand table maps it to the Boolean --parseable.
const path = require('path')
const root = process.argv[2] || 'package'
const { definitions, shorthands } = require(path.resolve(root, 'node_modules/@npmcli/config/lib/definitions'))
const isBool = (d) => {
  const t = Array.isArray(d.type) ? d.type : [d.type]
  return t.includes(Boolean) && t.every((x) => x === Boolean || x === null)
}
const out = new Set()
for (const [k, d] of Object.entries(definitions)) if (isBool(d)) out.add('--' + k)
for (const [s, exp] of Object.entries(shorthands)) {
  const d = definitions[exp[0].replace(/^--/, '')]
  if (exp.length === 2 || (d && isBool(d)) || exp[0].startsWith('--no-')) out.add('-' + s)
}
out.delete('-p')
console.log([...out].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0)).join('\n'))
