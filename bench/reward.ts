import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { acceptedForms, score } from '../reward/index.js';
import { finalText } from '../reward/text.js';
import { fmt } from './harness.js';
import { run as againstPeople } from './reward-dev.js';

// `npm run bench -- reward`: the verifiable reward's cost per output, in TypeScript (grade, the
// feeder's /v1/reward) and in Python (trainers' compute_score), beside two figures of the same
// run: a baseline that reads each output once (fold, lower-case, look for the reference: the
// least any reward costs), and the reward before issue 29 (the cut-into-candidates design),
// loaded from git at BEFORE. Outputs: the fixture tables' outputs in the wrappings models put
// around answers, and the same with a 4 KB chain of thought in front (GRPO's rollouts are long).

/** The last commit with the reward before it was anchored on the reference (issue 29). */
const BEFORE = '9b3b7f5';
const ROOT = new URL('..', import.meta.url).pathname;
const PYTHON = join(ROOT, '.deploy/py-venv/bin/python');

interface Item {
  kind: 'mcq' | 'free-form';
  ground_truth: string;
  options: string[];
  aliases: string[];
  output: string;
}

const REASONING =
  'The passage says the enzyme is induced under stress; the mitochondria supply ATP, and expression may rise or fall. '.repeat(
    36,
  );

function items(): { short: Item[]; long: Item[] } {
  const rows = ['reward-cases.json', 'reward-adversarial.json'].flatMap(
    (f) => JSON.parse(readFileSync(join(ROOT, 'test/fixtures', f), 'utf8')) as (Item & { note: string })[],
  );
  const short = rows.flatMap((r) =>
    [r.output, `Answer: ${r.output}`, `\\boxed{${r.output}}`, `**${r.output}**`, `It is not ${r.output}`].map(
      (output) => ({
        kind: r.kind,
        ground_truth: r.ground_truth,
        options: r.options,
        aliases: r.aliases ?? [],
        output,
      }),
    ),
  );
  const long = short.map((i) => ({ ...i, output: `<think>${REASONING}</think>\n${REASONING}\n${i.output}` }));
  return { short, long };
}

type Scorer = (item: Item) => unknown;

/** Microseconds per output, the median of 5 passes. */
function perOutput(scorer: Scorer, list: Item[]): number {
  const passes: number[] = [];
  for (let p = 0; p < 5; p++) {
    const started = performance.now();
    for (const item of list) scorer(item);
    passes.push(((performance.now() - started) * 1000) / list.length);
  }
  return passes.sort((a, b) => a - b)[2]!;
}

const readOnce: Scorer = (item) =>
  item.output.normalize('NFKD').toLowerCase().includes(item.ground_truth.normalize('NFKD').toLowerCase());

/** The reward as it was at BEFORE, in a folder of its own: TypeScript and Python. */
function before(dir: string): { ts: string; py: string } | null {
  try {
    const show = (path: string) =>
      execFileSync('git', ['-C', ROOT, 'show', `${BEFORE}:${path}`], { encoding: 'utf8' });
    const ts = join(dir, 'reward-before.ts');
    const py = join(dir, 'reward_before.py');
    writeFileSync(ts, show('processors/reward.ts').replace(/^import type .*$/m, ''));
    writeFileSync(py, show('clients/python/bioalchemy_client/reward.py'));
    return { ts, py };
  } catch {
    return null;
  }
}

const PYTHON_BENCH = `
import importlib.util, json, sys, time, unicodedata
def load(path):
    spec = importlib.util.spec_from_file_location("reward_module", path)
    m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m); return m
lists = json.load(sys.stdin)
def per_output(fn, items):
    passes = []
    for _ in range(5):
        t = time.perf_counter()
        for i in items: fn(i)
        passes.append((time.perf_counter() - t) * 1e6 / len(items))
    return sorted(passes)[2]
def read_once(i):
    return unicodedata.normalize("NFKD", i["ground_truth"]).lower() in unicodedata.normalize("NFKD", i["output"]).lower()
out = {}
for name, path in [("now", sys.argv[1])] + ([("before", sys.argv[2])] if len(sys.argv) > 2 else []):
    m = load(path)
    fn = lambda i: m.score(i["kind"], i["ground_truth"], i["output"], options=i["options"], aliases=i["aliases"])
    out[name] = {k: per_output(fn, v) for k, v in lists.items()}
out["baseline"] = {k: per_output(read_once, v) for k, v in lists.items()}
print(json.dumps(out))
`;

// Agreement with people (issue 45): on tables of labelled outputs, the reward's precision and
// recall of "correct" for free-form answers beside the baseline "the reference occurs in the
// answer" (any accepted form of it, in the text after the reasoning, without case), and for
// multiple choice the share of right and of wrong final choices it pays; and whether the Python
// twin gives every row the same score.

interface Labelled extends Item {
  label: 0 | 1;
}

function labelledSets(): [string, Labelled[]][] {
  const read = (f: string) =>
    JSON.parse(readFileSync(join(ROOT, 'test/fixtures', f), 'utf8')) as Record<string, unknown>[];
  const item = (r: Record<string, unknown>, label: unknown): Labelled => ({
    kind: r.kind as Item['kind'],
    ground_truth: r.ground_truth as string,
    options: (r.options as string[]) ?? [],
    aliases: (r.aliases as string[]) ?? [],
    output: r.output as string,
    label: label as 0 | 1,
  });
  return [
    ['long-form table (issue 45)', read('reward-long-form.json').map((r) => item(r, r.label))],
    ['format table (reward-cases)', read('reward-cases.json').map((r) => item(r, r.score))],
  ];
}

