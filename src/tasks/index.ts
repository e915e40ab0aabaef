// Tasks for the CPU pool: pure functions of plain data, one named export each
// (`cpu.run('hashPrefix', …)`). Nothing here may hold state between calls.

export { hashPrefix } from './prefix-hash.js';

/** Returns its input: measures what a hop through the pool costs (`npm run bench`). */
export function echo<T>(data: T): T {
  return data;
}
