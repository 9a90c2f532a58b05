/**
 * A small pool of things kept ready (a node's warm sandboxes): the in-memory idle set of the
 * warm-pool engine (src/pool/warm-pool-engine.ts, which tops a host's pools up too), with
 * what a node's leases need of it, its sizes changeable at run time (the node's share of a
 * pool changes as nodes come and go).
 *
 * - `min` are kept idle: the engine starts a shortfall (on a resize, after a destroy, on each
 *   eviction run) within the pool's back-off, start rate and warm-up concurrency, as it does
 *   a host's; a start that fails is reported and stops the warm-up until the next of those.
 * - At most `max` exist at once: idle, leased, being started or checked.
 * - `acquire` takes an idle one that still answers (`validate`; one that does not is
 *   destroyed), else starts one while below `max`, else waits for a place; each within
 *   `acquireTimeoutMs`, after which it fails. A failed start for an acquire is tried again
 *   while time is left, after a moment.
 * - Things lent are never given back: `destroy` ends them and frees their place.
 * - Idle ones above `min`, idle for longer than `idleEvictionMs`, are destroyed (checked
 *   every `evictionRunMs`, a few at a time).
 * - One lent may be set aside (`setAside`) for one borrower's later use (a node's sandbox
 *   parked for its workspace's next session): it holds a place but is lent to no one else
 *   (`takeAside`). Warm-up does not count it toward `min`, and when a place is wanted at
 *   `max` (an acquire, a shortfall below min) the one set aside longest is destroyed for it.
 * - One made elsewhere (a node's memory restore, which starts its own container) is lent
 *   through `lendMade`: it takes a place as a start does, so it counts against `max` too.
 */
import type { IdleSet, WarmPool } from "../../pool/warm-pool-engine.js";
import { WarmPoolEngine } from "../../pool/warm-pool-engine.js";

export interface WarmSetFactory<T> {
  create(): Promise<T>;
  destroy(item: T): Promise<void>;
  /** Whether an idle one still works (checked before it is lent). */
  validate(item: T): Promise<boolean>;
}

export interface WarmSetOptions {
  min: number;
  max: number;
  acquireTimeoutMs: number;
  idleEvictionMs: number;
  evictionRunMs: number;
  /** A start failed (an acquire's start that is tried again is reported too). */
  onCreateError?: (error: unknown) => void;
  now?: () => number;
  /**
   * The engine that tops the set up, and the pool it tops up there (a node's: its back-off,
   * start rate and warm-up concurrency). Without it the set has an engine of its own, which
   * starts every shortfall at once.
   */
  warmUp?: { engine: WarmPoolEngine; pool: WarmPool };
}

const QUIET = { error: () => undefined, debug: () => undefined };

/** An acquire whose start failed tries again after this at the latest (sooner on a change). */
const RETRY_PAUSE_MS = 10;
/** Idle ones looked at per eviction run: eviction is gradual, as warm-up is. */
const EVICTIONS_PER_RUN = 3;

interface Idle<T> {
  item: T;
  since: number;
}

export class WarmSetTimeoutError extends Error {
  constructor(timeoutMs: number) {
    super(`nothing could be acquired within ${timeoutMs} ms`);
    this.name = "WarmSetTimeoutError";
  }
}

/** No place could be had at once for one made elsewhere (`lendMade`). */
export class WarmSetFullError extends Error {
  constructor(max: number) {
    super(`all ${max} places are taken`);
    this.name = "WarmSetFullError";
  }
}

export class WarmSet<T> {
  private minimum: number;
  private maximum: number;
  private idle: Idle<T>[] = [];
  private readonly lent = new Set<T>();
  /** Set aside for one borrower, oldest first: they hold a place, lent to no one else. */
  private aside: T[] = [];
  /** Being started or checked: they hold a place. */
  private pending = 0;
  private readonly creations = new Set<Promise<unknown>>();
  /** Destroys under way: closing waits for them. */
  private readonly destroying = new Set<Promise<unknown>>();
  /** Acquires waiting for a place or an idle one. */
  private readonly waiting = new Set<() => void>();
  private readonly evictor: NodeJS.Timeout;
  private readonly now: () => number;
  private closed = false;
  private readonly engine: WarmPoolEngine;
  private readonly warmPool: WarmPool;
  /** This set as the engine's idle set. */
  private readonly idleSet: IdleSet<T>;

  constructor(
    private readonly factory: WarmSetFactory<T>,
    private readonly options: WarmSetOptions,
  ) {
    this.maximum = Math.max(1, options.max);
    this.minimum = Math.min(options.min, this.maximum);
    this.now = options.now ?? Date.now;
    this.engine = options.warmUp?.engine ?? new WarmPoolEngine({ log: QUIET });
    this.warmPool = options.warmUp?.pool ?? {
      name: "warm-set",
      warmupConcurrency: Number.POSITIVE_INFINITY,
      coldStartTimeoutMs: options.acquireTimeoutMs,
    };
    this.idleSet = this.asIdleSet();
    this.evictor = setInterval(() => {
      this.evict();
      // A tick: what a failed or backed-off warm-up left short is tried again.
      this.ensureMinimum();
    }, options.evictionRunMs);
    this.evictor.unref();
    this.ensureMinimum();
  }

