/**
 * The binding rules as schemas, without a gateway: what a header may hold once the value is
 * rendered into it, and the flat form an operator writes turned into the binding egress reads.
 */
import { describe, expect, it } from "vitest";
import {
  bindingOf,
  secretBindingSchema,
  secretPutSchema,
} from "../../../src/secrets/secret-binding-schema.js";

const header = { hosts: ["API.Example.com"], header: "Authorization", template: "Bearer {{secret}}" };

describe("secret binding schema", () => {
  it("reads the flat form as the binding: hosts in lower case, one presentation", () => {
    const parsed = secretPutSchema.parse({ value: "v", ...header, ports: [443] });
    const { value: _v, ...flat } = parsed;
    expect(bindingOf(flat)).toEqual({
      hosts: ["api.example.com"],
      ports: [443],
      presentation: { header: "Authorization", template: "Bearer {{secret}}" },
    });
    expect(
      bindingOf(secretBindingSchema.parse({ hosts: ["a.example"], basicAuth: { username: "u" } })),
    ).toEqual({
      hosts: ["a.example"],
      presentation: { basicAuth: { username: "u" } },
    });
  });

  it("lets a tab through a header value but no other control character; basic auth takes any value", () => {
    expect(secretPutSchema.safeParse({ value: "a\tb", ...header }).success).toBe(true);
    for (const value of ["a\nb", "a\rb", "a\u0000b", "a\u007fb"])
      expect(secretPutSchema.safeParse({ value, ...header }).success, JSON.stringify(value)).toBe(false);
    expect(secretPutSchema.safeParse({ ...header, value: "v", template: "Bearer\n{{secret}}" }).success).toBe(
      false,
    );
    const basic = { hosts: ["a.example"], basicAuth: { username: "u" } };
    expect(secretPutSchema.safeParse({ value: "line\nbreak", ...basic }).success).toBe(true);
    expect(
      secretPutSchema.safeParse({ value: "v", hosts: ["a.example"], basicAuth: { username: "a:b" } }).success,
    ).toBe(false);
  });

  it("refuses TRACE and CONNECT as a binding's methods: they never carry a secret", () => {
    expect(secretBindingSchema.safeParse({ ...header, methods: ["GET", "POST"] }).success).toBe(true);
    for (const method of ["TRACE", "CONNECT"]) {
      const parsed = secretBindingSchema.safeParse({ ...header, methods: ["GET", method] });
      expect(parsed.success, method).toBe(false);
      expect(JSON.stringify(parsed.error?.issues), method).toMatch(/never carry a secret/);
    }
  });

  it("takes no value in a binding (policy files)", () => {
    const parsed = secretBindingSchema.safeParse({ ...header, value: "v" });
    expect(parsed.success).toBe(false);
  });
});
