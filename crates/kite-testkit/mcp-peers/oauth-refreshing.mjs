// The TypeScript SDK's example server with its demo OAuth provider, taught to issue
// short-lived tokens (TOKEN_SECONDS, 2 by default) with refresh tokens, and to take refresh
// grants, which the demo does not: so that a client's refresh is tested against the SDK's own
// authorization server. Usage: node oauth-refreshing.mjs SDK_DIR --oauth --oauth-strict
import { randomUUID } from 'node:crypto';
import { pathToFileURL } from 'node:url';
import { join } from 'node:path';

const examples = join(process.argv[2], 'dist/esm/examples/server');
const { DemoInMemoryAuthProvider } = await import(
  pathToFileURL(join(examples, 'demoInMemoryOAuthProvider.js')).href
);
const { InvalidGrantError } = await import(
  pathToFileURL(join(process.argv[2], 'dist/esm/server/auth/errors.js')).href
);
const lifetime = Number(process.env.TOKEN_SECONDS || 2);
const provider = DemoInMemoryAuthProvider.prototype;

function issue(self, clientId, scopes, resource) {
  const token = randomUUID();
  self.tokens.set(token, {
    token,
    clientId,
    scopes,
    expiresAt: Date.now() + lifetime * 1000,
    resource,
    type: 'access',
  });
  const refresh = randomUUID();
  self.refreshTokens ??= new Map();
  self.refreshTokens.set(refresh, { clientId, scopes, resource });
  return {
    access_token: token,
    token_type: 'bearer',
    expires_in: lifetime,
    refresh_token: refresh,
    scope: scopes.join(' '),
  };
}

const exchange = provider.exchangeAuthorizationCode;
provider.exchangeAuthorizationCode = async function (client, code, verifier) {
  const answer = await exchange.call(this, client, code, verifier);
  const granted = this.tokens.get(answer.access_token);
  this.tokens.delete(answer.access_token);
  return issue(this, client.client_id, granted.scopes, granted.resource);
};
provider.exchangeRefreshToken = async function (client, refreshToken) {
  const kept = this.refreshTokens?.get(refreshToken);
  if (!kept || kept.clientId !== client.client_id) {
    throw new InvalidGrantError('unknown refresh token');
  }
  this.refreshTokens.delete(refreshToken);
  return issue(this, client.client_id, kept.scopes, kept.resource);
};

await import(pathToFileURL(join(examples, 'simpleStreamableHttp.js')).href);
