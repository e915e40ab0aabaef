// The configuration layer: llmgw.yaml, validated by a JSON Schema, with LLMGW_*
// environment overrides, as one frozen, fully-defaulted Config.

export { loadConfig, parseConfig, checkConfig, type LoadConfigOptions, type ConfigCheck } from './load.js';
export { configSchema, configSchemaJson } from './schema.js';
export { DEFAULT_CONFIG_YAML, DEFAULT_CONFIG_SOURCE } from './default.js';
export { envSettings, NON_CONFIG_ENV, type EnvSetting } from './env.js';
export { formatProblem } from './problems.js';
export type {
  AdmissionConfig,
  AgentTlsConfig,
  BandConfig,
  Config,
  ConfigOverrides,
  ConfigProblem,
  ControlConfig,
  EndpointConfig,
  EngineKind,
  LogLevel,
  ModelConfig,
  ProfileConfig,
  RouterConfig,
  RoutingProfileConfig,
  RuntimeConfig,
  ScalingConfig,
  ScorerName,
  SimulateConfig,
  SimulateNodeConfig,
  TenancyConfig,
  UnitsConfig,
} from './types.js';
