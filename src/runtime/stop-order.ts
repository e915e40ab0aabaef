/** An actor as the shutdown planner sees it. */
export interface StopNode {
  name: string;
  parent: string | null;
  dependsOn: readonly string[];
}

/**
 * Orders an orderly shutdown into waves. An actor stops only after every actor that
 * depends on it (its children and those that declared `dependsOn` it) has drained and
 * stopped, so a flush on stop always finds its destination alive. Actors in one wave
 * stop in parallel. A dependency cycle cannot be ordered: its members form a final wave
 * together, and are reported so the cycle can be fixed.
 */
export function stopWaves(nodes: readonly StopNode[]): { waves: string[][]; cycle: string[] } {
  const names = new Set(nodes.map((n) => n.name));
  // dependents[y] = how many live actors still need y
  const dependents = new Map<string, number>();
  const needs = new Map<string, string[]>();
  for (const n of nodes) dependents.set(n.name, 0);
  for (const n of nodes) {
    const targets = [...new Set([...(n.parent !== null ? [n.parent] : []), ...n.dependsOn])].filter((t) => names.has(t) && t !== n.name);
    needs.set(n.name, targets);
    for (const t of targets) dependents.set(t, (dependents.get(t) ?? 0) + 1);
  }
  const waves: string[][] = [];
  let ready = nodes.filter((n) => dependents.get(n.name) === 0).map((n) => n.name);
  const done = new Set<string>();
  while (ready.length > 0) {
    waves.push(ready.sort());
    const next: string[] = [];
    for (const name of ready) {
      done.add(name);
      for (const t of needs.get(name) ?? []) {
        const left = (dependents.get(t) ?? 1) - 1;
        dependents.set(t, left);
        if (left === 0) next.push(t);
      }
    }
    ready = next;
  }
  const cycle = nodes.map((n) => n.name).filter((n) => !done.has(n)).sort();
  if (cycle.length > 0) waves.push(cycle);
  return { waves, cycle };
}
