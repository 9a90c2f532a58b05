/**
 * The gateway's side of reuse (src/pool/sandbox-reuse.ts) on the memory store: a sandbox is
 * parked for the workspace it served, with the sandbox's fresh inner session and CPU
 * baseline, only within its bounds, never for another owner, and never when the scrub fails;
 * parked ones unused for too long are taken back. The sandbox's own scrub runs against a real
 * container in test/integration/serve/sandbox-reuse.test.ts.
 */
import pino from "pino";
import { describe, expect, it } from "vitest";
import {
  MAX_AGE_MS,
  MAX_USES,
  PARKED_IDLE_MS,
  reuseBoundsOf,
  SandboxReuse,
} from "../../../src/pool/sandbox-reuse.js";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";
import type { SandboxRecord } from "../../../src/store/coordination/records.js";

const T0 = 1_800_000_000_000;

function setup(
  options: {
    recyclable?: boolean;
    scrub?: "ok" | "fails";
    /** What the runtime's reading answers (undefined: no reading). */
    usage?: () => Promise<{ cpuSeconds: number } | undefined>;
    /** Whether the kernel started the memory peak anew (undefined: the runtime cannot). */
    peakReset?: boolean;
  } = {},
) {
  const store = new MemoryCoordinationStore();
  let now = T0;
  const recycled: string[] = [];
  const peakResets: string[] = [];
  const reuse = new SandboxReuse({
    store,
    runtime: {
      recyclable: options.recyclable ?? true,
      usage: options.usage ?? (async () => ({ cpuSeconds: 12.5 })),
      ...(options.peakReset === undefined
        ? {}
        : {
            resetMemoryPeak: async (runtimeId: string) => {
              peakResets.push(runtimeId);
              return options.peakReset!;
            },
          }),
    },
    client: {
      recycleSandbox: async (endpoint) => {
        recycled.push(endpoint);
        if (options.scrub === "fails") throw new Error("the sandbox could not be scrubbed");
        return "next-inner";
      },
    },
    log: pino({ level: "silent" }),
    now: () => now,
  });
  const record = async (extra: Partial<SandboxRecord> = {}): Promise<SandboxRecord> => {
    const r: SandboxRecord = {
      sandboxId: `sb-${recycled.length}-${Math.random()}`,
      pool: "p",
      endpoint: "unix:/sock",
      runtimeId: "0:c",
      innerSessionId: "first-inner",
      createdAt: now,
      cpuBaseMs: 400,
      ...extra,
    };
    await store.addMember("p", r.sandboxId, 10, now + 60_000, now);
    return r;
  };
  return { store, reuse, recycled, peakResets, record, advance: (ms: number) => (now += ms) };
}

