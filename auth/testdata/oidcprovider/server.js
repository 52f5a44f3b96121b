// A real third-party OpenID provider for shipkey's grant tests, built on the
// npm package oidc-provider (pinned in package.json and package-lock.json):
// client credentials, the device flow (RFC 8628) and the authorization code
// grant with PKCE, with its development login and consent pages (plain HTML
// forms; any login name, any password: the account's preferred_username is
// that name and its email NAME@example.com, at userinfo with the profile and
// email scopes).
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
//
// Hardened clients, each with one of the switches a hardened realm sets
// (their access tokens live SHIPKEY_OP_HARDENED_TTL seconds, default 2, so
// renewal is seen for real):
//   shipping-rsa, shipping-ec   private_key_jwt; their public key sets come in
//                               SHIPKEY_OP_RSA_JWKS and SHIPKEY_OP_EC_JWKS
//   shipping-hmac               client_secret_jwt with SHIPKEY_OP_JWT_SECRET
//   shipping-mtls               tls_client_auth, subject CN=shipping-mtls, a
//                               certificate from the CA in SHIPKEY_OP_TLS_CA;
//                               certificate-bound tokens
//   shipping-selfsigned         self_signed_tls_client_auth: a self-signed
//                               certificate registered in
//                               SHIPKEY_OP_SELFSIGNED_JWKS (x5c); bound tokens
//   shipping-dpop               client_secret_post, DPoP-bound tokens required,
//                               with server nonces (as every DPoP proof here)
//   shipping-par                client_secret_post, PAR required
//   (and shipping-dpop-api: the confidential client again, DPoP-bound tokens
//   required, at the usual token life; for the API tests)
//   shipping-device-pkce        public; PKCE (S256) required on the device
//                               grant, which oidc-provider does not do itself:
//                               the wrapper below adds it as Keycloak has it
// Token exchange (RFC 8693), which oidc-provider does not have, is registered
// below as a grant of its own for every confidential client, as Keycloak 26.2
// has it: a live access token of the client for one whose aud is another
// client of the provider. With SHIPKEY_OP_NO_TOKEN_EXCHANGE=1 it is not
// registered: the provider answers unsupported_grant_type, as servers
// without it do.
// Key-less CI logins: the JWT bearer grant (RFC 7523 §2.1), which
// oidc-provider does not have, is registered below for the client
// SHIPKEY_OP_CI_CLIENT_ID (default shipping-ci; private_key_jwt with the key
// set SHIPKEY_OP_CI_CLIENT_JWKS, whose key a CI system holds; 2 s tokens):
// an ES256 token of the trusted issuer SHIPKEY_OP_CI_ISSUER (keys
// SHIPKEY_OP_CI_JWKS) with this provider in aud is an access token for its
// subject, without a refresh token. GET /test/assertions lists the
// assertions the token endpoint received (the grant's and the client
// assertions), for tests that check a renewal carried a new one.
// When SHIPKEY_OP_TLS_CERT/KEY/CA are set, the same provider is also served
// over HTTPS on another port that asks for client certificates, printed as
// the second line on stdout and named by discovery's mtls_endpoint_aliases.
import http from 'node:http';
import https from 'node:https';
import crypto from 'node:crypto';
import Provider, { errors } from 'oidc-provider';

const env = (name, fallback) => {
  const v = process.env[name];
  return v === undefined || v === '' ? fallback : v;
};

