// conformance_auth.mjs: a preload (node --import) that makes the MCP
// conformance runner send extra HTTP headers, such as Authorization, which
// it has no option for: neither 0.2.0-alpha.12 nor 0.1.16 has a --header
// flag or an environment variable for it (the only variable either reads is
// GITHUB_TOKEN, for tier-check), and its server scenarios never authenticate.
//
//   CONFORMANCE_HEADERS='{"Authorization":"Bearer <token>"}' \
//   [CONFORMANCE_HEADERS_ORIGIN=http://127.0.0.1:8080] \
//     node --import ./conformance_auth.mjs …/conformance/dist/index.js server --url …
//
// The runner reaches the server three ways: fetch (its 2026 wire, and the
// TypeScript SDK v1 client of its 2025 wire) and undici's request() (the
// DNS-rebinding probes, which set their own Host), which both go through the
// process-wide undici dispatcher, and node:http's request() (the SEP-2243
// header scenarios, which need exact header casing). This installs a
// dispatcher and wraps http.request so that each adds the headers a request
// does not already carry to every request to CONFORMANCE_HEADERS_ORIGIN
// (default: to every origin).
import http from 'node:http';
import { Agent, setGlobalDispatcher } from 'undici';

const extra = Object.entries(JSON.parse(process.env.CONFORMANCE_HEADERS || '{}'));
const origin = process.env.CONFORMANCE_HEADERS_ORIGIN ? new URL(process.env.CONFORMANCE_HEADERS_ORIGIN).origin : undefined;

/** withHeaders returns headers (any shape undici accepts) with the extra headers it lacks. */
function withHeaders(headers) {
  if (Array.isArray(headers)) {
    const have = new Set(headers.filter((_, i) => i % 2 === 0).map((k) => String(k).toLowerCase()));
    return [...headers, ...extra.filter(([k]) => !have.has(k.toLowerCase())).flat()];
  }
  const out = headers == null ? {} : typeof headers[Symbol.iterator] === 'function' ? Object.fromEntries(headers) : { ...headers };
  const have = new Set(Object.keys(out).map((k) => k.toLowerCase()));
  for (const [k, v] of extra) if (!have.has(k.toLowerCase())) out[k] = v;
  return out;
}

/** forOrigin tells whether a request to host:port (or a URL) gets the headers. */
function forOrigin(target) {
  if (origin === undefined) return true;
  try { return new URL(target).origin === origin; } catch { return false; }
}

if (extra.length) {
  const request = http.request;
  http.request = function (...args) {
    const i = typeof args[0] === 'string' || args[0] instanceof URL ? 1 : 0;
    const base = i === 1 ? new URL(String(args[0])) : undefined;
    const o = args[i] && typeof args[i] === 'object' ? args[i] : undefined;
    const host = o?.hostname ?? o?.host?.replace(/:\d+$/, '') ?? base?.hostname;
    const port = o?.port ?? base?.port;
    if (host !== undefined && forOrigin(`http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}${port ? `:${port}` : ''}`)) {
      if (o) args[i] = { ...o, headers: withHeaders(o.headers) };
      else args.splice(i, 0, { headers: withHeaders(undefined) });
    }
    return request.apply(this, args);
  };
  setGlobalDispatcher(
    new Agent().compose((dispatch) => (opts, handler) => {
      return dispatch(forOrigin(String(opts.origin)) ? { ...opts, headers: withHeaders(opts.headers) } : opts, handler);
    }),
  );
}
