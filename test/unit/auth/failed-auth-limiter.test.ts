import { describe, expect, it } from "vitest";
import { credentialFingerprint, FailedAuthLimiter } from "../../../src/auth/failed-auth-limiter.js";
import { clock } from "../../support/clock.js";

function fail(limiter: FailedAuthLimiter, source: string, times: number) {
  for (let i = 0; i < times; i++) limiter.recordFailure(source);
}

describe("FailedAuthLimiter", () => {
  it("limits a source after maxFailures failures within the window", () => {
    const time = clock();
    const limiter = new FailedAuthLimiter({ maxFailures: 3, windowMs: 60_000, now: time.now });
    fail(limiter, "addr:1.2.3.4", 2);
    expect(limiter.check("addr:1.2.3.4")).toEqual({ limited: false, retryAfterSeconds: 0 });
    fail(limiter, "addr:1.2.3.4", 1);
    expect(limiter.check("addr:1.2.3.4").limited).toBe(true);
  });

  it("uses the defaults of 20 failures per 60 seconds", () => {
    const time = clock();
    const limiter = new FailedAuthLimiter({ now: time.now });
    fail(limiter, "s", 19);
    expect(limiter.check("s").limited).toBe(false);
    fail(limiter, "s", 1);
    expect(limiter.check("s")).toEqual({ limited: true, retryAfterSeconds: 60 });
  });

  it("counts each source on its own", () => {
    const time = clock();
    const limiter = new FailedAuthLimiter({ maxFailures: 2, now: time.now });
    fail(limiter, "a", 2);
    fail(limiter, "b", 1);
    expect(limiter.check("a").limited).toBe(true);
    expect(limiter.check("b").limited).toBe(false);
    expect(limiter.check("c").limited).toBe(false);
  });

  it("answers a Retry-After that counts down to the end of the window", () => {
    const time = clock();
    const limiter = new FailedAuthLimiter({ maxFailures: 1, windowMs: 60_000, now: time.now });
    fail(limiter, "s", 1);
    expect(limiter.check("s").retryAfterSeconds).toBe(60);
    time.advance(15_500);
    expect(limiter.check("s").retryAfterSeconds).toBe(45);
    time.advance(44_400);
    expect(limiter.check("s")).toEqual({ limited: true, retryAfterSeconds: 1 });
  });

  it("resets once the window is over", () => {
    const time = clock();
    const limiter = new FailedAuthLimiter({ maxFailures: 2, windowMs: 10_000, now: time.now });
    fail(limiter, "s", 2);
    expect(limiter.check("s").limited).toBe(true);
    time.advance(10_000);
    expect(limiter.check("s")).toEqual({ limited: false, retryAfterSeconds: 0 });
    fail(limiter, "s", 1);
    expect(limiter.check("s").limited).toBe(false);
  });

  it("keeps its memory bounded, forgetting the least recently seen source", () => {
    const time = clock();
    const limiter = new FailedAuthLimiter({ maxFailures: 1, maxSources: 100, now: time.now });
    fail(limiter, "first", 1);
    for (let i = 0; i < 1_000; i++) {
      limiter.recordFailure(`flood-${i}`);
      expect(limiter.size).toBeLessThanOrEqual(100);
    }
    expect(limiter.size).toBe(100);
    expect(limiter.check("first").limited).toBe(false);
    expect(limiter.check("flood-999").limited).toBe(true);
  });

  it("keeps a limited source that keeps knocking when others flood in", () => {
    const time = clock();
    const limiter = new FailedAuthLimiter({ maxFailures: 1, maxSources: 10, now: time.now });
    fail(limiter, "attacker", 1);
    for (let i = 0; i < 100; i++) {
      expect(limiter.check("attacker").limited).toBe(true);
      limiter.recordFailure(`other-${i}`);
    }
    expect(limiter.check("attacker").limited).toBe(true);
  });

  it("refuses nonsensical options", () => {
    expect(() => new FailedAuthLimiter({ maxFailures: 0 })).toThrow(RangeError);
    expect(() => new FailedAuthLimiter({ maxSources: 0 })).toThrow(RangeError);
  });
});

describe("credential fingerprints", () => {
  it("names a credential by a SHA-256 prefix, never by the credential itself", () => {
    const fingerprint = credentialFingerprint("Bearer secret.token.value");
    expect(fingerprint).toMatch(/^[0-9a-f]{32}$/);
    expect(fingerprint).toBe(credentialFingerprint("Bearer secret.token.value"));
    expect(fingerprint).not.toBe(credentialFingerprint("Bearer secret.token.other"));
  });
});
