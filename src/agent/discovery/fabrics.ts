// Fabric labels are explicit and there is no way around it: OpenSM's default subnet
// prefix is fe80:: on every fabric, so nothing on the wire says which adapters can
// reach which. A wrong label gives a multi-node replica that starts, passes health
// checks and hangs on its first all-reduce, so these rules reject what can only be a
// mistake and attach only adapters that can carry traffic now.
import { isPortActive, type DiscoveredHca, type LinkLayer } from './infiniband.js';

/** From the agent config: fabric name → the adapters on it (`ib-a: [mlx5_0, mlx5_1]`). */
export type FabricConfig = Readonly<Record<string, readonly string[]>>;

/** A fabric this node can take part in, as reported to the control plane. */
export interface FabricAttachment {
  readonly name: string;
  /** Found adapters with at least one ACTIVE port: exactly what NCCL_IB_HCA may list. */
  readonly hcas: readonly string[];
  readonly linkLayer: Exclude<LinkLayer, 'Unknown'>;
  /** The slowest ACTIVE port among them: an all-reduce goes at the pace of its slowest rail. */
  readonly rateGbps: number | null;
}

/** Why a fabric config is rejected. `code` is the discriminant. */
export type FabricProblem =
  | { readonly code: 'fabric-name-invalid'; readonly fabric: string; readonly message: string }
  | { readonly code: 'fabric-without-hcas'; readonly fabric: string; readonly message: string }
  | { readonly code: 'hca-in-two-fabrics'; readonly hca: string; readonly fabrics: readonly [string, string]; readonly message: string }
  | { readonly code: 'fabric-mixes-link-layers'; readonly fabric: string; readonly message: string };

/** What is accepted but worth an operator's look. `code` is the discriminant. */
export type FabricWarning =
  | { readonly code: 'hca-not-found'; readonly fabric: string; readonly hca: string; readonly message: string }
  | { readonly code: 'hca-not-active'; readonly fabric: string; readonly hca: string; readonly message: string }
  | { readonly code: 'hca-listed-twice'; readonly fabric: string; readonly hca: string; readonly message: string }
  | { readonly code: 'fabric-not-attached'; readonly fabric: string; readonly message: string }
  | { readonly code: 'hcas-unlabelled'; readonly hcas: readonly string[]; readonly message: string };

export type FabricResult =
  | {
      readonly ok: true;
      readonly fabrics: FabricAttachment[];
      /** Adapter → the fabric the config puts it on (found adapters only, active or not). */
      readonly labels: Readonly<Record<string, string>>;
      readonly warnings: FabricWarning[];
    }
  | { readonly ok: false; readonly problems: FabricProblem[]; readonly warnings: FabricWarning[] };

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/**
 * Checks fabric labels against the adapters found and returns the attachments.
 *
 * Rejected (every problem is listed, not just the first):
 * - a fabric name that is empty or not a plain name;
 * - a fabric with no adapters — worse than no fabric: multi-node replicas would be
 *   placed here and NCCL would find no path;
 * - an adapter on two fabrics — one of the labels is wrong, and which one cannot be told;
 * - a fabric whose active adapters mix InfiniBand and Ethernet (RoCE): RDMA does not
 *   cross between them, so they cannot be one fabric.
 *
 * Warned, not rejected, and never attached: an adapter named in config that discovery
 * did not find, or found with no ACTIVE port. A typo and a dead card look the same
 * from here; refusing to start would take the node's single-node capacity down with
 * it, while leaving the adapter out keeps it out of NCCL_IB_HCA, which is what
 * matters. A fabric left with no usable adapter is not attached at all, so no
 * multi-node replica is placed on it.
 */
