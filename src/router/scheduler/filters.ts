import type { Filter } from './types.js';

/** Filters every request passes through, in the order their reasons are worth reading. */
export const FILTERS: readonly Filter[] = [
  { name: 'draining', reject: (e) => (e.draining ? 'draining: removed from the endpoint list' : null) },
  { name: 'ready', reject: (e) => (e.ready ? null : e.reason ?? 'not ready') },
  { name: 'tried', reject: (e, req) => (req.tried.includes(e) ? 'already failed this request' : null) },
  { name: 'health', reject: (e, req) => e.health.blocked(req.now) },
];
