import type { UnitsConfig } from '../config/types.js';
import type { BudgetHold } from '../tenancy/budgets.js';
import type { KeyView } from '../tenancy/directory.js';
import type { TokenHold } from '../tenancy/rate-limiter.js';

/** A request's key and what it holds on the key's chain until it is billed (`tenancy-gate.ts`). */
export interface Tenant {
  readonly view: KeyView;
  /** limit: how the model it was admitted for is priced; null: free (the budget fallback). */
  units: UnitsConfig | null;
  /** limit: the tokens reserved per minute, corrected when billed. */
  rate: TokenHold | null;
  /** limit: the units reserved on its budgets, settled when billed. */
  budget: BudgetHold | null;
}
