// oidc_provider.mjs: a certified OpenID provider, oidc-provider 9.13.3
// (panva/node-oidc-provider), on 127.0.0.1 for mcpflow's sign-in tests
// (internal/testsupport/testenv/oidcprovider.go). It is configured as an MCP
// authorization server would be, and tests drive its keys:
//
//   node oidc_provider.mjs --port 0 [--public-client ID --redirect-uri URI]
//     [--introspection-client ID:SECRET] [--opaque-marker TEXT]
//     [--access-ttl SECONDS] [--jwks-cache-control VALUE]
//
// The first stdout line is the issuer, http://127.0.0.1:PORT (no trailing
// slash); the process runs until it is killed.
//
//   - RFC 8707 resource indicators: a token asked for with a resource is for
//     that resource (aud), a JWT access token (RFC 9068, typ at+jwt) with the
//     scope mcp:tools, unless the resource contains --opaque-marker: then
//     the token is opaque, for token introspection (RFC 7662) only.
//   - Introspection (for the confidential --introspection-client, HTTP
//     Basic), revocation, and open dynamic client registration (RFC 7591);
//     --public-client is a pre-registered public client (PKCE, no secret)
//     with the redirect URI --redirect-uri and the refresh_token grant.
//   - Scopes openid, offline_access (a refresh token, for clients allowed
//     the refresh_token grant) and mcp:tools. Users sign in without a form:
//     the interaction page signs in the login_hint (default "alice") and
//     grants what was asked, then redirects back (303), so a client that
//     follows redirects with cookies ends at its redirect URI.
//   - Keys: RS256 keys made at start. The key set (GET /jwks) is served by
//     this script, with --jwks-cache-control as its Cache-Control, so that
//     tests can withdraw a key:
//       POST /control/rotate    a new signing key (the old ones stay
//                               published): {"kid": new, "published": [...]}
//       POST /control/withdraw?kid=K   K leaves the key set (it still
//                               signs if it is the signing key)
//       GET  /control/keys      {"signing": kid, "published": [kids]}
//     Rotation builds the provider anew with the new key first (it signs
//     with the first RS256 key); grants, sessions and clients live in
//     oidc-provider's memory adapter, which every instance shares.
//
// Tests only: nothing here is meant for production.
import { createServer } from 'node:http';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import Provider from 'oidc-provider';

const args = process.argv.slice(2);
function arg(name, def) {
  const i = args.indexOf(`--${name}`);
  return i >= 0 && i + 1 < args.length ? args[i + 1] : def;
}
const port = Number(arg('port', '0'));
const publicClient = arg('public-client', 'mcp-host');
const redirectUri = arg('redirect-uri', 'http://127.0.0.1:9/callback');
const [rsID, rsSecret] = (arg('introspection-client', 'mcpflow-rs:introspection-secret')).split(':');
const opaqueMarker = arg('opaque-marker', '/opaque-');
const accessTTL = Number(arg('access-ttl', '300'));
const jwksCacheControl = arg('jwks-cache-control', '');
const defaultUser = 'alice';
const cookieKeys = [randomBytes(32).toString('base64url')];

function newKey() {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
  return { ...privateKey.export({ format: 'jwk' }), kid: randomBytes(9).toString('base64url'), alg: 'RS256', use: 'sig' };
}

function publicOf(jwk) {
  const { kty, n, e, kid, alg, use } = jwk;
  return { kty, n, e, kid, alg, use };
}

let keys = [newKey()]; // signing key first
let published = keys.map(publicOf);
let issuer;
let provider;

