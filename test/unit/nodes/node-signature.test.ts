import { describe, expect, it } from "vitest";
import {
  NodeSecrets,
  RequestVerifier,
  SIGNATURE_HEADERS,
  type SignedRequest,
  STREAMED_BODY,
} from "../../../src/nodes/node-signature.js";

const OLD = "o".repeat(32);
const NEW = "n".repeat(32);
const WINDOW = 30_000;
const NOW = 1_800_000_000_000;
const request: SignedRequest = {
  nodeId: "node-a",
  method: "POST",
  target: "/node/v1/x?y=1",
  body: '{"a":1}',
};

function verifier(secrets: string[], nodeId = "node-a") {
  return new RequestVerifier(new NodeSecrets(secrets), { nodeId, clockWindowMs: WINDOW });
}
const lookup = (headers: Record<string, string>) => (name: string) => headers[name];
const withoutNode = ({ nodeId: _n, ...rest }: SignedRequest) => rest;

describe("edge/node request signatures", () => {
  it("verifies a request signed with the same secret, once", () => {
    const headers = new NodeSecrets([OLD]).sign(request, NOW);
    const check = verifier([OLD]);
    expect(check.verify(withoutNode(request), lookup(headers), NOW + 1)).toEqual({
      ok: true,
      nonce: headers[SIGNATURE_HEADERS.nonce],
    });
    expect(check.verify(withoutNode(request), lookup(headers), NOW + 2)).toEqual({
      ok: false,
      refused: "replay",
    });
  });

  it("refuses another secret, a missing header, another node, and any changed part", () => {
    const headers = new NodeSecrets([OLD]).sign(request, NOW);
    expect(verifier([NEW]).verify(withoutNode(request), lookup(headers), NOW).ok).toBe(false);
    const { [SIGNATURE_HEADERS.signature]: _s, ...unsigned } = headers;
    expect(verifier([OLD]).verify(withoutNode(request), lookup(unsigned), NOW)).toEqual({
      ok: false,
      refused: "missing",
    });
    expect(verifier([OLD], "node-b").verify(withoutNode(request), lookup(headers), NOW)).toEqual({
      ok: false,
      refused: "bad_signature",
    });
    for (const changed of [
      { ...request, method: "GET" },
      { ...request, target: "/node/v1/x?y=2" },
    ]) {
      expect(verifier([OLD]).verify(withoutNode(changed), lookup(headers), NOW)).toEqual({
        ok: false,
        refused: "bad_signature",
      });
    }
    expect(
      verifier([OLD]).verify({ ...withoutNode(request), body: '{"a":2}' }, lookup(headers), NOW),
    ).toEqual({
      ok: false,
      refused: "body_mismatch",
    });
    const forged = { ...headers, [SIGNATURE_HEADERS.timestamp]: String(NOW + 1) };
    expect(verifier([OLD]).verify(withoutNode(request), lookup(forged), NOW)).toEqual({
      ok: false,
      refused: "bad_signature",
    });
  });

  it("refuses a request signed outside the clock window, either side", () => {
    const early = new NodeSecrets([OLD]).sign(request, NOW - WINDOW - 1);
    const late = new NodeSecrets([OLD]).sign(request, NOW + WINDOW + 1);
    expect(verifier([OLD]).verify(withoutNode(request), lookup(early), NOW)).toEqual({
      ok: false,
      refused: "clock",
    });
    expect(verifier([OLD]).verify(withoutNode(request), lookup(late), NOW)).toEqual({
      ok: false,
      refused: "clock",
    });
    const edge = new NodeSecrets([OLD]).sign(request, NOW - WINDOW);
    expect(verifier([OLD]).verify(withoutNode(request), lookup(edge), NOW).ok).toBe(true);
  });

  it("forgets nonces once their window has passed, remembering them until then", () => {
    const check = verifier([OLD]);
    const first = new NodeSecrets([OLD]).sign(request, NOW);
    expect(check.verify(withoutNode(request), lookup(first), NOW).ok).toBe(true);
    // The same headers later are out of the window: refused for the clock, not let through.
    expect(check.verify(withoutNode(request), lookup(first), NOW + WINDOW + 1)).toEqual({
      ok: false,
      refused: "clock",
    });
  });

  it("rotates: the first secret signs, every listed one verifies", () => {
    const byOld = new NodeSecrets([OLD]).sign(request, NOW);
    const byNew = new NodeSecrets([NEW, OLD]).sign(request, NOW);
    // Step 1: nodes list [OLD, NEW] and still accept the edges that sign with OLD.
    expect(verifier([OLD, NEW]).verify(withoutNode(request), lookup(byOld), NOW).ok).toBe(true);
    // Step 2: edges sign with NEW first; nodes at step 1 or 2 accept it.
    expect(verifier([OLD, NEW]).verify(withoutNode(request), lookup(byNew), NOW).ok).toBe(true);
    expect(verifier([NEW, OLD]).verify(withoutNode(request), lookup(byNew), NOW).ok).toBe(true);
    // Step 3: OLD dropped; what it signs is refused.
    expect(verifier([NEW]).verify(withoutNode(request), lookup(byOld), NOW).ok).toBe(false);
  });

  it("signs a streamed body as 'stream', which a route that reads the bytes refuses", () => {
    const streamed = { ...request, body: STREAMED_BODY } as const;
    const headers = new NodeSecrets([OLD]).sign(streamed, NOW);
    expect(headers[SIGNATURE_HEADERS.body]).toBe("stream");
    expect(verifier([OLD]).verify(withoutNode(streamed), lookup(headers), NOW).ok).toBe(true);
    expect(verifier([OLD]).verify(withoutNode(request), lookup(headers), NOW)).toEqual({
      ok: false,
      refused: "body_mismatch",
    });
  });

  it("the node's answer signature binds the nonce and the status, under any listed secret", () => {
    const node = new NodeSecrets([NEW, OLD]);
    const answer = node.signAnswer("nonce-1", 201);
    expect(new NodeSecrets([OLD, NEW]).verifyAnswer("nonce-1", 201, answer)).toBe(true);
    expect(new NodeSecrets([OLD]).verifyAnswer("nonce-1", 201, answer)).toBe(false);
    expect(node.verifyAnswer("nonce-1", 200, answer)).toBe(false);
    expect(node.verifyAnswer("nonce-2", 201, answer)).toBe(false);
    expect(node.verifyAnswer("nonce-1", 201, undefined)).toBe(false);
  });
});
