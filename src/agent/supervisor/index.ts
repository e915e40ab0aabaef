// The process supervisor: shards as process groups, their state files, adoption after an
// agent restart. The actor around it is src/actors/agent/supervisor-actor.ts.
export { Supervisor, type Recovery, type SupervisorOptions } from './supervisor.js';
export type { SupervisorTiming } from './shard-run.js';
export { groupAlive, signalGroup, spawnGroup, stopGroup } from './process-group.js';
export { bootId, fingerprintMismatch, parseProcStat, pidsInGroups, readFingerprint, type ProcessFingerprint } from './fingerprint.js';
export { judgeLeftover, type Verdict } from './adoption.js';
export { findOrphans, SHARD_ENV, STATE_DIR_ENV, type Orphan } from './orphan-scan.js';
export { OutputLog } from './output-log.js';
export { waitForListener } from './rendezvous.js';
export { probeServedModel } from './readiness.js';
export { canTransition, isTerminal } from './shard-state.js';
export { SHARD_ID_PATTERN, STATE_VERSION, StateDir, assertShardId, parseLeftover, type Leftover, type ShardRecord } from './state-file.js';