const clientId = env('SHIPKEY_OP_CLIENT_ID', 'shipping-api');
const clientSecret = env('SHIPKEY_OP_CLIENT_SECRET', 'op-client-secret');
const publicClientId = env('SHIPKEY_OP_PUBLIC_CLIENT_ID', 'shipping-cli');
const shortClientId = env('SHIPKEY_OP_SHORT_CLIENT_ID', 'shipping-short');
const shortTTL = 2;
const grants = ['authorization_code', 'refresh_token', 'urn:ietf:params:oauth:grant-type:device_code'];
const deviceGrant = 'urn:ietf:params:oauth:grant-type:device_code';
const exchangeGrant = 'urn:ietf:params:oauth:grant-type:token-exchange';
const accessTokenType = 'urn:ietf:params:oauth:token-type:access_token';
const withExchange = env('SHIPKEY_OP_NO_TOKEN_EXCHANGE', '') === '';
const confidentialGrants = [...grants, 'client_credentials', ...(withExchange ? [exchangeGrant] : [])];
const hardenedTTL = Number(env('SHIPKEY_OP_HARDENED_TTL', '2'));
const jwks = (name) => { const v = env(name, ''); return v ? JSON.parse(v) : undefined; };
const jwtBearerGrant = 'urn:ietf:params:oauth:grant-type:jwt-bearer';
const ciClientId = env('SHIPKEY_OP_CI_CLIENT_ID', 'shipping-ci');
const ciIssuer = env('SHIPKEY_OP_CI_ISSUER', '');
const ciJWKS = jwks('SHIPKEY_OP_CI_JWKS');
const tlsCert = env('SHIPKEY_OP_TLS_CERT', ''), tlsKey = env('SHIPKEY_OP_TLS_KEY', ''), tlsCA = env('SHIPKEY_OP_TLS_CA', '');
const native = { application_type: 'native', response_types: ['code'], redirect_uris: ['http://127.0.0.1/callback'] };
const hardened = [
  { client_id: 'shipping-rsa', token_endpoint_auth_method: 'private_key_jwt', jwks: jwks('SHIPKEY_OP_RSA_JWKS') },
  { client_id: 'shipping-ec', token_endpoint_auth_method: 'private_key_jwt', jwks: jwks('SHIPKEY_OP_EC_JWKS') },
  { client_id: 'shipping-hmac', token_endpoint_auth_method: 'client_secret_jwt', client_secret: env('SHIPKEY_OP_JWT_SECRET', crypto.randomBytes(32).toString('hex')) },
  { client_id: 'shipping-dpop', token_endpoint_auth_method: 'client_secret_post', client_secret: clientSecret, dpop_bound_access_tokens: true },
  { client_id: 'shipping-par', token_endpoint_auth_method: 'client_secret_post', client_secret: clientSecret, require_pushed_authorization_requests: true },
  ...(ciIssuer && ciJWKS ? [{
    client_id: ciClientId, token_endpoint_auth_method: 'private_key_jwt', jwks: jwks('SHIPKEY_OP_CI_CLIENT_JWKS'),
    grant_types: [...confidentialGrants, jwtBearerGrant],
  }] : []),
  ...(tlsCA ? [{
    client_id: 'shipping-mtls', token_endpoint_auth_method: 'tls_client_auth',
    tls_client_auth_subject_dn: 'CN=shipping-mtls', tls_client_certificate_bound_access_tokens: true,
  }] : []),
  ...(tlsCA && jwks('SHIPKEY_OP_SELFSIGNED_JWKS') ? [{
    client_id: 'shipping-selfsigned', token_endpoint_auth_method: 'self_signed_tls_client_auth',
    jwks: jwks('SHIPKEY_OP_SELFSIGNED_JWKS'), tls_client_certificate_bound_access_tokens: true,
  }] : []),
].filter((c) => c.token_endpoint_auth_method !== 'private_key_jwt' || c.jwks)
  .map((c) => ({ ...native, grant_types: confidentialGrants, ...c }));
hardened.push({ ...native, client_id: 'shipping-device-pkce', token_endpoint_auth_method: 'none', grant_types: grants });
const hardenedIds = new Set(hardened.map((c) => c.client_id));
const devicePKCE = new Set(['shipping-device-pkce']);
const ttlFor = (seconds) => (ctx, token, client) => {
  if (client?.clientId === shortClientId) return shortTTL;
  if (hardenedIds.has(client?.clientId)) return hardenedTTL;
  return seconds;
};

