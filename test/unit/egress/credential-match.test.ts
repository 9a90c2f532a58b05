import { describe, expect, it } from "vitest";
import {
  credentialForRequest,
  credentialHeaderProblem,
  credentialsForDestination,
  hostHeaderMatches,
} from "../../../src/egress/credential-match.js";
import type { EgressCredential } from "../../../src/egress/egress-rules.js";

const api: EgressCredential = {
  secret: "api",
  hosts: ["api.example.com", "*.svc.example.com"],
  ports: [443],
  header: "Authorization",
  value: "v",
};
const scoped: EgressCredential = {
  secret: "scoped",
  hosts: ["api.example.com"],
  paths: ["/v1/"],
  methods: ["get"],
  header: "X-Key",
  value: "w",
};
const grant = { allowCidrs: [], allowHosts: [], credentials: [api, scoped] };

describe("which credentials a CONNECT gets", () => {
  it("matches host patterns and ports, and nothing without credentials", () => {
    expect(credentialsForDestination(grant, "API.example.com", 443).map((c) => c.secret)).toEqual([
      "api",
      "scoped",
    ]);
    expect(credentialsForDestination(grant, "api.example.com", 8443).map((c) => c.secret)).toEqual([
      "scoped",
    ]);
    expect(credentialsForDestination(grant, "a.svc.example.com", 443).map((c) => c.secret)).toEqual(["api"]);
    expect(credentialsForDestination(grant, "svc.example.com.evil.test", 443)).toEqual([]);
    expect(credentialsForDestination({ allowCidrs: [], allowHosts: [] }, "api.example.com", 443)).toEqual([]);
  });
});

describe("which credential a request gets", () => {
  it("honours methods (any case) and path prefixes, ignoring the query", () => {
    expect(credentialForRequest([scoped], "GET", "/v1/items?x=/v2")?.secret).toBe("scoped");
    expect(credentialForRequest([scoped], "POST", "/v1/items")).toBeUndefined();
    expect(credentialForRequest([scoped], "GET", "/v2/items?next=/v1/")).toBeUndefined();
    expect(credentialForRequest([scoped, api], "POST", "/v1/items")?.secret).toBe("api");
  });

  it("gives nothing to a path an upstream could read as another", () => {
    for (const path of [
      "/v1/../admin",
      "/v1/./x",
      "/v1/%2E%2e/admin",
      "/v1/a%2Fb",
      "/v1/a%5cb",
      "/v1\\\\x",
      "/v1//x",
      // Matrix parameters: Tomcat, Jetty and Spring read these as /admin.
      "/v1/..;/admin",
      "/v1/%2e%2e;/admin",
      "/v1/x;jsessionid=1",
      "/v1/x%3Bx",
    ])
      expect(credentialForRequest([scoped], "GET", path), path).toBeUndefined();
  });

  it("takes a prefix at a segment boundary: /repos/acme is not /repos/acme-other", () => {
    const repo = { ...scoped, paths: ["/repos/acme"], methods: undefined };
    expect(credentialForRequest([repo], "GET", "/repos/acme")?.secret).toBe("scoped");
    expect(credentialForRequest([repo], "GET", "/repos/acme/issues")?.secret).toBe("scoped");
    expect(credentialForRequest([repo], "GET", "/repos/acme?x=1")?.secret).toBe("scoped");
    expect(credentialForRequest([repo], "GET", "/repos/acme-other")).toBeUndefined();
    expect(credentialForRequest([repo], "GET", "/repos/acmeco/x")).toBeUndefined();
  });

  it("never gives one to TRACE (it echoes the request, credential and all) nor CONNECT", () => {
    expect(credentialForRequest([api], "TRACE", "/")).toBeUndefined();
    expect(credentialForRequest([api], "trace", "/")).toBeUndefined();
    expect(credentialForRequest([{ ...api, methods: ["TRACE"] }], "TRACE", "/")).toBeUndefined();
    expect(credentialForRequest([api], "CONNECT", "/")).toBeUndefined();
    expect(credentialForRequest([api], "GET", "/")?.secret).toBe("api");
  });
});

describe("the Host a request inside a tunnel names", () => {
  it("must be the CONNECT's host, with or without its port", () => {
    expect(hostHeaderMatches("api.example.com", "api.example.com", 443)).toBe(true);
    expect(hostHeaderMatches("API.example.com:443", "api.example.com", 443)).toBe(true);
    expect(hostHeaderMatches("api.example.com:444", "api.example.com", 443)).toBe(false);
    expect(hostHeaderMatches("other.example.com", "api.example.com", 443)).toBe(false);
    expect(hostHeaderMatches(undefined, "api.example.com", 443)).toBe(false);
    expect(hostHeaderMatches("[::1]:443", "::1", 443)).toBe(true);
  });
});

describe("a credential's header", () => {
  it("may not frame the request nor carry CR or LF", () => {
    expect(credentialHeaderProblem(api)).toBeUndefined();
    expect(credentialHeaderProblem({ ...api, header: "Transfer-Encoding" })).toMatch(/may not set/);
    expect(credentialHeaderProblem({ ...api, header: "Proxy-Authorization" })).toMatch(/may not set/);
    expect(credentialHeaderProblem({ ...api, value: "a\r\nb: c" })).toMatch(/forbids/);
    expect(credentialHeaderProblem({ ...api, value: "a\r\nb: c" })).not.toContain("a\r\nb");
  });
});