const occurs = (i: Item) => {
  const text = finalText(i.output).normalize('NFKD').toLowerCase();
  return acceptedForms(i.ground_truth, i.aliases).some((f) =>
    text.includes(f.normalize('NFKD').toLowerCase()),
  );
};

const pct = (a: number, b: number) => (b === 0 ? '—' : `${((100 * a) / b).toFixed(1)}%`);

/** Precision / recall of "correct" of the paid flags against the labels. */
function precisionRecall(rows: Labelled[], paid: boolean[]): string {
  const tp = rows.filter((r, k) => paid[k] && r.label === 1).length;
  const predicted = paid.filter(Boolean).length;
  const positive = rows.filter((r) => r.label === 1).length;
  return `precision ${pct(tp, predicted)} (${tp}/${predicted}), recall ${pct(tp, positive)} (${tp}/${positive})`;
}

const PYTHON_SCORES = `
import json, sys
sys.path.insert(0, sys.argv[1])
from bioalchemy_client import score
print(json.dumps([score(i["kind"], i["ground_truth"], i["output"], options=i["options"], aliases=i["aliases"])["score"]
                  for i in json.load(sys.stdin)]))
`;

function agreement(): string[] {
  const lines: string[] = [];
  for (const [name, rows] of labelledSets()) {
    const ts = rows.map((r) => score(r).score === 1);
    const free = rows.map((r, k) => [r, k] as const).filter(([r]) => r.kind === 'free-form');
    const mcq = rows.map((r, k) => [r, k] as const).filter(([r]) => r.kind === 'mcq');
    const freeRows = free.map(([r]) => r);
    lines.push(
      `${name}, free-form (${freeRows.length}): reward ${precisionRecall(
        freeRows,
        free.map(([, k]) => ts[k]!),
      )}; baseline "reference occurs" ${precisionRecall(freeRows, freeRows.map(occurs))}`,
    );
    const right = mcq.filter(([r]) => r.label === 1);
    const wrong = mcq.filter(([r]) => r.label === 0);
    lines.push(
      `${name}, multiple choice (${mcq.length}): pays ${pct(right.filter(([, k]) => ts[k]).length, right.length)} of the right final choices, ${pct(wrong.filter(([, k]) => ts[k]).length, wrong.length)} of the wrong`,
    );
    if (existsSync(PYTHON)) {
      const py = spawnSync(PYTHON, ['-c', PYTHON_SCORES, join(ROOT, 'clients/python')], {
        input: JSON.stringify(rows),
        encoding: 'utf8',
        maxBuffer: 1 << 26,
      });
      if (py.status !== 0) throw new Error(`python: ${py.stderr}`);
      const scores = JSON.parse(py.stdout) as number[];
      const same = scores.filter((s, k) => (s === 1) === ts[k]).length;
      lines.push(`${name}: TypeScript = Python on ${same} of ${rows.length} rows`);
    }
  }
  return lines;
}

export async function run(): Promise<string[]> {
  const agreed = [...agreement(), '### the development set (issues 50, 61)', ...(await againstPeople())];
  const lists = items();
  // Inside the checkout, so tsx compiles the old TypeScript as it does the project's.
  mkdirSync(join(ROOT, '.cache'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.cache', 'bench-reward-'));
  const lines: string[] = [
    `outputs: ${fmt(lists.short.length)} short (the fixture tables in 5 wrappings), the same with 4 KB of reasoning in front`,
  ];
  try {
    const old = before(dir);
    const oldScore = old ? ((await import(old.ts)) as { score: Scorer }).score : null;
    const scorer: Scorer = (i) => score(i);
    const line = (lang: string, size: string, now: number, base: number, was: number | null) =>
      `${lang} ${size}: ${now.toFixed(1)} µs/output vs reading it once: ${base.toFixed(1)} µs = ${(now / base).toFixed(1)}x` +
      (was === null
        ? '; before: not available'
        : `; before (${BEFORE}): ${was.toFixed(1)} µs = now ${(now / was).toFixed(2)}x`);
    for (const size of ['short', 'long'] as const) {
      const list = lists[size];
      lines.push(
        line(
          'TypeScript',
          size,
          perOutput(scorer, list),
          perOutput(readOnce, list),
          oldScore ? perOutput(oldScore, list) : null,
        ),
      );
    }
    if (!existsSync(PYTHON)) {
      lines.push('Python: not measured (bash deploy/py-venv.sh first)', ...agreed);
      return lines;
    }
    const args = [
      '-c',
      PYTHON_BENCH,
      join(ROOT, 'clients/python/bioalchemy_client/reward.py'),
      ...(old ? [old.py] : []),
    ];
    const py = spawnSync(PYTHON, args, {
      input: JSON.stringify(lists),
      encoding: 'utf8',
      maxBuffer: 1 << 26,
    });
    if (py.status !== 0) throw new Error(`python: ${py.stderr}`);
    const r = JSON.parse(py.stdout) as Record<
      'now' | 'before' | 'baseline',
      Record<'short' | 'long', number>
    >;
    for (const size of ['short', 'long'] as const)
      lines.push(line('Python', size, r.now[size], r.baseline[size], r.before?.[size] ?? null));
    return [...lines, ...agreed];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
