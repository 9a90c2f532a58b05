#!/usr/bin/env node
/**
 * The baseline for the gateway's exec overhead: a relay with no logic at all. It reads each
 * request whole, sends it to an upstream sandbox server over a keep-alive connection (undici,
 * as the gateway does) and writes the upstream's answer back. What it adds to a call is what
 * any extra process on the path costs on this machine: two more hops and two more wake-ups.
 *
 * Given several upstreams, it places each new session on the next one in turn and sends that
 * session's calls there (a map from session id to upstream, nothing more): serve gives every
 * session a container of its own, and the relay in front of the same kind of backend is the
 * fair baseline for its throughput.
 *
 * Usage: node bare-relay.mjs UPSTREAM_URL[,UPSTREAM_URL...]
 *   prints `relay listening on http://127.0.0.1:PORT`
 *   (UPSTREAM_URL: http://HOST:PORT, or unix:///path/to/socket for a sandbox container)
 * Loopback only; the bench that starts it stops it (SIGTERM).
 */
import { createServer } from "node:http";
import { Client } from "undici";

// A sandbox container's server listens on a Unix socket (`unix:///path`), a process's on TCP.
const upstreams = process.argv[2]
  .split(",")
  .map((target) =>
    target.startsWith("unix://")
      ? new Client("http://localhost", { socketPath: target.slice("unix://".length) })
      : new Client(target),
  );
const sessions = new Map();
let next = 0;

function upstreamOf(url) {
  const id = /^\/sessions\/([^/?]+)/.exec(url)?.[1];
  return id === undefined ? undefined : sessions.get(decodeURIComponent(id));
}

const server = createServer(async (req, res) => {
  try {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const creates = req.method === "POST" && req.url === "/sessions";
    const upstream = creates ? upstreams[next++ % upstreams.length] : (upstreamOf(req.url) ?? upstreams[0]);
    const answer = await upstream.request({
      method: req.method,
      path: req.url,
      headers: {
        "content-type": req.headers["content-type"] ?? "application/octet-stream",
        // A gateway behind the relay needs the caller's credential (a bare sandbox ignores it).
        ...(req.headers.authorization ? { authorization: req.headers.authorization } : {}),
      },
      body: chunks.length > 0 ? Buffer.concat(chunks) : undefined,
    });
    const body = Buffer.from(await answer.body.arrayBuffer());
    if (creates && answer.statusCode === 201) sessions.set(JSON.parse(body.toString()).session_id, upstream);
    res.writeHead(answer.statusCode, {
      "content-type": answer.headers["content-type"] ?? "application/octet-stream",
      "content-length": body.length,
    });
    res.end(body);
  } catch (error) {
    res.writeHead(502, { "content-type": "text/plain" });
    res.end(String(error));
  }
});
server.listen(0, "127.0.0.1", () => {
  console.log(`relay listening on http://127.0.0.1:${server.address().port}`);
});