export function resolveFabrics(config: FabricConfig | undefined, hcas: readonly DiscoveredHca[]): FabricResult {
  const problems: FabricProblem[] = [];
  const warnings: FabricWarning[] = [];
  const byName = new Map(hcas.map((h) => [h.name, h]));
  const owner = new Map<string, string>();
  const entries = Object.entries(config ?? {});

  for (const [fabric, list] of entries) {
    if (!NAME.test(fabric)) {
      problems.push({ code: 'fabric-name-invalid', fabric, message: `fabric ${JSON.stringify(fabric)}: a fabric name is letters, digits, ".", "_" and "-", starting with a letter or digit` });
    }
    if (list.length === 0) {
      problems.push({ code: 'fabric-without-hcas', fabric, message: `fabric ${fabric} lists no HCAs: name its adapters (e.g. [mlx5_0, mlx5_1]) or remove it` });
    }
    const seen = new Set<string>();
    for (const hca of list) {
      if (seen.has(hca)) {
        warnings.push({ code: 'hca-listed-twice', fabric, hca, message: `fabric ${fabric} lists ${hca} twice: once is enough` });
        continue;
      }
      seen.add(hca);
      const prev = owner.get(hca);
      if (prev !== undefined) {
        problems.push({
          code: 'hca-in-two-fabrics',
          hca,
          fabrics: [prev, fabric],
          message: `HCA ${hca} is claimed by both ${prev} and ${fabric}: an adapter is cabled to one fabric; fix the label that is wrong`,
        });
        continue;
      }
      owner.set(hca, fabric);
    }
  }

  const fabrics: FabricAttachment[] = [];
  const labels: Record<string, string> = {};
  for (const [fabric, list] of entries) {
    const usable: DiscoveredHca[] = [];
    for (const hca of new Set(list)) {
      if (owner.get(hca) !== fabric) continue; // claimed twice: already a problem
      const found = byName.get(hca);
      if (!found) {
        const known = hcas.length > 0 ? `found: ${hcas.map((h) => h.name).join(', ')}` : 'none were found';
        warnings.push({ code: 'hca-not-found', fabric, hca, message: `fabric ${fabric} names ${hca}, which is not on this node (${known}): it is left out of the fabric; fix the name or the adapter` });
        continue;
      }
      labels[hca] = fabric;
      if (!found.ports.some(isPortActive)) {
        const states = found.ports.map((p) => `port ${p.port} ${p.state ?? 'unreadable'}${p.physState ? `/${p.physState}` : ''}`).join(', ') || 'no ports';
        warnings.push({
          code: 'hca-not-active',
          fabric,
          hca,
          message: `${hca} (fabric ${fabric}) has no ACTIVE port (${states}): it is left out until a port is up; check the cable, the switch and the subnet manager`,
        });
        continue;
      }
      usable.push(found);
    }
    const active = usable.flatMap((h) => h.ports.filter(isPortActive));
    const layers = new Set(active.map((p) => p.linkLayer).filter((l) => l !== 'Unknown'));
    if (layers.size > 1) {
      const describe = (layer: LinkLayer): string =>
        usable
          .filter((h) => h.ports.some((p) => isPortActive(p) && p.linkLayer === layer))
          .map((h) => h.name)
          .join(', ');
      problems.push({
        code: 'fabric-mixes-link-layers',
        fabric,
        message: `fabric ${fabric} mixes InfiniBand (${describe('InfiniBand')}) and Ethernet/RoCE (${describe('Ethernet')}) adapters: RDMA does not cross between them, so they cannot be one fabric; split it`,
      });
      continue;
    }
    if (usable.length === 0) {
      if (list.length > 0) {
        warnings.push({ code: 'fabric-not-attached', fabric, message: `fabric ${fabric} has no usable adapter on this node, so the node is not attached to it and gets no multi-node replica on it` });
      }
      continue;
    }
    const rates = active.map((p) => p.rateGbps).filter((r): r is number => r !== null);
    fabrics.push({
      name: fabric,
      hcas: usable.map((h) => h.name),
      linkLayer: layers.has('Ethernet') ? 'Ethernet' : 'InfiniBand',
      rateGbps: rates.length > 0 ? Math.min(...rates) : null,
    });
  }

  const unlabelled = hcas.filter((h) => !owner.has(h.name) && h.ports.some(isPortActive)).map((h) => h.name);
  if (unlabelled.length > 0) {
    const message =
      entries.length === 0
        ? `no fabric is labelled, so this node is a single-node island despite its active adapters (${unlabelled.join(', ')}): if they are on a fabric, name it in the agent config (fabrics: {NAME: [HCA, …]})`
        : `${unlabelled.join(', ')} ${unlabelled.length === 1 ? 'has an ACTIVE port but is' : 'have ACTIVE ports but are'} in no fabric, so no replica uses ${unlabelled.length === 1 ? 'it' : 'them'}: label ${unlabelled.length === 1 ? 'it' : 'them'} if on a fabric`;
    warnings.push({ code: 'hcas-unlabelled', hcas: unlabelled, message });
  }

  if (problems.length > 0) return { ok: false, problems, warnings };
  return { ok: true, fabrics, labels, warnings };
}
