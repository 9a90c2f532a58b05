/**
 * The key ring seals with its first key and opens with any, names the key in what it seals,
 * detects any change to a sealed value, and refuses malformed key input by position and id
 * without ever echoing key material.
 */
import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { KeyRing, KeyRingError, newKeyEntry, parseKeyRing } from "../../../src/secrets/key-ring.js";
import { secretSealContext } from "../../../src/secrets/workspace-secrets.js";

const key = () => randomBytes(32).toString("base64");

describe("KeyRing", () => {
  it("seals and opens; the sealed text names its key and not the value", () => {
    const ring = KeyRing.parse(newKeyEntry("k1"));
    const sealed = ring.seal(Buffer.from("hunter2-very-secret"), "ctx");
    expect(sealed).toMatch(/^v1:k1:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain("hunter2");
    expect(ring.open(sealed, "ctx").toString()).toBe("hunter2-very-secret");
    // A fresh nonce each time: the same value never seals the same way twice.
    expect(ring.seal(Buffer.from("x"), "ctx")).not.toBe(ring.seal(Buffer.from("x"), "ctx"));
  });

  it("rotates: the newest (first) key seals, an old key still opens what it sealed", () => {
    const old = `old:${key()}`;
    const before = KeyRing.parse(old);
    const sealedBefore = before.seal(Buffer.from("before rotation"), "ctx");
    const rotated = KeyRing.parse(`new:${key()},${old}`);
    expect(rotated.sealingKeyId).toBe("new");
    expect(rotated.open(sealedBefore, "ctx").toString()).toBe("before rotation");
    const sealedAfter = rotated.seal(Buffer.from("after rotation"), "ctx");
    expect(sealedAfter.startsWith("v1:new:")).toBe(true);
    // The old ring alone cannot open what the new key sealed, and says which key it needs.
    expect(() => before.open(sealedAfter, "ctx")).toThrow(/key 'new', which is not in the key ring/);
  });

  it("detects tampering: a changed ciphertext, tag, nonce or key id does not open", () => {
    const ring = KeyRing.parse(`a:${key()},b:${key()}`);
    const sealed = ring.seal(Buffer.from("payload"), "ctx");
    const [format, id, nonce, body] = sealed.split(":") as [string, string, string, string];
    const flip = (text: string, at: number) => {
      const bytes = Buffer.from(text, "base64url");
      bytes[at] = bytes[at]! ^ 1;
      return bytes.toString("base64url");
    };
    for (const changed of [
      [format, id, nonce, flip(body, 0)],
      [format, id, nonce, flip(body, Buffer.from(body, "base64url").length - 1)],
      [format, id, flip(nonce, 0), body],
      [format, "b", nonce, body],
    ])
      expect(() => ring.open(changed.join(":"), "ctx")).toThrow(KeyRingError);
    for (const garbage of ["", "v1:a", "v2:a:b:c", `v1:a:${nonce}:`, "plain text"])
      expect(() => ring.open(garbage, "ctx")).toThrow(KeyRingError);
  });

  it("opens a value only for what it was sealed for: another row's context does not open it", () => {
    const ring = KeyRing.parse(newKeyEntry("k1"));
    const sealed = ring.seal(Buffer.from("team-a's token"), secretSealContext("team-a", "github"));
    expect(ring.open(sealed, secretSealContext("team-a", "github")).toString()).toBe("team-a's token");
    for (const [workspace, name] of [
      ["team-b", "github"],
      ["team-a", "pypi"],
      ["team-agithub", ""],
    ] as const)
      expect(() => ring.open(sealed, secretSealContext(workspace, name)), `${workspace}/${name}`).toThrow(
        /sealed for another row/,
      );
    expect(() => ring.open(sealed, "egress-ca")).toThrow(KeyRingError);
  });

  it("reads a keys file: one entry a line, comments and blank lines skipped", () => {
    const text = `# rotated 2026-12\nk2:${key()}\n\nk1:${key()}\n`;
    expect(parseKeyRing(text).map((entry) => entry.id)).toEqual(["k2", "k1"]);
  });

  it("refuses malformed keys, naming the entry and never its material", () => {
    const short = randomBytes(16).toString("base64");
    const cases: [string, RegExp][] = [
      ["", /no key/],
      [`k1${key()}`, /key 1 is not id:base64key/],
      [`k1:${short}`, /key 1 \('k1'\): the key is 16 bytes, it must be 32/],
      [`k1:${key()},k1:${key()}`, /key 2: the id 'k1' is given twice/],
      [`bad id:${key()}`, /key 1: the id must be/],
      ["k1:not base64!!", /key 1 \('k1'\): the key is not base64/],
    ];
    for (const [text, problem] of cases) {
      let thrown: unknown;
      try {
        parseKeyRing(text);
      } catch (error) {
        thrown = error;
      }
      expect(thrown, text).toBeInstanceOf(KeyRingError);
      expect((thrown as Error).message).toMatch(problem);
      expect((thrown as Error).message).not.toContain(short);
    }
    expect(() => new KeyRing([])).toThrow(KeyRingError);
  });
});
