// inspector_discovery.mjs runs the MCP Inspector's CLI
// (@modelcontextprotocol/inspector 2.12.0, what `npx
// @modelcontextprotocol/inspector --cli …` runs) so that a Go test can take
// its interactive OAuth login through (internal/testsupport/testenv's RunInspectorCLI):
//
//   node inspector_discovery.mjs <URL> --transport http --method tools/list \
//     --client-id ID --callback-url http://127.0.0.1:0/oauth/callback --format json
//
// The arguments are the Inspector CLI's own (they follow its --cli mode
// flag). On a 401 the CLI discovers the protected resource metadata and the
// authorization server itself, listens on the loopback --callback-url,
// prints "Please navigate to: <authorization URL>" on stderr and waits for
// the browser's redirect to the callback; then it exchanges the code and
// runs --method.
//
// The CLI starts that login only when a person may be at a terminal: stdin
// or stderr is a TTY, or MCP_AUTO_OPEN_ENABLED=true, which also makes it
// launch a browser ("Interactive OAuth requires a TTY on stdin or stderr (or
// MCP_AUTO_OPEN_ENABLED=true)", exit 3, otherwise). This wrapper declares
// stdin a TTY, the one thing it changes, and loads the Inspector's launcher
// unmodified; with stderr not a TTY (and MCP_AUTO_OPEN_ENABLED=false, which
// the Go runner sets) the CLI only prints the URL and opens no browser.
import { fileURLToPath } from 'node:url';

const launcher = new URL('./node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js', import.meta.url);
Object.defineProperty(process.stdin, 'isTTY', { value: true, configurable: true });
process.argv = [process.argv[0], fileURLToPath(launcher), '--cli', ...process.argv.slice(2)];
await import(launcher.href);
