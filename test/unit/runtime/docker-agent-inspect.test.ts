/**
 * docker-modem formats each request's options (its agent included) with util.inspect for a
 * debug log, whether that log is on or not: the engine's agent must format as its name, not
 * as the graph of every socket it holds (milliseconds of the event loop per Docker call).
 */
import http from "node:http";
import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { DockerEngine } from "../../../src/runtime/docker/docker-engine.js";

describe("the Docker engine's connection agent", () => {
  it("formats as its name, however deep docker-modem looks", () => {
    const engine = new DockerEngine(0, "unix:///var/run/docker.sock", 30_000, 5_000);
    const agent = (engine.docker.modem as unknown as { agent: http.Agent }).agent;
    expect(agent).toBeInstanceOf(http.Agent);
    const text = inspect({ path: "/containers/json", agent }, { showHidden: true, depth: null });
    expect(text).toContain("[Docker agent unix:///var/run/docker.sock]");
    expect(text).not.toContain("freeSockets");
    engine.close();
  });
});
