import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { headerFromRaw, requestHeader } from "../../../src/http/common/request-header.js";

describe("headerFromRaw", () => {
  const raw = [
    "Host",
    "gw.example",
    "Authorization",
    "Bearer a",
    "X-Request-Id",
    "one",
    "x-request-id",
    "two",
  ];

  it("finds a header whatever the case it was sent in", () => {
    expect(headerFromRaw(raw, "host")).toBe("gw.example");
    expect(headerFromRaw(raw, "authorization")).toBe("Bearer a");
  });

  it("joins duplicates with ', ', as a web Headers object does (so two credentials are never one)", () => {
    expect(headerFromRaw(raw, "x-request-id")).toBe("one, two");
    const twice = ["authorization", "Bearer a", "AUTHORIZATION", "Bearer b"];
    expect(headerFromRaw(twice, "authorization")).toBe(
      new Headers([
        ["authorization", "Bearer a"],
        ["authorization", "Bearer b"],
      ]).get("authorization"),
    );
  });

  it("answers undefined for a header that is absent, and an empty value as it is", () => {
    expect(headerFromRaw(raw, "origin")).toBeUndefined();
    expect(headerFromRaw(["Origin", ""], "origin")).toBe("");
  });
});

describe("requestHeader", () => {
  it("falls back to the web request when there is no Node request (an in-process call)", async () => {
    const app = new Hono();
    app.get("/", (c) => c.text(requestHeader(c, "x-probe") ?? "absent"));
    expect(await (await app.request("/", { headers: { "X-Probe": "seen" } })).text()).toBe("seen");
    expect(await (await app.request("/")).text()).toBe("absent");
  });
});
