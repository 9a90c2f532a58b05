/** A clock tests move by hand: `now()` in milliseconds, `advance(ms)` to let time pass. */
export function clock(start = 1_000_000) {
  let time = start;
  return {
    now: () => time,
    advance: (ms: number) => {
      time += ms;
    },
  };
}
