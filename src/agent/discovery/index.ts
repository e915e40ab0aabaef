// Hardware discovery for `llmgw run --role=agent` and `llmgw agent inventory`.
export { discoverInventory, assembleInventory } from './inventory.js';
export type { AssembleInput, DiscoverOptions, Gpu, Hca, Inventory, SmiOutputs } from './inventory.js';
export {
  COMPUTE_APPS_ARGS,
  DEFAULT_NVIDIA_SMI,
  DEFAULT_SMI_TIMEOUT_MS,
  GPU_QUERY_ARGS,
  GPU_QUERY_FIELDS,
  TOPOLOGY_ARGS,
  isUnavailable,
  nvlinkDomains,
  parseComputeApps,
  parseGpuQuery,
  parseTopology,
  runNvidiaSmi,
} from './nvidia-smi.js';
export type { ComputeApp, NvlinkDomain, SmiGpu, Topology } from './nvidia-smi.js';
export { checkOverrides, deriveGpuClass, modelToken, overrideFor } from './gpu-class.js';
export type { ClassOverrides } from './gpu-class.js';
export { UNACCOUNTED_MEMORY_TOLERANCE_MIB, gpuProblems } from './health.js';
export type { HealthInput } from './health.js';
export { SYSFS_INFINIBAND, checkIbRoot, discoverHcas, isPortActive, parseEnumerated, parseLid, parseLinkLayer, parseNumaNode, parseRate } from './infiniband.js';
export type { DiscoveredHca, IbDiscovery, IbPort, LinkLayer } from './infiniband.js';
export { resolveFabrics } from './fabrics.js';
export type { FabricAttachment, FabricConfig, FabricProblem, FabricResult, FabricWarning } from './fabrics.js';
export { FLAG_KNOBS, configKnobs } from './knobs.js';
export type { DiscoveryKnobs } from './knobs.js';
