import { LlmgwError } from '../../errors.js';
import type { Logger } from '../../log.js';
import type { Outcome } from '../../messages/agent.js';
import type { TenancyMsg } from '../../messages/tenancy.js';
import { defineActor } from '../../runtime/actor.js';
import { SqliteStore } from '../../tenancy/store/sqlite-store.js';
import type { TenancyStore } from '../../tenancy/store/tenancy-store.js';
import { UsageWriter } from '../../tenancy/store/usage-writer.js';
import { usageWriterMetrics } from '../../tenancy/store/usage-writer-metrics.js';

export interface StoreActorArgs {
  /** The SQLite file. */
  path: string;
  /** The usage journal's folder: `journalDirOf(path)`. */
  journalDir: string;
  /** Raw usage rows older than this are deleted; the hourly rollups stay. */
  retentionDays: number;
}

interface State {
  store: TenancyStore;
  writer: UsageWriter;
  timers: NodeJS.Timeout[];
}

/** How often the journal is read: a record reaches the store within about this (plus one commit). */
const POLL_MS = 100;
/** How often the journal's newest segment is forced to disk: what a power loss can take. */
const SYNC_MS = 200;
const PRUNE_MS = 3_600_000;
/** Records per poll: a backlog is worked off in slices of ~60 ms so asks are not held behind it. */
const POLL_RECORDS = 5_000;
/** Raw rows deleted per transaction while pruning. */
const PRUNE_BATCH = 1_000;
const DAY_MS = 86_400_000;

/**
 * The tenancy store's actor, on the `tenancy` thread: the only code that touches the
 * database. It answers the admin port's mutations and queries (a caller's mistake as a
 * refused Outcome, never a crash), and it is the usage writer, tailing the journal the
 * data port appends to. Its timers run outside the mailbox (the protocol has no tick
 * message and needs none): every handler is synchronous, so a timer's drain never
 * interleaves with one.
 */
export const storeActor = defineActor<TenancyMsg>()({
  kind: 'tenancy-store',
  module: import.meta.url,
  mailbox: { capacity: 1_024, overflow: 'reject' },
  init: (args: StoreActorArgs, ctx): State => {
    // The only store of its file in this process: a lock this process holds was left by a thread that died.
    const store = SqliteStore.open(args.path, { reclaimOwnLock: true });
    try {
      const writer = new UsageWriter(store, args.journalDir, ctx.log);
      usageWriterMetrics(ctx.metrics).writer = writer;
      // The snapshot's spend must count every journaled record, so the backlog goes in before any ask is answered.
      const drained = writer.drain();
      prune(store, args.retentionDays, ctx.log);
      ctx.log.info('tenancy store open', { path: args.path, drained });
      const guarded = (what: string, fn: () => void) => () => {
        try {
          fn();
        } catch (err) {
          ctx.log.error(`tenancy store: ${what} failed`, { error: err });
        }
      };
      const timers = [
        setInterval(guarded('reading the usage journal', () => writer.drain(POLL_RECORDS)), POLL_MS),
        setInterval(guarded('syncing the usage journal', () => writer.syncJournal()), SYNC_MS),
        setInterval(guarded('pruning usage', () => prune(store, args.retentionDays, ctx.log)), PRUNE_MS),
      ];
      return { store, writer, timers };
    } catch (err) {
      store.close();
      throw err;
    }
  },
  handlers: {
    snapshot: (s) => s.store.snapshot(),
    'create-org': (s, m) => outcome(() => s.store.createOrg(m.name, m.actor)),
    'create-team': (s, m) => outcome(() => s.store.createTeam(m.name, m.org, m.actor)),
    'create-project': (s, m) => outcome(() => s.store.createProject(m.name, m.team, m.actor)),
    'create-key': (s, m) => outcome(() => s.store.createKey(m.project, m.name, m.expiresAt, m.actor)),
    'revoke-key': (s, m) => outcome(() => s.store.revokeKey(m.key, m.actor)),
    'rotate-key': (s, m) => outcome(() => s.store.rotateKey(m.key, m.graceMs, m.actor)),
    'set-limits': (s, m) => outcome(() => s.store.setLimits(m.scope, m.ref, m.limits, m.clear, m.actor)),
    list: (s, m) => outcome(() => s.store.list(m.kind, m.parent)),
    show: (s, m) => outcome(() => s.store.show(m.kind, m.ref)),
    limits: (s, m) => outcome(() => s.store.limits(m.scope, m.ref)),
    usage: (s, m) => {
      s.writer.drain();
      return outcome(() => s.store.usage(m.query));
    },
    audit: (s, m) => s.store.audit(m.limit, m.since),
    flush: (s) => ({ records: s.writer.drain() }),
  },
  stop: (s) => {
    s.writer.drain();
    s.writer.writeLastUse();
    s.writer.syncJournal();
  },
  onStop: (s) => {
    for (const t of s.timers) clearInterval(t);
    s.writer.close();
    s.store.close();
  },
  describe: (s) => {
    const pos = s.store.journalPosition();
    return pos ? `journal at segment ${pos.segment} byte ${pos.offset}` : 'journal not read yet';
  },
});

/** Deletes raw usage past retention in small transactions, so the writer is never held long. */
function prune(store: TenancyStore, retentionDays: number, log: Logger): void {
  const before = Date.now() - retentionDays * DAY_MS;
  let deleted = 0;
  let n: number;
  do {
    n = store.pruneUsage(before, PRUNE_BATCH);
    deleted += n;
  } while (n === PRUNE_BATCH);
  if (deleted > 0) log.info('usage past retention deleted', { rows: deleted, retentionDays });
}

/** A refusal (or a failed transaction, rolled back) as an answer: the store itself is fine. */
function outcome<T>(fn: () => T): Outcome<T> {
  try {
    return { ok: true, value: fn() };
  } catch (err) {
    return { ok: false, error: LlmgwError.from(err).serialize() };
  }
}
