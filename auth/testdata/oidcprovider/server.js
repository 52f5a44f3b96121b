// A real third-party OpenID provider for shipkey's grant tests, built on the
// npm package oidc-provider (pinned in package.json and package-lock.json):
// client credentials, the device flow (RFC 8628) and the authorization code
// grant with PKCE, with its development login and consent pages (plain HTML
// forms; any login name, any password).
//
// Usage: npm ci --prefix auth/testdata/oidcprovider
//        node auth/testdata/oidcprovider/server.js
//
// It listens on 127.0.0.1 with a port the OS picks and prints its issuer URL
// as the first line on stdout. The confidential client's id and secret come
// from the environment (never argv): SHIPKEY_OP_CLIENT_ID,
// SHIPKEY_OP_CLIENT_SECRET; a public client SHIPKEY_OP_PUBLIC_CLIENT_ID
// (default shipping-cli) has none; SHIPKEY_OP_SHORT_CLIENT_ID (default
// shipping-short) is the confidential client again, with the same secret,
// whose access tokens live 2 s (expiry tests). All are native clients: any
// loopback port may receive their codes (RFC 8252). It exits when stdin closes, so a
// test that dies leaves no server behind.
import http from 'node:http';
import crypto from 'node:crypto';
import Provider from 'oidc-provider';

const env = (name, fallback) => {
  const v = process.env[name];
  return v === undefined || v === '' ? fallback : v;
};

const clientId = env('SHIPKEY_OP_CLIENT_ID', 'shipping-api');
const clientSecret = env('SHIPKEY_OP_CLIENT_SECRET', 'op-client-secret');
const publicClientId = env('SHIPKEY_OP_PUBLIC_CLIENT_ID', 'shipping-cli');
const shortClientId = env('SHIPKEY_OP_SHORT_CLIENT_ID', 'shipping-short');
const shortTTL = 2;
const ttl = (seconds) => (ctx, token, client) => (client?.clientId === shortClientId ? shortTTL : seconds);
const grants = ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'];

const server = http.createServer();
server.listen(0, '127.0.0.1', () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        token_endpoint_auth_method: 'client_secret_post',
        application_type: 'native',
        grant_types: [...grants, 'client_credentials'],
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'],
      },
      {
        client_id: shortClientId,
        client_secret: clientSecret,
        token_endpoint_auth_method: 'client_secret_post',
        application_type: 'native',
        grant_types: [...grants, 'client_credentials'],
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'],
      },
      {
        client_id: publicClientId,
        token_endpoint_auth_method: 'none',
        application_type: 'native',
        grant_types: grants,
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'],
      },
    ],
    cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
    features: {
      clientCredentials: { enabled: true },
      deviceFlow: { enabled: true },
      revocation: { enabled: true },
      introspection: { enabled: true },
      devInteractions: { enabled: true },
    },
    scopes: ['openid', 'offline_access', 'api'],
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    findAccount: async (ctx, id) => ({ accountId: id, claims: async () => ({ sub: id }) }),
    ttl: { AccessToken: ttl(3600), ClientCredentials: ttl(600), DeviceCode: 600, AuthorizationCode: 60 },
  });
  server.on('request', provider.callback());
  process.stdout.write(issuer + '\n');
});

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();
