import { afterEach, describe, expect, it } from "vitest";
import {
  WarmSet,
  type WarmSetFactory,
  WarmSetFullError,
  WarmSetTimeoutError,
} from "../../../../src/roles/node/warm-set.js";

interface Thing {
  id: number;
  works: boolean;
}

/** A factory of numbered things whose starts can be held back or made to fail. */
function factory() {
  let next = 0;
  const destroyed: number[] = [];
  const held: (() => void)[] = [];
  const state = { failing: false, holding: false, slowDestroy: false };
  const made: WarmSetFactory<Thing> & { destroyed: number[]; state: typeof state; release(): void } = {
    destroyed,
    state,
    async create() {
      if (state.holding) await new Promise<void>((resolve) => held.push(resolve));
      if (state.failing) throw new Error("cannot start");
      next += 1;
      return { id: next, works: true };
    },
    async destroy(thing) {
      if (state.slowDestroy) await new Promise((resolve) => setTimeout(resolve, 20));
      destroyed.push(thing.id);
    },
    async validate(thing) {
      return thing.works;
    },
    release() {
      for (const resolve of held.splice(0)) resolve();
    },
  };
  return made;
}

const settle = () => new Promise((resolve) => setTimeout(resolve, 5));
const sets: WarmSet<Thing>[] = [];
function warmSet(
  made: ReturnType<typeof factory>,
  options: Partial<ConstructorParameters<typeof WarmSet>[1]> = {},
) {
  const set = new WarmSet<Thing>(made, {
    min: 0,
    max: 2,
    acquireTimeoutMs: 200,
    idleEvictionMs: 60_000,
    evictionRunMs: 60_000,
    ...options,
  });
  sets.push(set);
  return set;
}
afterEach(async () => {
  for (const set of sets.splice(0)) await set.close();
});

describe("WarmSet", () => {
  it("keeps min idle and tops up after a destroy", async () => {
    const made = factory();
    const set = warmSet(made, { min: 2, max: 3 });
    await settle();
    expect(set.available).toBe(2);
    const thing = await set.acquire();
    expect(set.borrowed).toBe(1);
    await set.destroy(thing);
    await settle();
    expect(made.destroyed).toEqual([thing.id]);
    expect(set.available).toBe(2);
    expect(set.size).toBe(2);
  });

  it("destroys an idle one that no longer works instead of lending it", async () => {
    const made = factory();
    const set = warmSet(made, { min: 1, max: 2 });
    await settle();
    const [broken] = set.idleItems();
    broken!.works = false;
    const thing = await set.acquire();
    expect(thing.id).not.toBe(broken!.id);
    expect(made.destroyed).toContain(broken!.id);
  });

  it("starts one when none is idle, and waits for a place at max, failing at the deadline", async () => {
    const made = factory();
    const set = warmSet(made, { min: 0, max: 1, acquireTimeoutMs: 50 });
    const first = await set.acquire();
    const started = Date.now();
    await expect(set.acquire()).rejects.toBeInstanceOf(WarmSetTimeoutError);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    // A place freed while an acquire waits goes to it.
    const waiting = set.acquire();
    await set.destroy(first);
    expect((await waiting).id).not.toBe(first.id);
  });

  it("never holds more than max, counting starts under way", async () => {
    const made = factory();
    made.state.holding = true;
    const set = warmSet(made, { min: 0, max: 2, acquireTimeoutMs: 100 });
    const one = set.acquire();
    const two = set.acquire();
    const three = set.acquire();
    await settle();
    expect(set.size).toBe(2);
    made.release();
    await Promise.all([one, two]);
    await expect(three).rejects.toBeInstanceOf(WarmSetTimeoutError);
  });

  it("resizes: a higher min is started at once, and max is at least 1", async () => {
    const made = factory();
    const set = warmSet(made, { min: 0, max: 0 });
    expect(set.max).toBe(1);
    set.resize(3, 4);
    await settle();
    expect(set.available).toBe(3);
    set.resize(5, 2);
    expect(set.min).toBe(2);
  });

  it("reports failed warm starts without retrying them, and retries an acquire's start until its deadline", async () => {
    const made = factory();
    made.state.failing = true;
    const errors: unknown[] = [];
    const set = warmSet(made, {
      min: 1,
      max: 2,
      acquireTimeoutMs: 30,
      onCreateError: (error) => errors.push(error),
    });
    await settle();
    expect(errors).toHaveLength(1);
    expect(set.size).toBe(0);
    await expect(set.acquire()).rejects.toBeInstanceOf(WarmSetTimeoutError);
    expect(errors.length).toBeGreaterThan(1);
  });

  it("evicts idle ones above min that waited too long", async () => {
    let now = 0;
    const made = factory();
    const set = warmSet(made, { min: 1, max: 3, idleEvictionMs: 1_000, evictionRunMs: 10, now: () => now });
    set.resize(3, 3);
    await settle();
    set.resize(1, 3);
    now = 2_000;
    await new Promise((resolve) => setTimeout(resolve, 40));
    expect(set.available).toBe(1);
    expect(made.destroyed).toHaveLength(2);
  });

  it("destroys every idle one on destroyIdle and on close, and fails acquires after close", async () => {
    const made = factory();
    const set = warmSet(made, { min: 2, max: 3 });
    await settle();
    const lent = await set.acquire();
    await settle();
    // Draining: min 0 first, or the shortfall would be started again.
    set.resize(0, 3);
    await set.destroyIdle();
    expect(set.available).toBe(0);
    await set.close();
    expect(set.isBorrowed(lent)).toBe(true);
    await expect(set.acquire()).rejects.toThrow("closed");
  });
});

