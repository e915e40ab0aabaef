import { readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';

// The control plane's own metrics, on the `control` thread's registry: how far behind
// the agents' heartbeats it runs, how many agents it hears, and what its thread costs.
// The fleet bench reads them back through the actor system, as /metrics shows them.

export type ControlMetrics = ReturnType<typeof createControlMetrics>;

// A restarted actor finds its metrics already registered on the thread; reuse them.
const metricsByRegistry = new WeakMap<Registry, ControlMetrics>();

export function controlMetrics(registry: Registry): ControlMetrics {
  let m = metricsByRegistry.get(registry);
  if (!m) metricsByRegistry.set(registry, (m = createControlMetrics(registry)));
  return m;
}

function createControlMetrics(registry: Registry) {
  const registers = [registry];
  let elu = performance.eventLoopUtilization();
  let cpuMs = threadCpuMs();
  return {
    heartbeatLag: new Histogram({
      name: 'llmgw_control_heartbeat_lag_seconds',
      help: "From the agent's timestamp on a heartbeat to the control plane handling it; includes clock skew between the hosts (a negative lag counts as 0). Growth over time means a backlog",
      // Loopback and a healthy fleet sit in the first buckets; the tail shows a backlog forming.
      buckets: [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
      registers,
    }),
    agentsConnected: new Gauge({ name: 'llmgw_control_agents_connected', help: 'Agents whose stream is open and registered', registers }),
    threadBusy: new Counter({
      name: 'llmgw_control_thread_busy_seconds_total',
      help: "Wall time the control thread's event loop spent busy (event-loop utilization); its rate is the thread's load, counting time it waited for a core mid-task",
      registers,
      collect() {
        const now = performance.eventLoopUtilization();
        this.inc((now.active - elu.active) / 1000);
        elu = now;
      },
    }),
    // Only where the OS tells a thread's CPU time apart (Linux); elsewhere it stays at 0.
    threadCpu: new Counter({
      name: 'llmgw_control_thread_cpu_seconds_total',
      help: 'CPU time of the control thread itself (user + system, from /proc/thread-self/stat; Linux only): its rate is the share of one core it uses',
      registers,
      collect() {
        const now = threadCpuMs();
        if (now !== null && cpuMs !== null) this.inc((now - cpuMs) / 1000);
        cpuMs = now;
      },
    }),
  };
}

/** Clock ticks per second of /proc's utime and stime: USER_HZ, 100 on every Linux ABI Node runs on. */
const USER_HZ = 100;

/**
 * CPU time of the calling thread, ms, or null where /proc/thread-self is not there. A
 * synchronous read runs on the calling thread, so the kernel answers for this thread
 * and not the process.
 */
export function threadCpuMs(): number | null {
  let stat: string;
  try {
    stat = readFileSync('/proc/thread-self/stat', 'utf8');
  } catch {
    return null;
  }
  // Fields after the command name, which is in parentheses and may hold spaces: utime and stime are the 14th and 15th fields.
  const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const utime = Number(rest[11]);
  const stime = Number(rest[12]);
  return Number.isFinite(utime) && Number.isFinite(stime) ? ((utime + stime) * 1000) / USER_HZ : null;
}
