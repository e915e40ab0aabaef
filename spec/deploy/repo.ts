import { fileURLToPath } from 'node:url';

/** A file of the repository by its path from the root; specs run from dist/spec/. */
export function repoFile(path: string): string {
  return fileURLToPath(new URL(`../../../${path}`, import.meta.url));
}
