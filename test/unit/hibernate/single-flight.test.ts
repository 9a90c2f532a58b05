import { describe, expect, it } from "vitest";
import { SingleFlight } from "../../../src/hibernate/single-flight.js";

describe("SingleFlight", () => {
  it("runs once for callers of one key that arrive while it runs, and again once it settled", async () => {
    const flight = new SingleFlight<number>();
    let runs = 0;
    let release!: () => void;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const work = async () => {
      runs++;
      await gate;
      return runs;
    };
    const waiting = [flight.run("s1", work), flight.run("s1", work), flight.run("s2", work)];
    expect(flight.inFlight).toBe(2);
    release();
    expect(await Promise.all(waiting)).toEqual([2, 2, 2]);
    expect(flight.inFlight).toBe(0);
    await flight.run("s1", work);
    expect(runs).toBe(3);
  });

  it("passes a failure to every waiting caller and frees the key", async () => {
    const flight = new SingleFlight<number>();
    const failing = () => Promise.reject(new Error("restore failed"));
    const both = [flight.run("s1", failing), flight.run("s1", failing)];
    for (const outcome of both) await expect(outcome).rejects.toThrow("restore failed");
    expect(await flight.run("s1", async () => 5)).toBe(5);
  });
});
