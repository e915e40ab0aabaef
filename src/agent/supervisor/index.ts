// The process supervisor: shards as process groups, their state files, adoption after an
// agent restart. The actor around it is src/actors/agent/supervisor-actor.ts; what is
// exported beyond the Supervisor is what its specs and the control port need.
export { Supervisor, type Recovery, type SupervisorOptions } from './supervisor.js';
export type { SupervisorTiming } from './shard-run.js';
export { groupAlive, signalGroup, spawnGroup, stopGroup } from './process-group.js';
export { parseProcStat, pidsInGroups, readFingerprint, type ProcessFingerprint } from './fingerprint.js';
export { judgeLeftover } from './adoption.js';
export { findOrphans } from './orphan-scan.js';
export { OutputLog } from './output-log.js';
export { canTransition, isTerminal } from './shard-state.js';
export { parseLeftover, type ShardRecord } from './state-file.js';