// readForm reads a form body once and leaves it where oidc-provider looks
// for an already parsed body (req.body), so the provider still sees it.
const readForm = async (ctx) => {
  if (!ctx.is('application/x-www-form-urlencoded')) return new URLSearchParams();
  if (typeof ctx.req.body === 'string') return new URLSearchParams(ctx.req.body);
  const chunks = [];
  for await (const c of ctx.req) chunks.push(c);
  ctx.req.body = Buffer.concat(chunks).toString();
  return new URLSearchParams(ctx.req.body);
};
const s256 = (v) => crypto.createHash('sha256').update(v).digest('base64url');
const challenges = new Map(); // device_code -> code_challenge
const fail = (ctx, desc) => {
  ctx.status = 400;
  ctx.body = { error: 'invalid_request', error_description: desc };
};

// PKCE on the device grant for the clients in devicePKCE: the device
// authorization request must carry an S256 challenge, the token poll its
// verifier (Keycloak's messages).
const deviceWithPKCE = async (ctx, next) => {
  if (ctx.method !== 'POST' || (ctx.path !== '/device/auth' && ctx.path !== '/token')) return next();
  const form = await readForm(ctx);
  if (!devicePKCE.has(form.get('client_id'))) return next();
  if (ctx.path === '/device/auth') {
    if (!form.get('code_challenge_method')) return fail(ctx, 'Missing parameter: code_challenge_method');
    if (form.get('code_challenge_method') !== 'S256' || !form.get('code_challenge')) return fail(ctx, 'Invalid parameter: code challenge method is not configured one');
    await next();
    if (ctx.status === 200 && ctx.body?.device_code) challenges.set(ctx.body.device_code, form.get('code_challenge'));
    return undefined;
  }
  if (form.get('grant_type') === deviceGrant) {
    const want = challenges.get(form.get('device_code'));
    if (want && !form.get('code_verifier')) return fail(ctx, 'PKCE code verifier not specified');
    if (want && s256(form.get('code_verifier')) !== want) {
      ctx.status = 400;
      ctx.body = { error: 'invalid_grant', error_description: 'PKCE verification failed: Invalid code verifier' };
      return undefined;
    }
  }
  return next();
};

// The HTTPS listener for RFC 8705 (started before the provider so its port
// can go into discovery).
const mtlsServer = tlsCA ? https.createServer({
  cert: tlsCert, key: tlsKey, ca: tlsCA, requestCert: true, rejectUnauthorized: false,
}) : null;
const mtlsBase = () => `https://127.0.0.1:${mtlsServer.address().port}`;
function mtlsAliases() {
  if (!mtlsServer) return {};
  const b = mtlsBase();
  return {
    mtls_endpoint_aliases: {
      token_endpoint: `${b}/token`,
      revocation_endpoint: `${b}/token/revocation`,
      introspection_endpoint: `${b}/token/introspection`,
      device_authorization_endpoint: `${b}/device/auth`,
      pushed_authorization_request_endpoint: `${b}/request`,
      userinfo_endpoint: `${b}/me`,
    },
  };
}

// tokenExchange is RFC 8693 token exchange as Keycloak 26.2's standard token
// exchange does it: the authenticated client trades a live access token
// issued to it (subject_token) for a new opaque one in the same grant whose
// aud is another client of the provider (audience; or resource, taken as
// the audience), with the subject's scope or fewer, and no refresh token.
// Introspection names its aud.
const tokenExchange = async (ctx) => {
  const { client, params, provider } = ctx.oidc;
  if (!params.subject_token) throw new errors.InvalidRequest("missing required parameter 'subject_token'");
  if (params.subject_token_type !== accessTokenType) throw new errors.InvalidRequest('subject_token_type must be an access token');
  if (params.requested_token_type && params.requested_token_type !== accessTokenType) throw new errors.InvalidRequest('requested_token_type unsupported');
  const subject = await provider.AccessToken.find(params.subject_token)
    || await provider.ClientCredentials.find(params.subject_token);
  if (!subject?.isValid || subject.clientId !== client.clientId) throw new errors.InvalidRequest('subject_token is not a live token of this client');
  const audience = params.audience || params.resource;
  if (!audience || !(await provider.Client.find(audience))) throw new errors.InvalidTarget('audience not found');
  const held = subject.scope ? subject.scope.split(' ') : [];
  const asked = params.scope ? params.scope.split(' ') : held;
  if (asked.some((s) => !held.includes(s))) throw new errors.InvalidScope('a requested scope is not held by the subject token', params.scope);
  const scope = asked.join(' ') || undefined;
  const token = subject.kind === 'AccessToken'
    ? new provider.AccessToken({
      client, accountId: subject.accountId, grantId: subject.grantId, sid: subject.sid, scope, gty: exchangeGrant,
    })
    : new provider.ClientCredentials({ client, scope });
  token.aud = audience;
  const value = await token.save();
  ctx.body = {
    access_token: value, issued_token_type: accessTokenType, token_type: 'Bearer', expires_in: token.expiration, scope,
  };
};