describe("WarmSet.close", () => {
  it("waits for starts under way and destroys what they started", async () => {
    const made = factory();
    made.state.holding = true;
    made.state.slowDestroy = true;
    const set = new WarmSet<Thing>(made, {
      min: 2,
      max: 2,
      acquireTimeoutMs: 100,
      idleEvictionMs: 60_000,
      evictionRunMs: 60_000,
    });
    await settle();
    const closing = set.close();
    made.release();
    await closing;
    expect(made.destroyed.sort()).toEqual([1, 2]);
  });
});

describe("WarmSet, things set aside (a node's parked sandboxes)", () => {
  it("keeps one set aside in its place, lent again only to what matches it, newest first", async () => {
    const made = factory();
    const set = warmSet(made, { min: 0, max: 3 });
    const one = await set.acquire();
    const two = await set.acquire();
    expect(set.setAside(one, { ...one })).toBe(true);
    expect(set.setAside(two)).toBe(true);
    // Not lent any more: setting it aside again is refused.
    expect(set.setAside(two)).toBe(false);
    expect(set.size).toBe(2);
    expect(set.setAsideCount).toBe(2);
    expect(set.borrowed).toBe(0);
    // An acquire of anyone else gets a fresh one, never one set aside.
    const fresh = await set.acquire();
    expect([one.id, two.id]).not.toContain(fresh.id);
    expect(set.takeAside((thing) => thing.id === 99)).toBeUndefined();
    const again = set.takeAside(() => true);
    expect(again).toBe(two);
    expect(set.isBorrowed(two)).toBe(true);
    expect(set.takeAside(() => true)?.id).toBe(one.id);
    expect(set.setAsideCount).toBe(0);
  });

  it("gives the place of the one set aside longest to an acquire at max", async () => {
    const made = factory();
    const set = warmSet(made, { min: 0, max: 2 });
    const one = await set.acquire();
    const two = await set.acquire();
    set.setAside(one);
    set.setAside(two);
    const third = await set.acquire();
    expect(made.destroyed).toEqual([one.id]);
    expect(set.asideItems()).toEqual([two]);
    expect(set.size).toBe(2);
    expect(third.id).toBe(3);
  });

  it("does not count those set aside toward min: warm-up makes room at max", async () => {
    const made = factory();
    const set = warmSet(made, { min: 0, max: 2 });
    const one = await set.acquire();
    const two = await set.acquire();
    set.setAside(one);
    set.setAside(two);
    set.resize(1, 2);
    await settle();
    expect(made.destroyed).toEqual([one.id]);
    expect(set.available).toBe(1);
    expect(set.asideItems()).toEqual([two]);
    expect(set.size).toBe(2);
  });

  it("destroys those set aside on destroy, destroyAside and close", async () => {
    const made = factory();
    const set = warmSet(made, { min: 0, max: 3 });
    const things = [await set.acquire(), await set.acquire(), await set.acquire()];
    for (const thing of things) set.setAside(thing);
    await set.destroy(things[0]!);
    expect(set.setAsideCount).toBe(2);
    await set.destroyAside();
    expect(set.setAsideCount).toBe(0);
    expect(set.size).toBe(0);
    const last = await set.acquire();
    set.setAside(last);
    await set.close();
    expect(made.destroyed.sort()).toEqual([1, 2, 3, 4]);
  });
});

