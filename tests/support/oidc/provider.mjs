// The certified OpenID provider `oidc-provider` on 127.0.0.1, for the single sign-on tests.
//
// Environment: OIDC_SETUP_FILE names a JSON file with the signing keys (`jwks`, private
// JWKs the test made, so it can also sign tokens of its own) and the registered `clients`;
// OIDC_CLAIMS_FILE names a JSON file read at every sign-in: `{"<login>": {claims}}`
// overrides the claims of the account signed in as <login> (by default its e-mail is the
// login itself, verified, with no groups). The login is completed through the provider's
// own development forms (devInteractions): any login and password. OIDC_CONFORM=1 keeps
// the scopes' claims out of the ID token (userinfo only).
//
// Prints `listening <port>` once ready.
import fs from 'node:fs';
import http from 'node:http';
import Provider from 'oidc-provider';

const setup = JSON.parse(fs.readFileSync(process.env.OIDC_SETUP_FILE, 'utf8'));
const claimsFile = process.env.OIDC_CLAIMS_FILE;

function claimsOf(login) {
  let overrides = {};
  try {
    overrides = JSON.parse(fs.readFileSync(claimsFile, 'utf8'))[login] || {};
  } catch {
    overrides = {};
  }
  return { email: login, email_verified: true, name: 'Test Person', groups: [], ...overrides };
}

let handler = (req, res) => {
  res.statusCode = 503;
  res.end();
};
const server = http.createServer((req, res) => handler(req, res));
server.listen(0, '127.0.0.1', () => {
  const { port } = server.address();
  const provider = new Provider(`http://127.0.0.1:${port}`, {
    clients: setup.clients,
    jwks: setup.jwks,
    cookies: { keys: ['agentsvc-tests-only-cookie-key'] },
    pkce: { required: () => true },
    scopes: ['openid', 'email', 'profile', 'groups'],
    claims: {
      openid: ['sub', 'groups'], // groups without asking for a scope, as many providers do
      email: ['email', 'email_verified'],
      profile: ['name'],
    },
    // Scope claims in the ID token too, as Keycloak, Entra and Okta put them there; with
    // OIDC_CONFORM=1 only in userinfo, as the specification's strict reading has it.
    conformIdTokenClaims: process.env.OIDC_CONFORM === '1',
    features: { devInteractions: { enabled: true } },
    async findAccount(ctx, id) {
      return {
        accountId: id,
        async claims() {
          return { sub: id, ...claimsOf(id) };
        },
      };
    },
  });
  handler = provider.callback();
  process.stdout.write(`listening ${port}\n`);
});
process.on('SIGTERM', () => server.close(() => process.exit(0)));
