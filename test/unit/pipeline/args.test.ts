import { describe, expect, it } from "vitest";
import { SandpoolError } from "../../../src/contract/error-codes.js";
import { operations } from "../../../src/operations/registry.js";
import { parseArgs, type RawArgs } from "../../../src/pipeline/steps/args.js";

const raw = (body: unknown, extra: Partial<RawArgs> = {}): RawArgs => ({
  params: { id: "s1" },
  query: {},
  readBody: async () => body,
  ...extra,
});

async function refusal(promise: Promise<unknown>): Promise<SandpoolError> {
  const error = await promise.catch((caught: unknown) => caught);
  expect(error).toBeInstanceOf(SandpoolError);
  return error as SandpoolError;
}

describe("pipeline step args", () => {
  const exec = operations.get("sessions.exec")!;
  const create = operations.get("sessions.create")!;

  it("admits an Execute body as it came, unknown fields included", async () => {
    const body = { tool: "bash_code_execution", input: { command: "ls" }, extra: 1 };
    const args = await parseArgs(exec, raw(body));
    expect(args.body).toBe(body);
    expect(args.params).toEqual({ id: "s1" });
  });

  it("keeps the contract's codes: 400 for an unknown tool kind, 422 with every problem for a malformed input", async () => {
    expect((await refusal(parseArgs(exec, raw({ tool: "teleport" })))).code).toBe("tool.unknown");
    const malformed = await refusal(
      parseArgs(exec, raw({ tool: "code_execution", input: {}, timeout_seconds: 0 })),
    );
    expect(malformed.status).toBe(422);
    expect(malformed.problems).toHaveLength(2);
  });

  it("checks a body against the declared schema, and reads a missing optional body as {}", async () => {
    const bad = await refusal(parseArgs(create, raw({ idle_timeout_seconds: -1 })));
    expect(bad.toBody().detail).toMatchObject({
      code: "request.malformed",
      problems: [expect.stringMatching(/^idle_timeout_seconds: /)],
    });
    expect((await parseArgs(create, { params: {}, query: {} })).body).toEqual({});
    await expect(parseArgs(exec, { params: {}, query: {} })).rejects.toMatchObject({
      code: "request.bad_json",
    });
  });

  it("names the fields a strict body takes when it has an unknown one, and the one most likely meant", async () => {
    const put = operations.get("admin.policy.put")!;
    const typo = await refusal(
      parseArgs(put, raw({ maxConcurentSessions: 2 }, { params: { ws: "team-a" } })),
    );
    expect(typo.problems).toHaveLength(1);
    expect(typo.problems![0]).toMatch(
      /^maxConcurentSessions: unknown field, did you mean 'maxConcurrentSessions'\? \(the fields are enabled, .*maxConcurrentSessions.*\)$/,
    );
    const keys = operations.get("admin.keys.create")!;
    const unknown = await refusal(
      parseArgs(keys, raw({ workspace: "team-a", colour: "red" }, { params: {} })),
    );
    expect(unknown.problems).toEqual([
      "colour: unknown field (the fields are workspace, name, expiresInSeconds)",
    ]);
  });

  it("checks the query against the declared schema and passes it on", async () => {
    const list = operations.get("files.list")!;
    expect((await parseArgs(list, raw(undefined, { query: { path: "out" } }))).query).toEqual({
      path: "out",
    });
  });

  it("refuses an upload without its byte stream", async () => {
    const put = operations.get("files.put")!;
    const error = await refusal(parseArgs(put, raw(undefined)));
    expect(error.toBody().detail).toMatchObject({
      code: "request.malformed",
      message: "PutFile needs a multipart body",
    });
  });
});