function makeProvider() {
  const p = new Provider(issuer, {
    clients: [
      {
        client_id: publicClient,
        token_endpoint_auth_method: 'none',
        redirect_uris: [redirectUri],
        grant_types: ['authorization_code', 'refresh_token'],
        response_types: ['code'],
      },
      {
        client_id: rsID,
        client_secret: rsSecret,
        token_endpoint_auth_method: 'client_secret_basic',
        grant_types: [],
        response_types: [],
        redirect_uris: [],
      },
    ],
    jwks: { keys },
    cookies: { keys: cookieKeys },
    findAccount: (_ctx, id) => ({ accountId: id, claims: () => ({ sub: id }) }),
    interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
    scopes: ['openid', 'offline_access', 'mcp:tools'],
    pkce: { required: () => true },
    clientBasedCORS: () => true,
    ttl: {
      AccessToken: accessTTL,
      AuthorizationCode: 60,
      IdToken: accessTTL,
      Grant: 3600,
      Interaction: 600,
      Session: 3600,
      RefreshToken: 3600,
      RegistrationAccessToken: 3600,
    },
    features: {
      devInteractions: { enabled: false },
      registration: { enabled: true },
      introspection: { enabled: true },
      revocation: { enabled: true },
      resourceIndicators: {
        enabled: true,
        defaultResource: (_ctx, _client, oneOf) => oneOf,
        useGrantedResource: () => true,
        getResourceServerInfo: (_ctx, resourceIndicator) => ({
          scope: 'mcp:tools',
          audience: resourceIndicator,
          accessTokenTTL: accessTTL,
          accessTokenFormat: resourceIndicator.includes(opaqueMarker) ? 'opaque' : 'jwt',
          jwt: { sign: { alg: 'RS256' } },
        }),
      },
    },
  });
  p.on('server_error', (_ctx, err) => process.stderr.write(`oidc_provider.mjs: server_error: ${err?.stack ?? err}\n`));
  return p;
}

// interaction signs the user in and grants what the client asked for.
async function interaction(req, res) {
  const details = await provider.interactionDetails(req, res);
  const { prompt, params, session, grantId } = details;
  let result;
  if (prompt.name === 'login') {
    result = { login: { accountId: params.login_hint || defaultUser } };
  } else if (prompt.name === 'consent') {
    const grant = grantId
      ? await provider.Grant.find(grantId)
      : new provider.Grant({ accountId: session.accountId, clientId: params.client_id });
    const d = prompt.details;
    if (d.missingOIDCScope) grant.addOIDCScope(d.missingOIDCScope.join(' '));
    if (d.missingOIDCClaims) grant.addOIDCClaims(d.missingOIDCClaims);
    if (d.missingResourceScopes) {
      for (const [indicator, scopes] of Object.entries(d.missingResourceScopes)) {
        grant.addResourceScope(indicator, scopes.join(' '));
      }
    }
    result = { consent: { grantId: await grant.save() } };
  } else {
    result = { error: 'access_denied', error_description: `prompt ${prompt.name} is not supported` };
  }
  await provider.interactionFinished(req, res, result, { mergeWithLastSubmission: false });
}

function json(res, status, body) {
  res.statusCode = status;
  res.setHeader('Content-Type', 'application/json');
  res.end(JSON.stringify(body));
}

async function control(req, res, url) {
  if (req.method === 'POST' && url.pathname === '/control/rotate') {
    keys = [newKey(), ...keys];
    published = [publicOf(keys[0]), ...published];
    provider = makeProvider();
    return json(res, 200, { kid: keys[0].kid, published: published.map(k => k.kid) });
  }
  if (req.method === 'POST' && url.pathname === '/control/withdraw') {
    const kid = url.searchParams.get('kid');
    published = published.filter(k => k.kid !== kid);
    return json(res, 200, { published: published.map(k => k.kid) });
  }
  if (req.method === 'GET' && url.pathname === '/control/keys') {
    return json(res, 200, { signing: keys[0].kid, published: published.map(k => k.kid) });
  }
  return json(res, 404, { error: 'no such control' });
}

const server = createServer(async (req, res) => {
  try {
    const url = new URL(req.url, issuer);
    if (url.pathname.startsWith('/control/')) return await control(req, res, url);
    if (req.method === 'GET' && url.pathname === '/jwks') {
      res.setHeader('Content-Type', 'application/json');
      if (jwksCacheControl) res.setHeader('Cache-Control', jwksCacheControl);
      return res.end(JSON.stringify({ keys: published }));
    }
    if (req.method === 'GET' && url.pathname.startsWith('/interaction/')) return await interaction(req, res);
    return provider.callback()(req, res);
  } catch (err) {
    process.stderr.write(`oidc_provider.mjs: ${req.method} ${req.url}: ${err?.stack ?? err}\n`);
    if (!res.headersSent) json(res, 500, { error: 'server_error' });
    else res.end();
  }
});

server.listen(port, '127.0.0.1', () => {
  issuer = `http://127.0.0.1:${server.address().port}`;
  provider = makeProvider();
  process.stdout.write(issuer + '\n');
});
