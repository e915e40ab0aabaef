// Discovery runs for `llmgw agent inventory` (flags) and for the agent (agent.yaml keys);
// a failure names the knob of the caller, so the advice is one the user can follow.

/** How the caller sets discovery's inputs, as phrases a message can use. */
export interface DiscoveryKnobs {
  /** Turning GPU discovery off: `pass --no-gpu`. */
  readonly noGpu: string;
  /** Pointing at nvidia-smi: `--nvidia-smi with its path`. */
  readonly nvidiaSmi: string;
  /** The setting that names the sysfs InfiniBand directory: `--ib-root`. */
  readonly ibRoot: string;
}

export const FLAG_KNOBS: DiscoveryKnobs = { noGpu: 'pass --no-gpu', nvidiaSmi: '--nvidia-smi with its path', ibRoot: '--ib-root' };

/** The knobs of an agent config file. */
export function configKnobs(file: string): DiscoveryKnobs {
  return { noGpu: `set no_gpu: true in ${file}`, nvidiaSmi: `nvidia_smi in ${file} with its path`, ibRoot: `ib_root in ${file}` };
}
