import { describe, expect, it } from "vitest";
import {
  bodyMatches,
  FRAMED_BODY,
  NODE_ERROR_HEADER,
  NodeSecrets,
  RequestVerifier,
  SIGNATURE_HEADERS,
  type SignedRequest,
} from "../../../../src/roles/shared/node-signature.js";

const OLD = "o".repeat(32);
const NEW = "n".repeat(32);
const WINDOW = 30_000;
const NOW = 1_800_000_000_000;
const request: SignedRequest = {
  nodeId: "node-a",
  method: "POST",
  target: "/node/v1/x?y=1",
  headers: {
    "content-type": "application/json",
    [SIGNATURE_HEADERS.workspace]: "team-a",
    "x-sandpool-max-file-bytes": "1024",
  },
  body: '{"a":1}',
};

function verifier(secrets: string[], nodeId = "node-a") {
  return new RequestVerifier(new NodeSecrets(secrets), { nodeId, clockWindowMs: WINDOW });
}
/** The headers as the node receives them: the request's own and the signature's. */
const received = (signed: Record<string, string>, own = request.headers) => {
  const all: Record<string, string | undefined> = { ...own, ...signed };
  return (name: string) => all[name];
};
const head = { method: request.method, target: request.target };

describe("edge/node request signatures", () => {
  it("verifies a request's head from its headers alone, once, and gives the signed digest", () => {
    const signed = new NodeSecrets([OLD]).sign(request, NOW);
    const check = verifier([OLD]);
    const verdict = check.verify(head, received(signed.headers), NOW + 1);
    expect(verdict).toMatchObject({ ok: true, nonce: signed.nonce });
    if (!verdict.ok) return;
    // The body is checked after, against the digest the head signed.
    expect(bodyMatches(verdict.body, Buffer.from('{"a":1}'))).toBe(true);
    expect(bodyMatches(verdict.body, Buffer.from('{"a":2}'))).toBe(false);
    // Both sides chain a framed body from the same key and seed.
    expect(verdict.frames.key.equals(signed.frames.key)).toBe(true);
    expect(verdict.frames.seed.equals(signed.frames.seed)).toBe(true);
    expect(check.verify(head, received(signed.headers), NOW + 2)).toEqual({ ok: false, refused: "replay" });
  });

  it("refuses another secret, a missing header, another node, and any changed part of the head", () => {
    const { headers } = new NodeSecrets([OLD]).sign(request, NOW);
    expect(verifier([NEW]).verify(head, received(headers), NOW).ok).toBe(false);
    const { [SIGNATURE_HEADERS.signature]: _s, ...unsigned } = headers;
    expect(verifier([OLD]).verify(head, received(unsigned), NOW)).toEqual({ ok: false, refused: "missing" });
    expect(verifier([OLD], "node-b").verify(head, received(headers), NOW)).toEqual({
      ok: false,
      refused: "bad_signature",
    });
    for (const changed of [
      { ...head, method: "GET" },
      { ...head, target: "/node/v1/x?y=2" },
    ]) {
      expect(verifier([OLD]).verify(changed, received(headers), NOW)).toEqual({
        ok: false,
        refused: "bad_signature",
      });
    }
    // Every header the node acts on is signed: the workspace, its limits, the type, the deadline.
    for (const [name, value] of [
      [SIGNATURE_HEADERS.workspace, "team-b"],
      ["x-sandpool-max-file-bytes", "999999999"],
      ["content-type", "text/plain"],
      ["x-sandpool-timeout-ms", "1"],
      [SIGNATURE_HEADERS.length, "5"],
    ] as const) {
      const tampered = { ...request.headers, [name]: value };
      expect(verifier([OLD]).verify(head, received(headers, tampered), NOW), name).toEqual({
        ok: false,
        refused: "bad_signature",
      });
    }
    const withoutLimit = { ...request.headers, "x-sandpool-max-file-bytes": undefined };
    expect(verifier([OLD]).verify(head, received(headers, withoutLimit), NOW).ok).toBe(false);
    const forged = { ...headers, [SIGNATURE_HEADERS.timestamp]: String(NOW + 1) };
    expect(verifier([OLD]).verify(head, received(forged), NOW)).toEqual({
      ok: false,
      refused: "bad_signature",
    });
    const otherBody = { ...headers, [SIGNATURE_HEADERS.body]: FRAMED_BODY };
    expect(verifier([OLD]).verify(head, received(otherBody), NOW)).toEqual({
      ok: false,
      refused: "bad_signature",
    });
  });

  it("refuses a request signed outside the clock window, either side", () => {
    const early = new NodeSecrets([OLD]).sign(request, NOW - WINDOW - 1);
    const late = new NodeSecrets([OLD]).sign(request, NOW + WINDOW + 1);
    expect(verifier([OLD]).verify(head, received(early.headers), NOW)).toEqual({
      ok: false,
      refused: "clock",
    });
    expect(verifier([OLD]).verify(head, received(late.headers), NOW)).toEqual({
      ok: false,
      refused: "clock",
    });
    const edge = new NodeSecrets([OLD]).sign(request, NOW - WINDOW);
    expect(verifier([OLD]).verify(head, received(edge.headers), NOW).ok).toBe(true);
  });

  it("forgets nonces once their window has passed, remembering them until then", () => {
    const check = verifier([OLD]);
    const first = new NodeSecrets([OLD]).sign(request, NOW);
    expect(check.verify(head, received(first.headers), NOW).ok).toBe(true);
    // The same headers later are out of the window: refused for the clock, not let through.
    expect(check.verify(head, received(first.headers), NOW + WINDOW + 1)).toEqual({
      ok: false,
      refused: "clock",
    });
  });

  it("rotates: the first secret signs, every listed one verifies", () => {
    const byOld = new NodeSecrets([OLD]).sign(request, NOW);
    const byNew = new NodeSecrets([NEW, OLD]).sign(request, NOW);
    // Step 1: nodes list [OLD, NEW] and still accept the edges that sign with OLD.
    expect(verifier([OLD, NEW]).verify(head, received(byOld.headers), NOW).ok).toBe(true);
    // Step 2: edges sign with NEW first; nodes at step 1 or 2 accept it, chaining frames from NEW.
    const step2 = verifier([OLD, NEW]).verify(head, received(byNew.headers), NOW);
    expect(step2.ok && step2.frames.key.equals(Buffer.from(NEW))).toBe(true);
    expect(verifier([NEW, OLD]).verify(head, received(byNew.headers), NOW).ok).toBe(true);
    // Step 3: OLD dropped; what it signs is refused.
    expect(verifier([NEW]).verify(head, received(byOld.headers), NOW).ok).toBe(false);
  });

  it("signs a streamed body as 'frames', which matches no buffered body", () => {
    const streamed = { ...request, body: FRAMED_BODY } as const;
    const { headers } = new NodeSecrets([OLD]).sign(streamed, NOW);
    expect(headers[SIGNATURE_HEADERS.body]).toBe("frames");
    const verdict = verifier([OLD]).verify(head, received(headers), NOW);
    expect(verdict).toMatchObject({ ok: true, body: FRAMED_BODY });
    expect(bodyMatches(FRAMED_BODY, Buffer.from("frames"))).toBe(false);
  });

  it("the node's answer signature binds the nonce, the status and its signed headers, under any listed secret", () => {
    const node = new NodeSecrets([NEW, OLD]);
    const answerHeaders: Record<string, string> = {
      "content-type": "application/json",
      [SIGNATURE_HEADERS.length]: "12",
    };
    const signed = node.signAnswer("nonce-1", 201, (name) => answerHeaders[name]);
    const seen = (extra: Record<string, string> = {}) => {
      const all: Record<string, string> = {
        ...answerHeaders,
        [SIGNATURE_HEADERS.answer]: signed.header,
        ...extra,
      };
      return (name: string) => all[name];
    };
    const frames = new NodeSecrets([OLD, NEW]).verifyAnswer("nonce-1", 201, seen());
    expect(frames?.seed.equals(signed.frames.seed)).toBe(true);
    expect(new NodeSecrets([OLD]).verifyAnswer("nonce-1", 201, seen())).toBeUndefined();
    expect(node.verifyAnswer("nonce-1", 200, seen())).toBeUndefined();
    expect(node.verifyAnswer("nonce-2", 201, seen())).toBeUndefined();
    expect(node.verifyAnswer("nonce-1", 201, seen({ [SIGNATURE_HEADERS.length]: "13" }))).toBeUndefined();
    expect(
      node.verifyAnswer("nonce-1", 201, seen({ [NODE_ERROR_HEADER]: "sandbox.timeout" })),
    ).toBeUndefined();
    expect(node.verifyAnswer("nonce-1", 201, seen({ "content-type": "text/html" }))).toBeUndefined();
    expect(node.verifyAnswer("nonce-1", 201, seen({ [SIGNATURE_HEADERS.answer]: "" }))).toBeUndefined();
  });
});
