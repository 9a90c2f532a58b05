import { randomUUID } from "node:crypto";
import { sql } from "kysely";
import { beforeAll, describe, expect, it } from "vitest";
import { mergeUsageBatch } from "../../../src/metering/merge-usage.js";
import { usageRecord } from "../../../src/metering/usage-record.js";
import { type UsageEvent, UsageRepository } from "../../../src/store/sql/usage-repository.js";
import { databaseFlavours, uniqueId, useDatabase } from "./databases.js";

const t0 = new Date("2026-01-01T00:00:00Z");
const at = (minutes: number) => new Date(t0.getTime() + minutes * 60_000);
const dayAfter = at(24 * 60);

function event(workspaceId: string, fields: Partial<UsageEvent> = {}): UsageEvent {
  return {
    eventId: randomUUID(),
    workspaceId,
    sessionId: "sess-1",
    kind: "exec",
    tool: "code_execution",
    quantity: 100,
    occurredAt: at(1),
    ...fields,
  };
}

describe.each(databaseFlavours)("UsageRepository on $name", (flavour) => {
  const handle = useDatabase(flavour);
  let usage: UsageRepository;
  beforeAll(() => {
    usage = new UsageRepository(handle.db);
  });

  it("counts a call once when it comes again in another batch, merged with others or alone", async () => {
    const ws = uniqueId();
    const call = (quantity: number) =>
      usageRecord(
        { workspace: ws, sessionId: "sess-1", kind: "exec", tool: "code_execution", quantity },
        60_000,
      );
    const [one, two, three] = [call(10), call(20), call(40)];
    // A batch, then a journal replayed into another (two again, with three), then one alone.
    for (const batch of [[one, two], [two, three], [one], [three, two, one]])
      await usage.insert(mergeUsageBatch(ws, batch!).rows);
    expect(await usage.summary(ws, new Date(0), dayAfter)).toEqual([
      { kind: "exec", tool: "code_execution", count: 3, quantity: 70 },
    ]);
  });

  it("counts the calls a merged record stands for", async () => {
    const ws = uniqueId();
    await usage.insert([event(ws, { quantity: 300, events: 3 }), event(ws, { quantity: 10 })]);
    expect(await usage.summary(ws, t0, dayAfter)).toEqual([
      { kind: "exec", tool: "code_execution", count: 4, quantity: 310 },
    ]);
  });

  it("finds the open session a sandbox serves, and not one that ended", async () => {
    const ws = uniqueId();
    const lease = { sessionId: "sess-open", sandbox: { sandboxId: "sbx-open" } };
    await usage.insert([
      event(ws, {
        kind: "session_created",
        sessionId: "sess-open",
        sandboxId: "sbx-open",
        detail: { lease },
      }),
      event(ws, {
        kind: "session_created",
        sessionId: "sess-done",
        sandboxId: "sbx-done",
        detail: { lease: {} },
      }),
      event(ws, { kind: "session_ended", sessionId: "sess-done", sandboxId: "sbx-done" }),
    ]);
    expect(await usage.openSessionOnSandbox("sbx-open")).toEqual(lease);
    expect(await usage.openSessionOnSandbox("sbx-done")).toBeUndefined();
    expect(await usage.openSessionOnSandbox("sbx-unknown")).toBeUndefined();
  });

  it("counts a batch flushed twice once", async () => {
    const ws = uniqueId();
    const batch = [
      event(ws),
      event(ws, { quantity: 50 }),
      event(ws, { kind: "session_created", tool: null, quantity: 0 }),
    ];
    expect(await usage.insert(batch)).toBe(3);
    expect(await usage.insert(batch)).toBe(0);
    expect(await usage.summary(ws, t0, dayAfter)).toEqual([
      { kind: "exec", tool: "code_execution", count: 2, quantity: 150 },
      { kind: "session_created", tool: null, count: 1, quantity: 0 },
    ]);
  });

  it("counts only the new events of a partly re-flushed batch, and a duplicate within one batch once", async () => {
    const ws = uniqueId();
    const known = event(ws);
    expect(await usage.insert([known])).toBe(1);
    const fresh = event(ws);
    expect(await usage.insert([known, fresh, fresh])).toBe(1);
    expect(await usage.summary(ws, t0, dayAfter)).toEqual([
      { kind: "exec", tool: "code_execution", count: 2, quantity: 200 },
    ]);
  });

  it("aggregates per kind and tool", async () => {
    const ws = uniqueId();
    await usage.insert([
      event(ws, { kind: "exec", tool: "bash_code_execution", quantity: 1_000 }),
      event(ws, { kind: "exec", tool: "bash_code_execution", quantity: 2_500 }),
      event(ws, { kind: "exec", tool: "code_execution", quantity: 40 }),
      event(ws, { kind: "file_in", tool: null, quantity: 6_000_000_000 }),
      event(ws, { kind: "file_out", tool: null, quantity: 7 }),
      event(ws, {
        kind: "denied",
        tool: "code_execution",
        quantity: 0,
        detail: { code: "policy.tool_not_allowed" },
      }),
      event(ws, { kind: "session_created", tool: null, quantity: 0 }),
      event(ws, { kind: "session_ended", tool: null, quantity: 0 }),
    ]);
    expect(await usage.summary(ws, t0, dayAfter)).toEqual([
      { kind: "denied", tool: "code_execution", count: 1, quantity: 0 },
      { kind: "exec", tool: "bash_code_execution", count: 2, quantity: 3_500 },
      { kind: "exec", tool: "code_execution", count: 1, quantity: 40 },
      { kind: "file_in", tool: null, count: 1, quantity: 6_000_000_000 },
      { kind: "file_out", tool: null, count: 1, quantity: 7 },
      { kind: "session_created", tool: null, count: 1, quantity: 0 },
      { kind: "session_ended", tool: null, count: 1, quantity: 0 },
    ]);
  });

  it("sums over the half-open window [from, to)", async () => {
    const ws = uniqueId();
    await usage.insert([
      event(ws, { occurredAt: at(9), quantity: 1 }),
      event(ws, { occurredAt: at(10), quantity: 10 }),
      event(ws, { occurredAt: at(19), quantity: 100 }),
      event(ws, { occurredAt: at(20), quantity: 1_000 }),
    ]);
    expect(await usage.summary(ws, at(10), at(20))).toEqual([
      { kind: "exec", tool: "code_execution", count: 2, quantity: 110 },
    ]);
    expect(await usage.summary(ws, at(30), at(40))).toEqual([]);
  });

  it("never includes another workspace's events in a summary", async () => {
    const a = uniqueId();
    const b = uniqueId();
    // Same session id and tool on purpose: only the workspace tells them apart.
    await usage.insert([
      event(a, { quantity: 1 }),
      event(b, { quantity: 1_000 }),
      event(b, { quantity: 1_000 }),
    ]);
    expect(await usage.summary(a, t0, dayAfter)).toEqual([
      { kind: "exec", tool: "code_execution", count: 1, quantity: 1 },
    ]);
    expect(await usage.summary(b, t0, dayAfter)).toEqual([
      { kind: "exec", tool: "code_execution", count: 2, quantity: 2_000 },
    ]);
  });

  it("stores detail as JSON, not as a JSON string", async () => {
    const ws = uniqueId();
    await usage.insert([event(ws, { detail: { image: "python:3.12", tags: ["a", "b"] } })]);
    const { rows } = await sql<{ image: string; kind: string }>`
      select detail ->> 'image' as image, jsonb_typeof(detail) as kind from usage_events where workspace_id = ${ws}
    `.execute(handle.db);
    expect(rows).toEqual([{ image: "python:3.12", kind: "object" }]);
  });

  it("inserts batches larger than one statement holds", async () => {
    const ws = uniqueId();
    const batch = Array.from({ length: 2_345 }, () => event(ws, { quantity: 2 }));
    expect(await usage.insert(batch)).toBe(2_345);
    expect(await usage.insert(batch)).toBe(0);
    expect(await usage.summary(ws, t0, dayAfter)).toEqual([
      { kind: "exec", tool: "code_execution", count: 2_345, quantity: 4_690 },
    ]);
  });

  it("inserts nothing from a batch with a malformed event", async () => {
    const ws = uniqueId();
    await expect(usage.insert([event(ws), event(ws, { eventId: "not-a-uuid" })])).rejects.toMatchObject({
      code: "request.malformed",
    });
    await expect(usage.insert([event(ws, { quantity: -1 })])).rejects.toMatchObject({
      code: "request.malformed",
    });
    await expect(usage.insert([event(ws, { kind: "mystery" as never })])).rejects.toMatchObject({
      code: "request.malformed",
    });
    expect(await usage.summary(ws, t0, dayAfter)).toEqual([]);
  });

  it("accepts an empty batch", async () => {
    expect(await usage.insert([])).toBe(0);
  });
});
