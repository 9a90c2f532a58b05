/** Commander argument parsers that refuse anything but the numbers they promise. */
import { InvalidArgumentError } from "commander";

export function integerOption(min: number, max = Number.MAX_SAFE_INTEGER) {
  return (value: string): number => {
    if (!/^\d+$/.test(value)) throw new InvalidArgumentError(`expected a whole number, got '${value}'`);
    const parsed = Number(value);
    if (parsed < min || parsed > max)
      throw new InvalidArgumentError(
        max === Number.MAX_SAFE_INTEGER
          ? `expected ${min} or more, got ${value}`
          : `expected a number from ${min} to ${max}`,
      );
    return parsed;
  };
}
