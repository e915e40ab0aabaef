// The control plane as the server runs it, without the rest of the server: an actor
// system with a `control` thread, the real endpoint registry on main (it answers the
// control actor's publications), and the control actor serving the agent stream in
// plaintext on a loopback port of its choosing.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { endpointRegistry } from '../../src/actors/endpoints/endpoint-registry.js';
import { controlActor, type ControlActorArgs } from '../../src/actors/control/control-actor.js';
import type { PlacedModel } from '../../src/messages/catalog.js';
import { CONTROL, type ControlMsg } from '../../src/messages/control.js';
import { ENDPOINT_REGISTRY } from '../../src/messages/endpoints.js';
import { EndpointTable } from '../../src/router/endpoint-table.js';
import { ActorSystem, type ActorRef } from '../../src/runtime/index.js';

export interface RunningControlPlane {
  readonly system: ActorSystem;
  readonly control: ActorRef<ControlMsg>;
  /** The agent stream's URL, `http://127.0.0.1:PORT`. */
  readonly url: string;
  close(): Promise<void>;
}

export async function startControlPlane(opts: { models?: PlacedModel[]; intervalMs?: number; askTimeoutMs?: number } = {}): Promise<RunningControlPlane> {
  const system = await ActorSystem.start({ threads: [{ name: 'control', onDeath: 'fail' }], askTimeoutMs: opts.askTimeoutMs ?? 10_000 });
  const table = new EndpointTable({
    connectTimeoutMs: 1_000,
    health: { cooldownFailures: 3, cooldownMs: 1_000, breakerFailures: 5, openMs: 1_000, maxOpenMs: 10_000 },
  });
  const args: ControlActorArgs = {
    models: opts.models ?? [],
    listen: '127.0.0.1:0',
    tls: null,
    intervalMs: opts.intervalMs ?? 1_000,
    unreachableAfterMs: 30_000,
    lostAfterMs: 300_000,
    drainGraceMs: 30_000,
    settleMs: 0,
    portRange: [30_000, 30_999],
    // A roster nobody else reads: this control plane has no previous life to recover.
    rosterPath: join(mkdtempSync(join(tmpdir(), 'llmgw-control-')), 'nodes.json'),
  };
  try {
    await system.spawn(endpointRegistry, { address: ENDPOINT_REGISTRY, args: { table } });
    const control = await system.spawn(controlActor, { address: CONTROL, thread: 'control', args, dependsOn: [ENDPOINT_REGISTRY] });
    const url = await control.ask({ type: 'address' });
    return {
      system,
      control,
      url,
      close: async () => {
        await system.shutdown();
        await table.close();
      },
    };
  } catch (err) {
    await system.shutdown();
    await table.close();
    throw err;
  }
}
