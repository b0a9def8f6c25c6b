import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { readAnswer } from '../reward/index.js';
import type { RewardResult } from '../schemas/feeder.js';

// The reward against people (issues 50, 61), on the development set of /work/shared/reward-dev
// (real answers labelled by people; its README gives the format): free-form answers (EVOUNA,
// TriviaQA and half of Natural Questions) and multiple-choice solutions (MR-BEN: chemistry,
// physics, medicine). Reported per set and answering system: the rules alone (precision, recall
// and F1 in TypeScript and Python); the rules with a perfect verifier on what they leave undecided
// (readAnswer's undecided: the design's ceiling) and the share of outputs it would be asked
// about; beside "contains" (a golden answer, normalised as SQuAD does, inside the answer
// normalised the same way) and exact match; the largest classes of confident refusals people call
// correct (what even a perfect verifier cannot recover); the disagreements with people grouped by
// the reason the reward gives, largest first; and the reward before issue 61 (loaded from git at
// BEFORE) on the same rows, with the cost per output of both in the same run. No row is copied
// anywhere: the set is read where it lies.

/** The last commit with the reward before issue 61. */
const BEFORE = 'c42f84e';
const ROOT = new URL('..', import.meta.url).pathname;
const PYTHON = join(ROOT, '.deploy/py-venv/bin/python');
const DEV = process.env.REWARD_DEV ?? join(ROOT, '../shared/reward-dev');
const SYSTEMS = ['fid', 'gpt35', 'chatgpt', 'gpt4', 'newbing'] as const;

export interface DevRow {
  readonly set: string;
  readonly system: string;
  readonly kind: 'mcq' | 'free-form';
  readonly ground_truth: string;
  readonly aliases: string[];
  readonly options: string[];
  readonly output: string;
  /** Free-form: a person judged the answer correct. MCQ: an expert labelled the solution correct. */
  readonly label: boolean;
  /** MCQ: the final choice read off the solution's last steps differs from the key (null: unread). */
  readonly differs?: boolean | null;
}

