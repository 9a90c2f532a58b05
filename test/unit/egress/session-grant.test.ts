import { describe, expect, it } from "vitest";
import {
  composeGrant,
  reachableBindingHosts,
  renderPresentation,
  sessionCredentials,
  sessionHosts,
} from "../../../src/egress/session-grant.js";
import type { OpenedSecret } from "../../../src/secrets/workspace-secrets.js";

const policy = {
  enabled: true,
  egressAllowed: true,
  egressAllowCidrs: ["127.0.0.1/32"],
  egressAllowHosts: ["api.github.com", "*.pypi.org", "example.com"],
};

const secret = (
  name: string,
  hosts: string[],
  presentation: OpenedSecret["binding"]["presentation"],
  value = `v-${name}`,
) => ({ name, binding: { hosts, presentation }, value }) as OpenedSecret;

const github = secret("github", ["api.github.com"], {
  header: "Authorization",
  template: "Bearer {{secret}}",
});
const pypi = secret("pypi", ["upload.pypi.org"], { basicAuth: { username: "__token__" } });
const wide = secret("wide", ["*.example.com"], { header: "X-Key", template: "{{secret}}" });

describe("presenting a secret", () => {
  it("renders a template, every occurrence, with $ patterns kept literal", () => {
    const odd = secret(
      "odd",
      ["a.example"],
      { header: "X-Token", template: "k={{secret}};again={{secret}}" },
      "$&$1x",
    );
    expect(renderPresentation(odd)).toEqual({ header: "X-Token", value: "k=$&$1x;again=$&$1x" });
  });

  it("renders basic auth with the value as the password", () => {
    expect(renderPresentation(pypi)).toEqual({
      header: "Authorization",
      value: `Basic ${Buffer.from("__token__:v-pypi").toString("base64")}`,
    });
  });

  it("drops a credential whose value would write headers of its own", () => {
    const evil = secret(
      "evil",
      ["api.github.com"],
      { header: "Authorization", template: "Bearer {{secret}}" },
      "x\r\nX-Admin: 1",
    );
    expect(sessionCredentials([evil], undefined, [])).toEqual([]);
  });
});

describe("a session's hosts", () => {
  it("are the workspace's when not narrowed, the session's kept within the policy in force otherwise", () => {
    expect(sessionHosts(policy, undefined)).toEqual(policy.egressAllowHosts);
    expect(sessionHosts(policy, { hosts: ["upload.pypi.org", "gone.example"] })).toEqual(["upload.pypi.org"]);
  });

  it("never widen to 'any host' when the policy narrowed below every host the session asked", () => {
    expect(sessionHosts(policy, { hosts: ["gone.example"] })).toBeUndefined();
    expect(composeGrant(policy, { hosts: ["gone.example"] }, [github])).toBeUndefined();
    // An empty list read back from the store is no host either.
    expect(composeGrant(policy, { hosts: [] }, [])).toBeUndefined();
  });
});

describe("a session's grant", () => {
  it("carries every secret of the workspace for its reachable hosts when not narrowed", () => {
    const grant = composeGrant(policy, undefined, [github, pypi, wide]);
    expect(grant?.allowHosts).toEqual(policy.egressAllowHosts);
    // *.example.com overlaps nothing allowed (example.com itself is not below it): not carried.
    expect(grant?.credentials?.map((c) => [c.secret, c.hosts])).toEqual([
      ["github", ["api.github.com"]],
      ["pypi", ["upload.pypi.org"]],
    ]);
    expect(grant?.credentials?.[0]).toMatchObject({ header: "Authorization", value: "Bearer v-github" });
  });

  it("carries only the session's secrets, and only those its hosts reach", () => {
    expect(
      composeGrant(policy, { secrets: ["pypi"] }, [github, pypi])?.credentials?.map((c) => c.secret),
    ).toEqual(["pypi"]);
    expect(
      composeGrant(policy, { hosts: ["api.github.com"] }, [github, pypi])?.credentials?.map((c) => c.secret),
    ).toEqual(["github"]);
    expect(composeGrant(policy, { secrets: [] }, [github, pypi])?.credentials).toBeUndefined();
    // A secret named by the session but no longer held is simply not there.
    expect(composeGrant(policy, { secrets: ["github"] }, [pypi])?.credentials).toBeUndefined();
  });

  it("keeps the binding's own pattern when a narrower session host falls below it", () => {
    expect(reachableBindingHosts(["*.pypi.org"], ["upload.pypi.org"])).toEqual(["*.pypi.org"]);
    expect(reachableBindingHosts(["*.pypi.org", "other.example"], ["*.pypi.org"])).toEqual(["*.pypi.org"]);
    expect(reachableBindingHosts(["a.example"], [])).toEqual(["a.example"]);
  });

  it("is no grant at all for a disabled workspace or one without egress", () => {
    expect(composeGrant({ ...policy, enabled: false }, undefined, [github])).toBeUndefined();
    expect(composeGrant({ ...policy, egressAllowed: false }, undefined, [github])).toBeUndefined();
  });

  it("passes ports, paths and methods on, methods upper case", () => {
    const bound = {
      ...github,
      binding: { ...github.binding, ports: [443], paths: ["/repos"], methods: ["get"] },
    } as OpenedSecret;
    expect(sessionCredentials([bound], undefined, [])[0]).toMatchObject({
      ports: [443],
      paths: ["/repos"],
      methods: ["GET"],
    });
  });
});
