import { readFileSync, rmdirSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { LlmgwError } from '../../errors.js';

// node-sqlite3-wasm locks a database by creating the folder `<file>.lock` and removes it
// on close; a process killed while holding it (in exclusive mode: any time the store is
// open) leaves it behind, and every later open fails with "database is locked". So the
// store writes who holds the lock beside it, and an open finding a lock whose holder is
// gone takes it over, while a live holder is refused by name.

export function lockDirOf(path: string): string {
  return `${path}.lock`;
}

export function ownerFileOf(path: string): string {
  return `${path}.owner`;
}

interface Owner {
  pid: number;
  /** The kernel's boot id: a pid from before a reboot names nobody now. */
  boot: string;
}

/**
 * Removes a lock left by a process that no longer runs (or, with `ownIsStale`, by this
 * one); throws LLMGW_STORE_FAILED when a live one holds it.
 */
export function takeOverStaleLock(path: string, ownIsStale: boolean): void {
  const lock = lockDirOf(path);
  if (!exists(lock)) return;
  const owner = readOwner(path);
  if (owner === null) {
    throw new LlmgwError(
      'LLMGW_STORE_FAILED',
      `the tenancy store ${path} is locked (${lock} exists) by a program that did not say who it is: if no llmgw or other program has it open, remove ${lock}`,
      { path, lock },
    );
  }
  if (owner.boot === bootId() && alive(owner.pid) && !(ownIsStale && owner.pid === process.pid)) {
    throw new LlmgwError('LLMGW_STORE_FAILED', `the tenancy store ${path} is in use by process ${owner.pid}${owner.pid === process.pid ? ' (this one)' : ''}`, { path, pid: owner.pid });
  }
  rmdirSync(lock);
}

/** Records this process as the lock's holder; call once the database holds its lock. */
export function writeOwner(path: string): void {
  const owner: Owner = { pid: process.pid, boot: bootId() };
  writeFileSync(ownerFileOf(path), JSON.stringify(owner) + '\n');
}

export function removeOwner(path: string): void {
  rmSync(ownerFileOf(path), { force: true });
}

function readOwner(path: string): Owner | null {
  try {
    const o = JSON.parse(readFileSync(ownerFileOf(path), 'utf8')) as Partial<Owner>;
    return typeof o.pid === 'number' && typeof o.boot === 'string' ? { pid: o.pid, boot: o.boot } : null;
  } catch {
    return null;
  }
}

function bootId(): string {
  try {
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim();
  } catch {
    return 'unknown';
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function exists(p: string): boolean {
  try {
    statSync(p);
    return true;
  } catch {
    return false;
  }
}