describe("WarmSet.lendMade (a node's memory restores)", () => {
  const restored = (id: number) => async () => ({ id, works: true });

  it("counts one made elsewhere against max until it is destroyed", async () => {
    const made = factory();
    const set = warmSet(made, { min: 0, max: 2, acquireTimeoutMs: 30 });
    const restore = await set.lendMade(restored(100));
    expect(set.isBorrowed(restore)).toBe(true);
    expect(set.size).toBe(1);
    await set.acquire();
    // Both places are taken: an acquire waits and fails, a restore is refused at once.
    await expect(set.acquire()).rejects.toBeInstanceOf(WarmSetTimeoutError);
    let asked = false;
    await expect(
      set.lendMade(async () => {
        asked = true;
        return { id: 101, works: true };
      }),
    ).rejects.toBeInstanceOf(WarmSetFullError);
    expect(asked).toBe(false);
    await set.destroy(restore);
    expect(made.destroyed).toContain(100);
    expect(set.size).toBe(1);
    expect((await set.lendMade(restored(102))).id).toBe(102);
    expect(set.size).toBe(2);
  });

  it("at max, an idle one gives its place up first, then the one set aside longest", async () => {
    const made = factory();
    const set = warmSet(made, { min: 2, max: 2 });
    await settle();
    const lent = await set.acquire();
    // At max: one lent, one idle.
    expect(set.size).toBe(2);
    const idle = set.idleItems()[0]!;
    await set.lendMade(restored(100));
    expect(made.destroyed).toEqual([idle.id]);
    await settle();
    // Warm-up does not take the place back while the restore holds it.
    expect(set.size).toBe(2);
    expect(set.available).toBe(0);

    set.setAside(lent);
    await set.lendMade(restored(101));
    expect(made.destroyed).toEqual([idle.id, lent.id]);
    expect(set.setAsideCount).toBe(0);
    expect(set.borrowed).toBe(2);
    expect(set.size).toBe(2);
  });

  it("frees the place of one whose making failed, and warm-up takes it back", async () => {
    const made = factory();
    const set = warmSet(made, { min: 1, max: 1 });
    await settle();
    await expect(
      set.lendMade(async () => {
        throw new Error("the restore failed");
      }),
    ).rejects.toThrow("the restore failed");
    expect(set.borrowed).toBe(0);
    await settle();
    expect(set.available).toBe(1);
    expect(set.size).toBe(1);
  });
});

describe("WarmSet.whileWanting (a lease waiting for its workspace's scrub)", () => {
  it("starts one more for each borrower waiting, beyond those idle or starting", async () => {
    const made = factory();
    const set = warmSet(made, { min: 0, max: 3 });
    let finish: () => void = () => {};
    const waiting = set.whileWanting(new Promise<void>((resolve) => (finish = resolve)));
    await settle();
    expect(set.available).toBe(1);
    // Each waiter wants one of its own: a second one starts one more.
    const second = set.whileWanting(new Promise<void>((resolve) => setTimeout(resolve, 30)));
    await settle();
    expect(set.size).toBe(2);
    finish();
    await waiting;
    await second;
    // Left idle above min, it goes as any idle one does (eviction); nothing more starts.
    await set.destroy((await set.acquire()) as Thing);
    await settle();
    expect(set.size).toBe(1);
  });

  it("takes only free places: never one set aside for another borrower", async () => {
    const made = factory();
    const set = warmSet(made, { min: 0, max: 2 });
    const one = await set.acquire();
    const two = await set.acquire();
    set.setAside(one);
    await set.whileWanting(settle());
    expect(made.destroyed).toEqual([]);
    expect(set.asideItems()).toEqual([one]);
    expect(set.isBorrowed(two)).toBe(true);
    expect(set.size).toBe(2);
  });
});