  get min(): number {
    return this.minimum;
  }

  get max(): number {
    return this.maximum;
  }

  /** Idle, ready to lend. */
  get available(): number {
    return this.idle.length;
  }

  get borrowed(): number {
    return this.lent.size;
  }

  /** Set aside for one borrower's later use. */
  get setAsideCount(): number {
    return this.aside.length;
  }

  /**
   * Counts one more wanted idle item while `waiting` runs (a lease waiting for its
   * workspace's sandbox to be scrubbed): warm-up starts one for it, so a workspace whose
   * sessions outpace their scrubs gains sandboxes. What is left idle after goes as any
   * idle item above min does.
   */
  whileWanting<R>(waiting: Promise<R>): Promise<R> {
    if (this.closed) return waiting;
    return this.engine.whileWanting(this.warmPool, this.idleSet, () => waiting);
  }

  /** Everything holding a place: idle, lent, set aside, being started or checked. */
  get size(): number {
    return this.idle.length + this.lent.size + this.aside.length + this.pending;
  }

  asideItems(): T[] {
    return [...this.aside];
  }

  /**
   * Sets a lent one aside, as `as` (its new state; it keeps its place): false when it is not
   * lent (destroyed meanwhile) or the set is closed.
   */
  setAside(item: T, as: T = item): boolean {
    if (this.closed || !this.lent.delete(item)) return false;
    this.aside.push(as);
    return true;
  }

  /** Lends again the newest one set aside that `matches`, if any. */
  takeAside(matches: (item: T) => boolean): T | undefined {
    for (let index = this.aside.length - 1; index >= 0; index--) {
      const item = this.aside[index]!;
      if (!matches(item)) continue;
      this.aside.splice(index, 1);
      this.lent.add(item);
      return item;
    }
    return undefined;
  }

  idleItems(): T[] {
    return this.idle.map((entry) => entry.item);
  }

  isBorrowed(item: T): boolean {
    return this.lent.has(item);
  }

  isAside(item: T): boolean {
    return this.aside.includes(item);
  }

  /** New sizes (max at least 1, min at most max); a shortfall below min is started at once. */
  resize(min: number, max: number): void {
    this.maximum = Math.max(1, max);
    this.minimum = Math.min(min, this.maximum);
    this.ensureMinimum();
    this.wake();
  }

  async acquire(): Promise<T> {
    const deadline = this.now() + this.options.acquireTimeoutMs;
    for (;;) {
      if (this.closed) throw new Error("the pool is closed");
      const idle = this.idle.shift();
      if (idle) {
        this.pending += 1;
        const works = await this.factory.validate(idle.item).catch(() => false);
        this.pending -= 1;
        if (works && !this.closed) {
          this.lent.add(idle.item);
          return idle.item;
        }
        this.destroyQuietly(idle.item);
        continue;
      }
      // At max, the one set aside longest gives its place up (destroying it frees the place now).
      if (this.size >= this.maximum && this.aside.length > 0) {
        this.destroyQuietly(this.aside[0]!);
        continue;
      }
      if (this.size < this.maximum) {
        this.pending += 1;
        try {
          const item = await this.track(this.factory.create());
          this.lent.add(item);
          return item;
        } catch (error) {
          this.options.onCreateError?.(error);
          if (this.now() >= deadline) throw new WarmSetTimeoutError(this.options.acquireTimeoutMs);
        } finally {
          this.pending -= 1;
          this.wake();
        }
        // Tried again after a moment (or a change), not in a loop as fast as the start fails:
        // a start refused at once (a back-off past the deadline) would hold the event loop.
        await this.waitUntil(Math.min(deadline, this.now() + RETRY_PAUSE_MS)).catch(() => undefined);
        continue;
      }
      await this.waitUntil(deadline);
    }
  }

  /**
   * Lends one that `make` creates instead of the factory (a restore, which must start its own
   * container): it holds a place from the start, like any start, and is destroyed like any
   * lent one. At max an idle one gives its place up, else the one set aside longest (an idle
   * one is nobody's yet; one set aside is its borrower's next session). With no place to be
   * had it fails at once (WarmSetFullError) rather than wait: the caller may find one
   * elsewhere sooner. A failed `make` frees its place.
   */
  async lendMade(make: () => Promise<T>): Promise<T> {
    if (this.closed) throw new Error("the pool is closed");
    // Nothing is given up when that would not make a place (a shrunk max, everything lent).
    if (this.size - this.idle.length - this.aside.length >= this.maximum) {
      throw new WarmSetFullError(this.maximum);
    }
    while (this.size >= this.maximum) {
      // Its place is free as soon as destroy begins (it leaves every list at once).
      this.destroyQuietly(this.idle[0]?.item ?? this.aside[0]!);
    }
    this.pending += 1;
    let made = false;
    try {
      const item = await this.track(make());
      this.lent.add(item);
      made = true;
      return item;
    } finally {
      this.pending -= 1;
      // A failed one's place goes back to warm-up (an idle one may have given it up for it).
      if (!made) this.ensureMinimum();
      this.wake();
    }
  }

