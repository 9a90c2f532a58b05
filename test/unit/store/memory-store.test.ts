import { describe, expect, it } from "vitest";
import { MemoryCoordinationStore } from "../../../src/store/coordination/memory-store.js";
import { describeCoordinationStore } from "../../shared/coordination-store-suite.js";
import { describeCpuCharging } from "../../shared/cpu-charge-store-suite.js";

describeCoordinationStore("memory", async () => {
  const store = new MemoryCoordinationStore();
  return { store, close: () => store.close() };
});

describeCpuCharging("memory", async () => {
  const store = new MemoryCoordinationStore();
  return { store, close: () => store.close() };
});

describe("MemoryCoordinationStore", () => {
  it("stops delivering to subscribers once closed", async () => {
    const store = new MemoryCoordinationStore();
    const got: string[] = [];
    await store.subscribe("c", (m) => got.push(m));
    await store.close();
    await store.publish("c", "late");
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(got).toEqual([]);
  });
});