describe("SandboxReuse", () => {
  it("parks a scrubbed sandbox for its workspace with its next inner session and a new CPU baseline", async () => {
    const { store, reuse, record } = setup();
    const r = await record();
    expect(await reuse.park(r, "team-a")).toBe(true);
    const [parked] = await store.listParked("p");
    expect(parked).toMatchObject({
      sandboxId: r.sandboxId,
      owner: "team-a",
      uses: 1,
      innerSessionId: "next-inner",
      cpuBaseMs: 12_500,
      parkedAt: T0,
    });
    expect(await store.leaseIdle("p", { workspace: "team-b", until: T0 + 1, now: T0 })).toBeUndefined();
    expect(await store.leaseIdle("p", { workspace: "team-a", until: T0 + 1, now: T0 })).toEqual(parked);
  });

  it("starts the next session's memory peak anew where the kernel can, else marks it carried", async () => {
    const resettable = setup({ peakReset: true });
    const carriedBefore = await resettable.record({ memoryPeakCarried: true });
    expect(await resettable.reuse.park(carriedBefore, "team-a")).toBe(true);
    expect(resettable.peakResets).toEqual(["0:c"]);
    const [parked] = await resettable.store.listParked("p");
    expect(parked?.memoryPeakCarried).toBeUndefined();

    for (const runtime of [setup({ peakReset: false }), setup()]) {
      expect(await runtime.reuse.park(await runtime.record(), "team-a")).toBe(true);
      const [carried] = await runtime.store.listParked("p");
      expect(carried).toMatchObject({ memoryPeakCarried: true, cpuBaseMs: 12_500 });
    }
  });

  it("does not reuse a sandbox whose CPU baseline could not be read: its next session would be charged every earlier one's", async () => {
    const unread = setup({ usage: async () => undefined, peakReset: true });
    expect(await unread.reuse.park(await unread.record(), "team-a")).toBe(false);
    expect(await unread.store.listParked("p")).toEqual([]);
    const failing = setup({
      usage: async () => {
        throw new Error("the engine did not answer");
      },
    });
    expect(await failing.reuse.park(await failing.record(), "team-a")).toBe(false);
  });

  it("destroys instead (false) past its uses or its age, on a runtime that cannot scrub, or when the scrub fails", async () => {
    const bounded = setup();
    expect(await bounded.reuse.park(await bounded.record({ uses: MAX_USES - 1 }), "a")).toBe(false);
    expect(await bounded.reuse.park(await bounded.record({ createdAt: T0 - MAX_AGE_MS }), "a")).toBe(false);
    expect(bounded.recycled).toEqual([]);
    const plain = setup({ recyclable: false });
    expect(await plain.reuse.park(await plain.record(), "a")).toBe(false);
    const failing = setup({ scrub: "fails" });
    expect(await failing.reuse.park(await failing.record(), "a")).toBe(false);
    expect(await failing.store.listParked("p")).toEqual([]);
  });

  it("bounds each sandbox by its own share of the uses and age, the same on every replica, spread so a pool does not retire at once", async () => {
    const ids = Array.from({ length: 200 }, (_, i) => `sandbox-${i}`);
    const bounds = ids.map(reuseBoundsOf);
    for (const b of bounds) {
      expect(b.uses).toBeGreaterThanOrEqual(MAX_USES / 2);
      expect(b.uses).toBeLessThanOrEqual(MAX_USES);
      expect(b.ageMs).toBeGreaterThanOrEqual(MAX_AGE_MS / 2);
      expect(b.ageMs).toBeLessThanOrEqual(MAX_AGE_MS);
    }
    expect(reuseBoundsOf("sandbox-7")).toEqual(bounds[7]);
    // Spread over the range: no tenth of it holds more than a fifth of the sandboxes.
    const tenths = new Map<number, number>();
    for (const b of bounds) {
      const tenth = Math.floor(((b.uses - MAX_USES / 2) / (MAX_USES / 2)) * 10);
      tenths.set(tenth, (tenths.get(tenth) ?? 0) + 1);
    }
    expect(tenths.size).toBeGreaterThanOrEqual(9);
    expect(Math.max(...tenths.values())).toBeLessThanOrEqual(40);

    const { reuse, record } = setup();
    const worn = await record();
    const limit = reuseBoundsOf(worn.sandboxId);
    expect(await reuse.park({ ...worn, uses: limit.uses - 2 }, "a")).toBe(true);
    expect(await reuse.park({ ...worn, uses: limit.uses - 1 }, "a")).toBe(false);
    expect(await reuse.park({ ...worn, uses: 0, createdAt: T0 - limit.ageMs + 1 }, "a")).toBe(true);
    expect(await reuse.park({ ...worn, uses: 0, createdAt: T0 - limit.ageMs }, "a")).toBe(false);
  });

  it("never parks a sandbox for a workspace other than the one it served", async () => {
    const { store, reuse, record, recycled } = setup();
    expect(await reuse.park(await record({ owner: "team-a", uses: 3 }), "team-b")).toBe(false);
    expect(recycled).toEqual([]);
    expect(await store.listParked("p")).toEqual([]);
  });

  it("takes back what was parked and unused for too long", async () => {
    const { store, reuse, record, advance } = setup();
    const old = await record();
    await reuse.park(old, "a");
    advance(PARKED_IDLE_MS - 1);
    const recent = await record();
    await reuse.park(recent, "b");
    advance(1);
    expect((await reuse.takeExpired("p")).map((r) => r.sandboxId)).toEqual([old.sandboxId]);
    expect((await store.listParked("p")).map((r) => r.sandboxId)).toEqual([recent.sandboxId]);
  });
});
