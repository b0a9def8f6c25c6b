import { spawnSync } from 'node:child_process';
import { existsSync, linkSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { z } from 'zod';
import { Llm, MemoryJournal } from '../llm/index.js';
import { JudgeReply } from '../llm/prompts/judge.js';
import { mcqQualityMessages } from '../llm/prompts/mcq-quality.js';
import { LlmConfig } from '../schemas/llm.js';
import { GradeAccept } from '../schemas/qa.js';

// `npm run bench -- local-model`: the README's first command on the local model (Gemma 3 270M),
// `ingest examples/articles` then `run --until-idle --max-articles 3` in a fresh data folder, and
// what it made: candidates, accepted QA, rejections by code, seconds per paid call. Beside it, in
// the same run, the baseline of one call: a short structured reply of the same model loaded in this
// process (the relevance prompt's shape), so "seconds per call" reads as a multiple of the least a
// call costs here. Needs the model: `npx bioalchemy model pull` (or BIOALCHEMY_LOCAL_MODEL).

const ROOT = new URL('..', import.meta.url).pathname;
const BIN = join(ROOT, 'bin/bioalchemy.js');
const MODEL = process.env.BIOALCHEMY_LOCAL_MODEL ?? join(ROOT, 'data/models/gemma-3-270m-q4_k_m.gguf');

/** Seconds of one short structured reply, the model loaded beforehand (the median of 3). */
async function oneCall(llm: Llm): Promise<number> {
  const schema = z.object({ relevant: z.boolean(), reason: z.string().max(80) }).strict();
  const ask = (n: number) =>
    llm.complete({
      stage: 'relevance',
      schema,
      promptVersion: `bench-${n}`,
      messages: [
        { role: 'system', content: 'Decide whether the passage is about biology. Reply with JSON.' },
        { role: 'user', content: `Passage ${n}: mitochondria make ATP by oxidative phosphorylation.` },
      ],
    });
  await ask(0);
  const times: number[] = [];
  for (let n = 1; n <= 3; n++) {
    const started = performance.now();
    await ask(n);
    times.push((performance.now() - started) / 1000);
  }
  return times.sort((a, b) => a - b)[1]!;
}

/**
 * Whether the model tells a good question from a bad one as grade's judge: one passage, the same
 * question with its right key and with a wrong key, and a question the passage does not answer.
 * A judge that scores the three alike cannot be what stands between the model's questions and
 * the training set, whatever grammar it writes under.
 */
async function judgeProbe(llm: Llm): Promise<string[]> {
  const passage =
    "Mitochondria make most of the cell's ATP by oxidative phosphorylation: electrons pass along the respiratory chain in the inner membrane and drive protons across it, and ATP synthase uses the proton gradient to make ATP.";
  const question =
    'Which enzyme uses the proton gradient across the inner mitochondrial membrane to make ATP?';
  const options = ['ATP synthase', 'Hexokinase', 'DNA polymerase', 'Lactate dehydrogenase'];
  const cases = [
    { label: 'right key', q: { question, options, answer: 'A' } },
    { label: 'wrong key', q: { question, options, answer: 'C' } },
    {
      label: 'not in the passage',
      q: {
        question: 'At what time is the clock open?',
        options: ['10 pm', '11 pm', '9 am', 'noon'],
        answer: 'B',
      },
    },
  ];
  const lines: string[] = [];
  for (const [n, { label, q }] of cases.entries()) {
    const { value: r } = await llm.complete({
      stage: 'mcq-quality',
      schema: JudgeReply,
      promptVersion: `bench-judge-${n}`,
      messages: mcqQualityMessages(passage, GradeAccept.parse({}), q),
    });
    lines.push(
      `judge probe, ${label}: quality ${r.quality}, answerability ${r.answerability}, verifiability ${r.verifiability}, ${r.verdict}`,
    );
  }
  return lines;
}

export async function run(): Promise<string[]> {
  if (!existsSync(MODEL)) return [`local-model: no model at ${MODEL} (npx bioalchemy model pull)`];
  const data = mkdtempSync(join(tmpdir(), 'bench-local-model-'));
  try {
    mkdirSync(join(data, 'models'));
    linkSync(MODEL, join(data, 'models', 'gemma-3-270m-q4_k_m.gguf'));
    // From the source, as the tests run it: dist/ is what the last build left.
    const env = { ...process.env, BIOALCHEMY_LOG_LEVEL: 'warn', BIOALCHEMY_FROM_SOURCE: '1' };
    const cli = (args: string[]) =>
      spawnSync(process.execPath, [BIN, ...args, '--data', data], {
        encoding: 'utf8',
        env,
        maxBuffer: 1 << 26,
      });
    const ingest = cli(['ingest', join(ROOT, 'examples/articles')]);
    if (ingest.status !== 0) throw new Error(`ingest: ${ingest.stderr}`);
    const started = performance.now();
    const r = cli(['run', '--until-idle', '--max-articles', '3']);
    const seconds = (performance.now() - started) / 1000;
    if (r.status !== 0) throw new Error(`run: ${r.stderr}`);
    const out = r.stdout;
    const count = (re: RegExp) => Number(re.exec(out)?.[1] ?? 0);
    const candidates = count(/^ {2}extract\s+in \d+ -> qa\.candidates (\d+)/m);
    const accepted = count(/^ {2}classify\s+in \d+ -> qa\.classified (\d+)/m);
    const paid = count(/^LLM: (\d+) calls paid/m);
    const rejections = [...out.matchAll(/^ {2}\s*(\d+) {2}([a-z-]+)$/gm)].map((m) => `${m[2]} ${m[1]}`);
    const perCall = paid ? seconds / paid : 0;
    // The model loaded once in this process, for the baseline call and the judge probe.
    const llm = new Llm(LlmConfig.parse({ provider: 'local', modelPath: MODEL, maxTokens: 300 }), {
      journal: new MemoryJournal(),
      log: pino({ level: 'silent' }),
    });
    let base: number;
    let probe: string[];
    try {
      base = await oneCall(llm);
      probe = await judgeProbe(llm);
    } finally {
      await llm.close();
    }
    return [
      `run --until-idle --max-articles 3 on examples/articles: ${seconds.toFixed(0)} s, ${paid} calls paid`,
      `candidates ${candidates}, accepted ${accepted}; rejections by code: ${rejections.join(', ') || 'none'}`,
      `seconds per paid call: ${perCall.toFixed(1)} vs one short structured reply: ${base.toFixed(1)} = ${(perCall / base).toFixed(1)}x`,
      ...probe,
      ...out
        .slice(out.indexOf('an accepted QA'))
        .split('\n')
        .filter((l) => out.includes('an accepted QA') && l.trim()),
    ];
  } finally {
    rmSync(data, { recursive: true, force: true });
  }
}
