// `llmgw ctl --admin URL actors` puts the connection options before the subcommand, as
// kubectl-style tools do; clipanion only reads options after the full command path.
// Move them behind the subcommand's words (`keys create NAME`) so both orders work.

const CTL_OPTIONS = new Set(['--admin', '--token']);

export function hoistCtlOptions(argv: readonly string[]): string[] {
  if (argv[0] !== 'ctl') return [...argv];
  const hoisted: string[] = [];
  const rest: string[] = [];
  let i = 1;
  while (i < argv.length && argv[i]!.startsWith('--')) {
    const arg = argv[i]!;
    const name = arg.split('=', 1)[0]!;
    if (!CTL_OPTIONS.has(name)) break;
    hoisted.push(arg);
    if (!arg.includes('=') && i + 1 < argv.length) hoisted.push(argv[++i]!);
    i++;
  }
  rest.push(...argv.slice(i));
  if (rest.length === 0) return [...argv];
  // The command path is every word before the first option; clipanion takes options after positionals too.
  const words = rest.findIndex((a) => a.startsWith('-'));
  const at = words < 0 ? rest.length : words;
  return ['ctl', ...rest.slice(0, at), ...hoisted, ...rest.slice(at)];
}