/** SQuAD's normalisation: lower case, no punctuation, no articles, whitespace collapsed. */
export const squad = (s: string): string =>
  s
    .toLowerCase()
    .replace(/[!-/:-@[-`{-~]/g, '')
    .replace(/\b(?:a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();

const goldenOf = (r: DevRow) => [r.ground_truth, ...r.aliases].map(squad).filter((g) => g !== '');
const contains = (r: DevRow) => goldenOf(r).some((g) => squad(r.output).includes(g));
const exactMatch = (r: DevRow) => goldenOf(r).includes(squad(r.output));

/** A free-form set of EVOUNA in its format (TQ-dev.json, NQ-dev.json). */
function freeFormRows(file: string, set: string): DevRow[] {
  const rows = JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>[];
  return rows.flatMap((q) => {
    if (q.improper === true) return [];
    const golden = String(q.golden_answer)
      .split('/')
      .map((g) => g.trim())
      .filter((g) => g !== '');
    if (golden.length === 0) return [];
    return SYSTEMS.flatMap((system) => {
      const judge = q[`judge_${system}`];
      if (typeof judge !== 'boolean' || typeof q[`answer_${system}`] !== 'string') return [];
      return [
        {
          set,
          system,
          kind: 'free-form' as const,
          ground_truth: golden[0]!,
          aliases: golden.slice(1),
          options: [],
          output: q[`answer_${system}`] as string,
          label: judge,
        },
      ];
    });
  });
}

/**
 * The final choice a solution states, read independently of the reward: the last letter after
 * "choice", "option", "answer" or "solution" in the last step that names one; null when none does.
 */
export function finalChoice(steps: readonly string[]): string | null {
  const CHOICE =
    /\b(?:choice|option|answer|solution)(?:\s+is)?[\s_:]*(?:choice|option)?[\s_:]*\(?([A-D])\b/gi;
  for (const step of [...steps].reverse()) {
    const last = [...step.matchAll(CHOICE)].at(-1);
    if (last) return last[1]!.toUpperCase();
  }
  return null;
}

function mcqRows(): DevRow[] {
  return ['chemistry', 'physics', 'medicine'].flatMap((subject) => {
    const file = join(DEV, `mr-ben/${subject}.json`);
    const data = JSON.parse(readFileSync(file, 'utf8')) as Record<string, Record<string, unknown>[]>;
    return Object.values(data).flatMap((solutions) =>
      solutions.flatMap((s) => {
        const key = String(s.Ground_Truth_Answer_Modified || s.Ground_Truth_Answer)
          .trim()
          .toUpperCase();
        if (!/^[A-D]$/.test(key)) return [];
        const options = String(s.Options)
          .split(/\n(?=[A-D]\s*[:.)])/)
          .map((o) => o.replace(/^\s*[A-D]\s*[:.)]\s*/, '').trim());
        const steps = s.Model_Solution_Steps as string[];
        const chosen = finalChoice(steps);
        return [
          {
            set: `multiple choice, ${subject}`,
            system: String(s.Sampled_Model),
            kind: 'mcq' as const,
            ground_truth: key,
            aliases: [],
            options,
            output: steps.join('\n'),
            label: s.Model_Solution_Correctness === 'correct',
            differs: chosen === null ? null : chosen !== key,
          },
        ];
      }),
    );
  });
}

export function devRows(): DevRow[] {
  return [
    ...freeFormRows(join(DEV, 'evouna/TQ-dev.json'), 'free-form, TriviaQA'),
    ...freeFormRows(join(DEV, 'evouna/NQ-dev.json'), 'free-form, Natural Questions'),
    ...mcqRows(),
  ];
}

const pct = (a: number, b: number) => (b === 0 ? '—' : `${((100 * a) / b).toFixed(1)}`);

/** P / R / F1 (percent) of "correct" of the paid flags against the labels. */
function prf(rows: readonly DevRow[], paid: readonly boolean[]): string {
  const tp = rows.filter((r, k) => paid[k] && r.label).length;
  const predicted = paid.filter(Boolean).length;
  const positive = rows.filter((r) => r.label).length;
  const f1 = predicted + positive === 0 ? 0 : (200 * tp) / (predicted + positive);
  return `${pct(tp, predicted)} / ${pct(tp, positive)} / ${f1.toFixed(1)}`;
}

/** A reason with its particulars (values, letters, quoted text) taken out: the class of a verdict. */
export const reasonClass = (reason: string): string =>
  reason
    .replace(/\([^()]*\)/g, '(…)')
    .replace(/\b[A-J](?= (?:and|in|named)\b)/g, 'X')
    .replace(/expected [A-J]/, 'expected X')
    .replace(/-?\d[\d.,e+-]*/g, 'N')
    .replace(/^\S+ is not .* \(/, 'N is not the reference (');

/** The rules' verdict and the span they leave undecided (null: the verdict stands). */
interface Reading {
  readonly result: RewardResult;
  readonly undecided: string | null;
}

type Scorer = (r: DevRow) => Reading;

interface Before {
  ts: Scorer;
  py: string;
}

/** The reward at BEFORE in a folder of its own (the TypeScript reward/ and the Python package). */
async function before(dir: string): Promise<Before | null> {
  try {
    const tar = execFileSync('git', [
      '-C',
      ROOT,
      'archive',
      BEFORE,
      'reward',
      'clients/python/bioalchemy_client',
    ]);
    execFileSync('tar', ['-x', '-C', dir], { input: tar });
    mkdirSync(join(dir, 'schemas'), { recursive: true });
    symlinkSync(join(ROOT, 'schemas/feeder.ts'), join(dir, 'schemas/feeder.ts'));
    const mod = (await import(join(dir, 'reward/index.ts'))) as { readAnswer: Scorer };
    return { ts: (r) => mod.readAnswer(r), py: join(dir, 'clients/python') };
  } catch {
    return null;
  }
}

const PYTHON_DEV = `
import json, sys, time
sys.path.insert(0, sys.argv[1])
from bioalchemy_client import reward
items = json.load(sys.stdin)
# Before issue 61 the package had no read_answer: its score alone, the span not compared.
read = getattr(reward, "read_answer", None) or (lambda *a, **k: (reward.score(*a, **k), None))
started = time.perf_counter()
out = [read(i["kind"], i["ground_truth"], i["output"], options=i["options"], aliases=i["aliases"]) for i in items]
us = (time.perf_counter() - started) * 1e6 / max(1, len(items))
print(json.dumps({"results": [{"result": r, "undecided": u} for r, u in out], "us": us}))
`;

function python(pkg: string, rows: readonly DevRow[]): { results: Reading[]; us: number } {
  const run = spawnSync(PYTHON, ['-c', PYTHON_DEV, pkg], {
    input: JSON.stringify(rows),
    encoding: 'utf8',
    maxBuffer: 1 << 28,
  });
  if (run.status !== 0) throw new Error(`python: ${run.stderr}`);
  return JSON.parse(run.stdout);
}

/** Results and microseconds per output, the faster of two passes (the first warms the caches). */
function timed(scorer: Scorer, rows: readonly DevRow[]): { results: Reading[]; us: number } {
  let best = Number.POSITIVE_INFINITY;
  let results: Reading[] = [];
  for (let pass = 0; pass < 2; pass++) {
    const started = performance.now();
    results = rows.map(scorer);
    best = Math.min(best, ((performance.now() - started) * 1000) / rows.length);
  }
  return { results, us: best };
}

const paidOf = (results: readonly Reading[]) => results.map((r) => r.result.score === 1);

/** Rules alone, then with a perfect verifier (paid where asked and people say right), and the share asked. */
function withVerifier(rows: readonly DevRow[], results: readonly Reading[]): string {
  const paid = paidOf(results);
  const asked = results.map((r) => r.undecided !== null);
  const ceiling = rows.map((r, k) => paid[k]! || (asked[k]! && r.label));
  return `rules ${prf(rows, paid)}; + perfect verifier ${prf(rows, ceiling)}, asked ${pct(asked.filter(Boolean).length, rows.length)}%`;
}

/** Confident refusals people call correct (a perfect verifier never sees them), by reason class. */
function confidentRefusals(rows: readonly DevRow[], results: readonly Reading[]): string {
  const classes = new Map<string, number>();
  rows.forEach((r, k) => {
    const { result, undecided } = results[k]!;
    if (!r.label || result.score === 1 || undecided !== null) return;
    const c = reasonClass(result.reason);
    classes.set(c, (classes.get(c) ?? 0) + 1);
  });
  const total = [...classes.values()].reduce((a, b) => a + b, 0);
  const largest = [...classes].sort((a, b) => b[1] - a[1]).slice(0, 5);
  return `confident refusals people call correct: ${total}; largest: ${largest.map(([c, n]) => `${n} ${c}`).join('; ')}`;
}

function freeFormLines(
  name: string,
  rows: DevRow[],
  now: Reading[],
  was: Reading[] | null,
  py: Reading[] | null,
) {
  const bySystem = [...new Set(rows.map((r) => r.system))];
  const lines = [`${name} (${rows.length} answers): P / R / F1 %`];
  const groups: [string, number[]][] = [
    ['all', rows.map((_, k) => k)],
    ...bySystem.map((s): [string, number[]] => [s, rows.flatMap((r, k) => (r.system === s ? [k] : []))]),
  ];
  for (const [system, at] of groups) {
    const sub = at.map((k) => rows[k]!);
    const pick = (results: Reading[]) => at.map((k) => results[k]!);
    lines.push(
      `  ${system.padEnd(8)} ${withVerifier(sub, pick(now))}` +
        (py ? `; Python rules ${prf(sub, paidOf(pick(py)))}` : '') +
        (was ? `; before: ${withVerifier(sub, pick(was))}` : '') +
        `; contains ${prf(sub, sub.map(contains))}; exact match ${prf(sub, sub.map(exactMatch))}`,
    );
  }
  lines.push(`  ${confidentRefusals(rows, now)}`);
  if (was) lines.push(`  before, ${confidentRefusals(rows, was)}`);
  return lines;
}

function mcqLines(name: string, rows: DevRow[], now: boolean[], was: boolean[] | null) {
  const share = (flags: boolean[], keep: (r: DevRow) => boolean) => {
    const at = rows.flatMap((r, k) => (keep(r) ? [k] : []));
    return `${pct(at.filter((k) => flags[k]).length, at.length)}% of ${at.length}`;
  };
  const correct = (r: DevRow) => r.label;
  const differing = (r: DevRow) => r.differs === true;
  const reader = rows.map((r) => r.differs === false);
  return [
    `${name} (${rows.length} solutions): correct solutions paid ${share(now, correct)}` +
      (was ? ` (before ${share(was, correct)})` : '') +
      ` (final-choice reader ${share(reader, correct)}); differing final choices paid ${share(now, differing)}` +
      (was ? ` (before ${share(was, differing)})` : ''),
  ];
}

/** The disagreements with people by the class of the reward's reason, largest first. */
function disagreements(rows: DevRow[], results: Reading[]): string[] {
  const classes = new Map<string, number>();
  rows.forEach((r, k) => {
    const paid = results[k]!.result.score === 1;
    const wrong = r.kind === 'mcq' ? (paid && r.differs === true) || (!paid && r.label) : paid !== r.label;
    if (!wrong) return;
    const key = `${r.kind === 'mcq' ? 'mcq' : 'free-form'} ${paid ? 'paid, people say wrong' : 'not paid, people say right'}: ${reasonClass(results[k]!.result.reason)}`;
    classes.set(key, (classes.get(key) ?? 0) + 1);
  });
  return [...classes]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 25)
    .map(([reason, n]) => `  ${String(n).padStart(5)}  ${reason}`);
}

export async function run(): Promise<string[]> {
  if (!existsSync(DEV)) return [`development set not found at ${DEV} (REWARD_DEV names it)`];
  const rows = devRows();
  mkdirSync(join(ROOT, '.cache'), { recursive: true });
  const dir = mkdtempSync(join(ROOT, '.cache', 'bench-reward-dev-'));
  try {
    const old = await before(dir);
    const now = timed((r) => readAnswer(r), rows);
    const was = old ? timed(old.ts, rows) : null;
    const pyNow = existsSync(PYTHON) ? python(join(ROOT, 'clients/python'), rows) : null;
    const pyWas = pyNow && old ? python(old.py, rows) : null;
    const lines: string[] = [];
    for (const set of [...new Set(rows.map((r) => r.set))]) {
      const at = rows.flatMap((r, k) => (r.set === set ? [k] : []));
      const sub = at.map((k) => rows[k]!);
      const pick = (results: Reading[] | undefined) => (results ? at.map((k) => results[k]!) : null);
      if (sub[0]!.kind === 'free-form')
        lines.push(...freeFormLines(set, sub, pick(now.results)!, pick(was?.results), pick(pyNow?.results)));
      else {
        const paid = (results: Reading[] | undefined) => (results ? paidOf(pick(results)!) : null);
        lines.push(...mcqLines(set, sub, paid(now.results)!, paid(was?.results)));
      }
    }
    const mcq = rows.flatMap((r, k) => (r.kind === 'mcq' ? [k] : []));
    lines.push(
      ...mcqLines(
        'multiple choice, all subjects',
        mcq.map((k) => rows[k]!),
        paidOf(mcq.map((k) => now.results[k]!)),
        was ? paidOf(mcq.map((k) => was.results[k]!)) : null,
      ),
    );
    if (pyNow) {
      const same = pyNow.results.filter(
        (p, k) =>
          p.result.score === now.results[k]!.result.score && p.undecided === now.results[k]!.undecided,
      ).length;
      lines.push(`TypeScript = Python (score and undecided span) on ${same} of ${rows.length} rows`);
    } else lines.push('Python: not measured (bash deploy/py-venv.sh first)');
    const ratio = (a: number, b: number) =>
      `${a.toFixed(0)} µs vs ${b.toFixed(0)} µs = ${(a / b).toFixed(2)}x`;
    if (was) lines.push(`cost per output, TypeScript: now vs before (${BEFORE}) ${ratio(now.us, was.us)}`);
    if (pyNow && pyWas)
      lines.push(`cost per output, Python: now vs before (${BEFORE}) ${ratio(pyNow.us, pyWas.us)}`);
    lines.push(
      "disagreements with people, by the reward's reason (now, TypeScript):",
      ...disagreements(rows, now.results),
    );
    if (was) lines.push(`the same before (${BEFORE}):`, ...disagreements(rows, was.results).slice(0, 8));
    return lines;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
