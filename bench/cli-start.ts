import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/**
 * `bioalchemy --help` and friends against a bare `node -e 0`, the floor of any Node CLI: the
 * compiled CLI as installed (bin/bioalchemy.js -> dist/, its shebang's flags included), and for
 * comparison the same from source through tsx (BIOALCHEMY_FROM_SOURCE=1, what tests and `npm run
 * dev` run). Runs are interleaved (node, CLI, node, CLI, ...) and each figure is the median of its
 * runs; the goal is --help within 8x of the bare start.
 */
const BIN = fileURLToPath(new URL('../bin/bioalchemy.js', import.meta.url));
const RUNS = Number(process.env.BIOALCHEMY_BENCH_CLI_RUNS ?? 21);
const GOAL = 8;

function ms(command: string, args: string[], env: NodeJS.ProcessEnv = {}): number {
  const started = performance.now();
  const r = spawnSync(command, args, { stdio: 'ignore', env: { ...process.env, ...env } });
  const took = performance.now() - started;
  // A usage mistake exits 2, as it should; anything else means the measurement is of a failure.
  if (r.status !== 0 && r.status !== 2) throw new Error(`${command} ${args.join(' ')} exited ${r.status}`);
  return took;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function run(): Promise<string[]> {
  const built = spawnSync(process.execPath, [fileURLToPath(new URL('../bin/build.js', import.meta.url))], {
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  if (built.status !== 0) throw new Error('npm run build failed');
  const compiled = { BIOALCHEMY_FROM_SOURCE: '' };
  const cases: [string, string[], NodeJS.ProcessEnv][] = [
    ['bioalchemy --help', ['--help'], compiled],
    ['bioalchemy --version', ['--version'], compiled],
    ['bioalchemy run --help', ['run', '--help'], compiled],
    ['bioalchemy consume (usage mistake)', ['consume'], compiled],
    ['bioalchemy --help from source (tsx)', ['--help'], { BIOALCHEMY_FROM_SOURCE: '1' }],
  ];
  const lines = [`${RUNS} runs each, interleaved with node -e 0; medians`];
  for (const [label, args, env] of cases) {
    const bare: number[] = [];
    const cli: number[] = [];
    for (let i = 0; i < RUNS; i++) {
      bare.push(ms(process.execPath, ['-e', '0']));
      cli.push(ms(BIN, args, env));
    }
    const ratio = median(cli) / median(bare);
    const goal =
      label === 'bioalchemy --help' ? ` (goal <= ${GOAL}x: ${ratio <= GOAL ? 'met' : 'NOT met'})` : '';
    lines.push(
      `${label}: ${median(cli).toFixed(0)} ms vs node -e 0: ${median(bare).toFixed(0)} ms = ${ratio.toFixed(2)}x${goal}`,
    );
  }
  return lines;
}