// jwtBearer is the JWT bearer grant (RFC 7523 §2.1) as a realm that trusts
// a CI system's issuer has it: an ES256 token of ciIssuer, live, for this
// provider, is an access token for its subject; no refresh token. Its
// refusals say what was wrong with the assertion.
const refuse = (desc) => new errors.CustomOIDCProviderError('invalid_grant', desc);
const b64json = (s) => JSON.parse(Buffer.from(s, 'base64url').toString());
const jwtBearer = async (ctx) => {
  const { client, params, provider } = ctx.oidc;
  const parts = (params.assertion || '').split('.');
  let header;
  let claims;
  try {
    [header, claims] = [b64json(parts[0]), b64json(parts[1])];
  } catch {
    throw refuse('the assertion is not a JWT');
  }
  if (parts.length !== 3) throw refuse('the assertion is not a JWT');
  if (claims.iss !== ciIssuer) throw refuse('the assertion issuer is not trusted');
  if (typeof claims.exp !== 'number' || claims.exp <= Math.floor(Date.now() / 1000)) throw refuse('the assertion has expired');
  const key = ciJWKS.keys.find((k) => !header.kid || k.kid === header.kid);
  const signed = key && header.alg === 'ES256' && crypto.verify('sha256', Buffer.from(`${parts[0]}.${parts[1]}`),
    { key: crypto.createPublicKey({ key, format: 'jwk' }), dsaEncoding: 'ieee-p1363' }, Buffer.from(parts[2], 'base64url'));
  if (!signed) throw refuse('the assertion signature does not verify');
  if (![].concat(claims.aud || []).includes(provider.issuer)) throw refuse('the assertion audience is not this provider');
  if (!claims.sub) throw refuse('the assertion has no subject');
  const grant = new provider.Grant({ accountId: claims.sub, clientId: client.clientId });
  const scope = params.scope || undefined;
  if (scope) grant.addOIDCScope(scope);
  const grantId = await grant.save();
  const token = new provider.AccessToken({ client, accountId: claims.sub, grantId, scope, gty: 'jwt-bearer' });
  const value = await token.save();
  ctx.body = { access_token: value, token_type: 'Bearer', expires_in: token.expiration, scope };
};

// assertionsSeen are the assertions the token endpoint received
// (GET /test/assertions lists them); issuedTokens the opaque access tokens
// this provider issued (GET /test/issued?token=T says whether T is one,
// expired or not: a test of a 2 s token checks that it is real without
// racing its expiry, as introspection would).
const assertionsSeen = [];
const issuedTokens = new Set();
const recordAssertions = async (ctx, next) => {
  if (ctx.method === 'GET' && ctx.path === '/test/assertions') {
    ctx.body = assertionsSeen;
    return undefined;
  }
  if (ctx.method === 'GET' && ctx.path === '/test/issued') {
    ctx.body = { issued: issuedTokens.has(ctx.query.token) };
    return undefined;
  }
  if (ctx.method === 'POST' && ctx.path === '/token') {
    const form = await readForm(ctx);
    for (const name of ['client_assertion', 'assertion']) {
      if (form.get(name)) assertionsSeen.push(form.get(name));
    }
  }
  return next();
};

process.stdin.on('end', () => process.exit(0));
process.stdin.resume();

