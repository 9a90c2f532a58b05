/**
 * The leases waiting at one pool's start gate (src/pool/start-gate.ts), and whose turn is
 * next. Turns go round the workspaces, and within a workspace in the order its leases came:
 * a tenant's burst of a hundred queued leases takes one turn in every round, so another
 * tenant's single lease that comes after it is served at the next turn, not after the
 * hundred (strict arrival order had it wait, often past its deadline, behind another tenant).
 */

/** One lease (or node start) waiting for its turn. */
export interface Turn {
  /** Its place within its workspace, kept across its waits. */
  ticket: number;
  /** Its workspace: turns go round these. */
  key: string;
  pollMs: number;
  deadlineAt: number;
  /** Whether its timer is the poll (the next turn's), not only its deadline. */
  polling: boolean;
  timer?: NodeJS.Timeout;
  wake: () => void;
}

export class TurnQueue {
  /** Each workspace's waiting turns by ticket; the map's order is the rotation (first: next). */
  private byKey = new Map<string, Turn[]>();

  get empty(): boolean {
    return this.byKey.size === 0;
  }

  /** The turn that comes next. */
  next(): Turn | undefined {
    for (const turns of this.byKey.values()) return turns[0];
    return undefined;
  }

  /**
   * Adds a waiting turn. `ahead`: its workspace's turn comes next (a waiter that was given
   * its turn and found nothing keeps it); else a workspace new to the queue goes last.
   */
  add(turn: Turn, ahead: boolean): void {
    const turns = this.byKey.get(turn.key) ?? [];
    let at = turns.length;
    while (at > 0 && (turns[at - 1] as Turn).ticket > turn.ticket) at--;
    turns.splice(at, 0, turn);
    if (ahead) {
      this.byKey.delete(turn.key);
      this.byKey = new Map([[turn.key, turns], ...this.byKey]);
    } else if (!this.byKey.has(turn.key)) {
      this.byKey.set(turn.key, turns);
    }
  }

  /** Takes the next turn; its workspace goes to the back of the rotation. */
  take(): Turn | undefined {
    for (const [key, turns] of this.byKey) {
      const turn = turns.shift();
      this.byKey.delete(key);
      if (turns.length > 0) this.byKey.set(key, turns);
      return turn;
    }
    return undefined;
  }

  /** Removes a turn (its deadline came); answers whether it was the next. */
  remove(turn: Turn): boolean {
    const wasNext = this.next() === turn;
    const turns = this.byKey.get(turn.key);
    const at = turns?.indexOf(turn) ?? -1;
    if (turns && at >= 0) turns.splice(at, 1);
    if (turns?.length === 0) this.byKey.delete(turn.key);
    return wasNext;
  }
}
