// The OpenID provider of the OAuth tests: npm's oidc-provider (an OpenID Certified
// implementation), configured as a team's identity provider would be for Core MCP — the client
// credentials grant, resource indicators (RFC 8707), and JWT access tokens (RFC 9068) whose
// audience is the resource asked for. Nothing here issues a token by hand.
//
//   node provider.mjs PORT ISSUER KID
//
// PORT    where it listens (127.0.0.1)
// ISSUER  the issuer it names itself (its URL, normally; a test's impostor names another's)
// KID     the key id of its signing key, an RSA key made anew at every start (so restarting
//         with another KID is a key rotation, and the same KID with a new key a wrong signer)
//
// Clients (secret = "<id>-secret-0123456789"), each with scopes "notes tools":
//   proxy  a Core MCP proxy (client_secret_basic): tokens for 300 s
//   sdk    a test or the Python SDK (client_secret_post): tokens for 300 s
//   short  (client_secret_post) tokens that live 1 s, for expiry
//   plainjwt (client_secret_post) tokens typed "JWT" instead of "at+jwt", as some providers
//          issue them
// Prints "ready" once it listens.
import { generateKeyPairSync } from "node:crypto";
import Provider from "oidc-provider";

const [port, issuer, kid] = process.argv.slice(2);
if (!port || !issuer || !kid) {
  console.error("usage: node provider.mjs PORT ISSUER KID");
  process.exit(2);
}

const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const jwk = { ...privateKey.export({ format: "jwk" }), kid, alg: "RS256", use: "sig" };

const client = (id, extra = {}) => ({
  client_id: id,
  client_secret: `${id}-secret-0123456789`,
  grant_types: ["client_credentials"],
  redirect_uris: [],
  response_types: [],
  scope: "notes tools",
  ...extra,
});

const provider = new Provider(issuer, {
  jwks: { keys: [jwk] },
  clients: [
    client("proxy"),
    client("short", { token_endpoint_auth_method: "client_secret_post" }),
    client("sdk", { token_endpoint_auth_method: "client_secret_post" }),
    client("plainjwt", { token_endpoint_auth_method: "client_secret_post" }),
  ],
  formats: {
    customizers: {
      // The one client whose access tokens carry a plain JWT type (RFC 9068 asks for at+jwt).
      jwt: (_ctx, token, jwt) => {
        if (token.clientId === "plainjwt") jwt.header = { typ: "JWT" };
      },
    },
  },
  scopes: ["notes", "tools"],
  ttl: { ClientCredentials: (_ctx, token) => token.resourceServer?.accessTokenTTL ?? 300 },
  features: {
    devInteractions: { enabled: false },
    clientCredentials: { enabled: true },
    resourceIndicators: {
      enabled: true,
      // A token is always for one resource: the one asked for.
      defaultResource: () => undefined,
      useGrantedResource: () => true,
      getResourceServerInfo: (_ctx, resource, client) => ({
        audience: resource,
        scope: "notes tools",
        accessTokenTTL: client.clientId === "short" ? 1 : 300,
        accessTokenFormat: "jwt",
        jwt: { sign: { alg: "RS256" } },
      }),
    },
  },
});
provider.proxy = false;
provider.on("server_error", (_ctx, err) => console.error("server_error", err));
provider.on("grant.error", (_ctx, err) => console.error("grant.error", err.message, err.error_description || ""));

const server = provider.listen(Number(port), "127.0.0.1", () => console.log("ready"));
const stop = () => server.close(() => process.exit(0));
process.on("SIGTERM", stop);
process.on("SIGINT", stop);
