// A real third-party OAuth 2.0 server for shipkey's auth tests, built on the
// npm package oauth2-mock-server (pinned in package.json) through its exported
// API. It is not Keycloak: its token responses lack refresh_expires_in,
// session_state and not-before-policy, and its refresh tokens are opaque
// UUIDs. shipkey must still work against it.
//
// Usage: npm ci --prefix auth/testdata/oauth2server
//        node auth/testdata/oauth2server/server.js
//
// It listens on 127.0.0.1 with a port the OS picks and prints its URL as the
// first line on stdout. Credentials come from the environment (never argv):
//   SHIPKEY_MOCK_CLIENT_ID, SHIPKEY_MOCK_CLIENT_SECRET,
//   SHIPKEY_MOCK_USERNAME, SHIPKEY_MOCK_PASSWORD
// It exits when stdin closes, so a test that dies leaves no server behind.
//
// Grants: password (only for the configured user and client) and
// refresh_token (only for refresh tokens it issued). Other grants and wrong
// credentials get Keycloak-like errors:
//   wrong password              401 invalid_grant "Invalid user credentials"
//   unknown user                400 invalid_grant "Invalid user credentials"
//   wrong client id or secret   401 invalid_client
//   unknown refresh token       400 invalid_grant "Invalid refresh token"
//   other grant types           400 unsupported_grant_type
import { OAuth2Server } from 'oauth2-mock-server';

const env = (name, fallback) => {
  const v = process.env[name];
  return v === undefined || v === '' ? fallback : v;
};

const config = {
  clientId: env('SHIPKEY_MOCK_CLIENT_ID', 'shipping-api'),
  clientSecret: env('SHIPKEY_MOCK_CLIENT_SECRET', 'mock-client-secret'),
  username: env('SHIPKEY_MOCK_USERNAME', 'demo'),
  password: env('SHIPKEY_MOCK_PASSWORD', 'mock-password'),
};

// Refresh tokens this server issued, mapped to the user they belong to.
const refreshTokens = new Map();

// clientCredentials reads client_id/client_secret from HTTP Basic (RFC 6749
// 2.3.1: form-urlencoded, then base64) or from the form body.
function clientCredentials(req) {
  const h = req.headers.authorization;
  if (typeof h === 'string' && /^basic /i.test(h)) {
    const decoded = Buffer.from(h.slice(6).trim(), 'base64').toString('utf8');
    const i = decoded.indexOf(':');
    if (i >= 0) {
      const unescape = (s) => {
        try {
          return decodeURIComponent(s.replace(/\+/g, ' '));
        } catch {
          return s;
        }
      };
      return { id: unescape(decoded.slice(0, i)), secret: unescape(decoded.slice(i + 1)) };
    }
  }
  const body = req.body ?? {};
  return { id: body.client_id, secret: body.client_secret };
}

function fail(response, status, error, description) {
  response.statusCode = status;
  response.body = description ? { error, error_description: description } : { error };
}

const server = new OAuth2Server();
await server.issuer.keys.generate('RS256');

// Tokens (access and ID) carry sub=<username>, also after a refresh, instead
// of the library's "johndoe"; azp names the client, as Keycloak does.
server.service.on('beforeTokenSigning', (token, req) => {
  const body = req.body ?? {};
  if (body.grant_type === 'password' && typeof body.username === 'string') {
    token.payload.sub = body.username;
  }
  if (body.grant_type === 'refresh_token') {
    const user = refreshTokens.get(body.refresh_token);
    if (user !== undefined) token.payload.sub = user;
  }
  if (body.grant_type === 'password' || body.grant_type === 'refresh_token') {
    token.payload.azp = clientCredentials(req).id;
  }
});

server.service.on('beforeResponse', (response, req) => {
  const body = req.body ?? {};
  const client = clientCredentials(req);
  if (client.id !== config.clientId || client.secret !== config.clientSecret) {
    fail(response, 401, 'invalid_client', 'Invalid client or Invalid client credentials');
    return;
  }
  switch (body.grant_type) {
    case 'password':
      if (body.username !== config.username) {
        fail(response, 400, 'invalid_grant', 'Invalid user credentials');
        return;
      }
      if (body.password !== config.password) {
        fail(response, 401, 'invalid_grant', 'Invalid user credentials');
        return;
      }
      refreshTokens.set(response.body.refresh_token, body.username);
      // Without a requested scope the library sends none; Keycloak would.
      if (response.body.scope === undefined) delete response.body.scope;
      return;
    case 'refresh_token': {
      const user = refreshTokens.get(body.refresh_token);
      if (user === undefined) {
        fail(response, 400, 'invalid_grant', 'Invalid refresh token');
        return;
      }
      refreshTokens.delete(body.refresh_token);
      refreshTokens.set(response.body.refresh_token, user);
      return;
    }
    default:
      fail(response, 400, 'unsupported_grant_type', 'Only the password and refresh_token grants are allowed');
  }
});

await server.start(0, '127.0.0.1');
// The library names its issuer http://localhost:PORT; keep everything on
// the address it listens on.
const url = `http://127.0.0.1:${server.address().port}`;
server.issuer.url = url;
process.stdout.write(`${url}\n`);

const shutdown = () => {
  server.stop().finally(() => process.exit(0));
};
process.stdin.on('end', shutdown);
process.stdin.on('error', shutdown);
process.stdin.resume();
process.on('SIGTERM', shutdown);
process.on('SIGINT', shutdown);
