/**
 * Value parsers for commander options (`.argParser`): a flag and its environment variable are
 * checked the same way, and the option's type is the parsed one (`@commander-js/extra-typings`).
 */
import { InvalidArgumentError } from '@commander-js/extra-typings';
import { parseGoDuration } from '../domain/duration.js';

/** A TCP port; 0 asks for any free one. */
export function portNumber(text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n) || n < 0 || n > 65_535)
    throw new InvalidArgumentError('not a port (0-65535)');
  return n;
}

/** A whole number ≥ 0. */
export function count(text: string): number {
  const n = Number(text);
  if (text.trim() === '' || !Number.isInteger(n) || n < 0) throw new InvalidArgumentError('not a whole number ≥ 0');
  return n;
}

/** A Go duration (`30s`, `10m`, `24h`; a bare `0`), in milliseconds. */
export function goDurationMs(text: string): number {
  if (text === '0') return 0; // as Go's time.ParseDuration: a bare 0 needs no unit
  try {
    return parseGoDuration(text);
  } catch {
    throw new InvalidArgumentError('not a Go duration such as 30s, 10m or 24h');
  }
}
