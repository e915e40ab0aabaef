// The GPU class decides which cards are interchangeable: a tensor-parallel group never
// mixes classes, and a capacity profile names the class it runs on (`h100-80g`). It
// must therefore come out the same for the same card whatever the driver calls it
// ("NVIDIA H100 80GB HBM3", "H100-SXM5-80GB") and whatever it reserves.
import { LlmgwError } from '../../errors.js';

/**
 * `<model>-<GiB>g`, from the name and the memory size the driver reports.
 *
 * Model: the first word of the lowercased name that contains a digit, after dropping
 * "nvidia", "tesla", "geforce", "rtx" and "quadro" (h100, a100, l40s, 4090, a6000),
 * with a following "ti" or "super" kept (4080super), since those are different cards.
 * Memory-size and form-factor words (80gb, sxm4, pcie, hbm3) are never the model.
 *
 * Size: the reported MiB divided by 1024, rounded UP to a whole GiB. The driver reports
 * the physical memory less what firmware keeps for itself (ECC, row remapping, GSP), so
 * the total is always a little under the card's size and never over it; the smallest
 * whole GiB that holds it is the size. That gives 80 for an H100 (81559 MiB), 141 for
 * an H200 (143771), 80 and 40 for the A100s (81920, 40960), 24 for a 4090 (24564),
 * and 45 for an L40S (46068 MiB = 44.99 GiB; sold as "48GB", decimal and before ECC).
 * Plain rounding would give the H200 140; the rule only has to be consistent, because
 * the number, not the box, decides whether a model fits.
 *
 * Null when the name has no model word or the size is unknown; such a card cannot be
 * placed until the agent config gives its class.
 */
export function deriveGpuClass(name: string | null, memoryTotalMiB: number | null): string | null {
  const model = modelToken(name);
  if (model === null || memoryTotalMiB === null || memoryTotalMiB <= 0) return null;
  return `${model}-${Math.ceil(memoryTotalMiB / 1024)}g`;
}

const NOISE = new Set(['nvidia', 'tesla', 'geforce', 'rtx', 'quadro']);
const NOT_A_MODEL = /^(\d+gb|sxm\d*|pcie|hbm\d*e?|nvl)$/;
const VARIANT = new Set(['ti', 'super']);

export function modelToken(name: string | null): string | null {
  if (!name) return null;
  const words = name.toLowerCase().split(/[^a-z0-9]+/).filter((w) => w !== '' && !NOISE.has(w));
  const at = words.findIndex((w) => /\d/.test(w) && !NOT_A_MODEL.test(w));
  if (at < 0) return null;
  const next = words[at + 1];
  return next !== undefined && VARIANT.has(next) ? `${words[at]}${next}` : words[at]!;
}

/**
 * Class overrides from the agent config, keyed by GPU index ("3"), UUID ("GPU-…") or
 * name ("NVIDIA L40S", case-insensitive). For a card the UUID wins over the index,
 * which wins over the name: the more specific key is the more deliberate one.
 */
export type ClassOverrides = Readonly<Record<string, string>>;

const CLASS = /^[a-z0-9][a-z0-9._-]*$/;

interface Identified {
  readonly index: number;
  readonly uuid: string | null;
  readonly name: string | null;
}

/** The override for one GPU, if any. */
export function overrideFor(gpu: Identified, overrides: ClassOverrides | undefined): string | null {
  if (!overrides) return null;
  if (gpu.uuid && overrides[gpu.uuid] !== undefined) return overrides[gpu.uuid]!;
  if (overrides[String(gpu.index)] !== undefined) return overrides[String(gpu.index)]!;
  if (gpu.name) {
    const name = gpu.name.toLowerCase();
    for (const [key, value] of Object.entries(overrides)) if (key.toLowerCase() === name) return value;
  }
  return null;
}

/**
 * Checks the overrides against the GPUs found. A class that is not a class name is a
 * config error (it would never match a profile, silently); a key that matches no GPU is
 * a warning (the card may be out for repair), returned as sentences.
 */
export function checkOverrides(overrides: ClassOverrides | undefined, gpus: readonly Identified[]): string[] {
  if (!overrides) return [];
  const bad = Object.entries(overrides).filter(([, v]) => !CLASS.test(v));
  if (bad.length > 0) {
    throw new LlmgwError(
      'LLMGW_CONFIG_INVALID',
      bad.map(([k, v]) => `class override for ${JSON.stringify(k)}: ${JSON.stringify(v)} is not a GPU class (lowercase letters, digits, ".", "_", "-", e.g. h100-80g)`).join('\n'),
    );
  }
  const warnings: string[] = [];
  for (const key of Object.keys(overrides)) {
    const hit = gpus.some((g) => g.uuid === key || String(g.index) === key || (g.name !== null && g.name.toLowerCase() === key.toLowerCase()));
    if (!hit) warnings.push(`the class override for ${JSON.stringify(key)} matches no GPU on this node (keys are a GPU index, UUID or name): remove it or fix the key`);
  }
  return warnings;
}