  /** Ends one that was lent (or any), freeing its place. */
  async destroy(item: T): Promise<void> {
    this.lent.delete(item);
    this.idle = this.idle.filter((entry) => entry.item !== item);
    this.aside = this.aside.filter((entry) => entry !== item);
    try {
      await this.tracked(this.factory.destroy(item));
    } finally {
      this.ensureMinimum();
      this.wake();
    }
  }

  /** Destroys every idle one (a draining node keeps none). */
  async destroyIdle(): Promise<void> {
    const idle = this.idle;
    this.idle = [];
    await Promise.all(
      idle.map((entry) => this.tracked(this.factory.destroy(entry.item)).catch(() => undefined)),
    );
    this.ensureMinimum();
    this.wake();
  }

  /** Destroys every one set aside (a draining node parks none). */
  async destroyAside(): Promise<void> {
    await Promise.all(this.asideItems().map((item) => this.destroy(item).catch(() => undefined)));
  }

  /**
   * Stops starting and evicting, fails waiting acquires, destroys the idle ones and those set
   * aside (and those still starting, once started).
   */
  async close(): Promise<void> {
    this.closed = true;
    clearInterval(this.evictor);
    this.wake();
    // Its warm-up ends once its starts have: what they started is destroyed (closed).
    await this.engine.running(this.warmPool.name)?.catch(() => undefined);
    await Promise.allSettled([...this.creations]);
    await this.destroyAside();
    await this.destroyIdle();
    // Those that finished starting as the pool closed are being destroyed.
    await Promise.allSettled([...this.destroying]);
  }

  /**
   * Has the engine start what min lacks, in the background. Lent ones count toward min (min
   * is the least the set holds); those set aside are no one's but their borrower's: they
   * count toward max, not min, and the longest set aside makes room for a shortfall of min at
   * max. Borrowers waiting elsewhere (`whileWanting`) take free places only.
   */
  private ensureMinimum(): void {
    if (this.closed) return;
    this.engine.warm(this.warmPool, this.idleSet).catch(() => undefined);
  }

  /** This set as the engine sees it: where a node keeps its idle ones. */
  private asIdleSet(): IdleSet<T> {
    return {
      look: () => ({ idle: this.idle.length, starting: this.pending }),
      target: () => {
        const promised = this.minimum - this.lent.size;
        return { wanted: Math.max(promised, this.engine.wantingOf(this.warmPool.name)), promised };
      },
      start: async () => {
        if (this.closed || this.size >= this.maximum) return undefined;
        // Its place is held until it is kept idle (`keep`), or its start failed.
        this.pending += 1;
        try {
          return await this.track(this.factory.create());
        } catch (error) {
          this.pending -= 1;
          this.options.onCreateError?.(error);
          this.wake();
          throw error;
        }
      },
      keep: (item) => {
        this.pending -= 1;
        if (this.closed) {
          this.destroyQuietly(item);
          return false;
        }
        this.idle.push({ item, since: this.now() });
        this.wake();
        return true;
      },
      evictParked: async () => {
        const longest = this.aside[0];
        if (longest === undefined) return false;
        // Its place is free as soon as destroy begins (it leaves every list at once).
        this.destroyQuietly(longest);
        return true;
      },
    };
  }

  private evict(): void {
    const now = this.now();
    let looked = 0;
    for (const entry of [...this.idle]) {
      if (looked++ >= EVICTIONS_PER_RUN || this.idle.length <= this.minimum) return;
      if (now - entry.since > this.options.idleEvictionMs)
        void this.destroy(entry.item).catch(() => undefined);
    }
  }

  private destroyQuietly(item: T): void {
    void this.destroy(item).catch(() => undefined);
  }

  private tracked<V>(destroy: Promise<V>): Promise<V> {
    this.destroying.add(destroy);
    void destroy.catch(() => undefined).finally(() => this.destroying.delete(destroy));
    return destroy;
  }

  private track<V>(creation: Promise<V>): Promise<V> {
    this.creations.add(creation);
    void creation.catch(() => undefined).finally(() => this.creations.delete(creation));
    return creation;
  }

  /** Waits for a change (a place freed, one turned idle, a resize) or the deadline. */
  private waitUntil(deadline: number): Promise<void> {
    const left = deadline - this.now();
    if (left <= 0) return Promise.reject(new WarmSetTimeoutError(this.options.acquireTimeoutMs));
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiting.delete(woken);
        reject(new WarmSetTimeoutError(this.options.acquireTimeoutMs));
      }, left);
      const woken = () => {
        clearTimeout(timer);
        this.waiting.delete(woken);
        resolve();
      };
      this.waiting.add(woken);
    });
  }

  private wake(): void {
    for (const woken of [...this.waiting]) woken();
  }
}
