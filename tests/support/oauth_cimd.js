// A client's website (a third-party service) serving its OAuth client ID metadata document at
// https://client.example/oauth/client.json: the companion's outgoing requests are answered here
// (Miniflare's outboundService), everything else goes on to its real address.

import { Response, fetch } from "miniflare";

/** Returns { clientId, outbound, fetched }: `fetched` lists the document requests seen. */
export function clientDocumentStandIn({ redirectUri = "http://127.0.0.1:9/callback" } = {}) {
  const clientId = "https://client.example/oauth/client.json";
  const fetched = [];
  const outbound = async (request) => {
    if (request.url !== clientId) {
      const body = ["GET", "HEAD"].includes(request.method) ? undefined : await request.arrayBuffer();
      return fetch(request.url, { method: request.method, headers: request.headers, body, redirect: "manual" });
    }
    fetched.push(request.url);
    const document = {
      client_id: clientId,
      client_name: "CIMD test client",
      client_uri: "https://client.example",
      redirect_uris: [redirectUri],
      grant_types: ["authorization_code", "refresh_token"],
      response_types: ["code"],
      token_endpoint_auth_method: "none",
    };
    return new Response(JSON.stringify(document), { headers: { "content-type": "application/json", "cache-control": "no-store" } });
  };
  return { clientId, outbound, fetched };
}
