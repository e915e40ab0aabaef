import { readFileSync } from 'node:fs';

// Read from package.json at start so `llmgw version` can never disagree with the package.
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };

export const VERSION: string = pkg.version;