const server = http.createServer();
const listening = (srv) => new Promise((resolve) => { srv.listen(0, '127.0.0.1', resolve); });
Promise.all([listening(server), ...(mtlsServer ? [listening(mtlsServer)] : [])]).then(() => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [
      {
        client_id: clientId,
        client_secret: clientSecret,
        token_endpoint_auth_method: 'client_secret_post',
        application_type: 'native',
        grant_types: confidentialGrants,
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'],
      },
      {
        client_id: shortClientId,
        client_secret: clientSecret,
        token_endpoint_auth_method: 'client_secret_post',
        application_type: 'native',
        grant_types: confidentialGrants,
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'],
      },
      {
        // DPoP-bound tokens at the usual token life, for the API tests (a
        // hand-off proof is used a moment after it is made).
        client_id: 'shipping-dpop-api',
        client_secret: clientSecret,
        token_endpoint_auth_method: 'client_secret_post',
        application_type: 'native',
        grant_types: confidentialGrants,
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'],
        dpop_bound_access_tokens: true,
      },
      {
        client_id: publicClientId,
        token_endpoint_auth_method: 'none',
        application_type: 'native',
        grant_types: grants,
        response_types: ['code'],
        redirect_uris: ['http://127.0.0.1/callback'],
      },
      ...hardened,
    ],
    cookies: { keys: [crypto.randomBytes(32).toString('hex')] },
    features: {
      clientCredentials: { enabled: true },
      deviceFlow: { enabled: true },
      revocation: { enabled: true },
      introspection: { enabled: true },
      devInteractions: { enabled: true },
      dPoP: { enabled: true, nonceSecret: crypto.randomBytes(32), requireNonce: () => true },
      pushedAuthorizationRequests: { enabled: true },
      mTLS: {
        enabled: Boolean(tlsCA),
        certificateBoundAccessTokens: true,
        tlsClientAuth: true,
        selfSignedTlsClientAuth: true,
        getCertificate(ctx) {
          const peer = ctx.socket.getPeerCertificate?.();
          return peer?.raw ? new crypto.X509Certificate(peer.raw).toString() : undefined;
        },
        certificateAuthorized: (ctx) => ctx.socket.authorized === true,
        certificateSubjectMatches(ctx, property, expected) {
          const peer = ctx.socket.getPeerCertificate?.();
          return property === 'tls_client_auth_subject_dn' && `CN=${peer?.subject?.CN}` === expected;
        },
      },
    },
    clientAuthMethods: ['none', 'client_secret_basic', 'client_secret_post', 'client_secret_jwt', 'private_key_jwt',
      ...(tlsCA ? ['tls_client_auth', 'self_signed_tls_client_auth'] : [])],
    discovery: mtlsAliases(),
    scopes: ['openid', 'offline_access', 'api', 'profile', 'email'],
    // Claims as the spec has them for the code flow: profile and email at
    // userinfo, not in the ID token (conformIdTokenClaims, the default).
    claims: { openid: ['sub'], profile: ['preferred_username'], email: ['email', 'email_verified'] },
    issueRefreshToken: async (ctx, client) => client.grantTypeAllowed('refresh_token'),
    findAccount: async (ctx, id) => ({
      accountId: id,
      claims: async () => ({ sub: id, preferred_username: id, email: `${id}@example.com`, email_verified: true }),
    }),
    ttl: { AccessToken: ttlFor(3600), ClientCredentials: ttlFor(600), DeviceCode: 600, AuthorizationCode: 60 },
  });
  if (withExchange) {
    provider.registerGrantType(exchangeGrant, tokenExchange,
      ['subject_token', 'subject_token_type', 'audience', 'resource', 'scope', 'requested_token_type']);
  }
  if (ciIssuer && ciJWKS) {
    provider.registerGrantType(jwtBearerGrant, jwtBearer, ['assertion', 'scope']);
  }
  for (const kind of ['access_token', 'client_credentials']) {
    provider.on(`${kind}.saved`, (token) => { issuedTokens.add(token.jti); });
  }
  provider.use(recordAssertions);
  provider.use(deviceWithPKCE);
  server.on('request', provider.callback());
  if (mtlsServer) mtlsServer.on('request', provider.callback());
  process.stdout.write(issuer + '\n' + (mtlsServer ? mtlsBase() : '') + '\n');
});
