import { DLQ_REPLAYED_TOPIC, planReplay, type ReplayFilter, replayOnce } from '../processors/dlq-replay.js';
import { pipelineTopology } from '../processors/pipeline.js';
import { DeadLetterCode } from '../schemas/dead-letter.js';
import { configOf, openLog } from './context.js';
import { type GlobalOptions, UsageError } from './usage.js';

export interface DlqReplayOptions extends GlobalOptions {
  code?: string[];
  processor?: string[];
  since?: string;
  until?: string;
  dryRun?: boolean;
}

function time(flag: string, value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const ms = Date.parse(value);
  if (Number.isNaN(ms))
    throw new UsageError(`${flag}: not a time: "${value}" (ISO 8601, e.g. 2026-12-06T00:00Z)`);
  return ms;
}

/** `bioalchemy dlq replay`: re-drives the matching dead letters whose inputs the log still holds, once each. */
export async function replayDeadLetters(opts: DlqReplayOptions): Promise<void> {
  const codes = (opts.code ?? []).map((c) => {
    const parsed = DeadLetterCode.safeParse(c);
    if (!parsed.success)
      throw new UsageError(`--code: unknown code "${c}" (one of: ${DeadLetterCode.options.join(', ')})`);
    return parsed.data;
  });
  const topology = pipelineTopology();
  const known = topology.processors.map((p) => p.name);
  for (const p of opts.processor ?? [])
    if (!known.includes(p))
      throw new UsageError(`--processor: unknown processor "${p}" (one of: ${known.join(', ')})`);
  const filter: ReplayFilter = {
    codes,
    processors: opts.processor ?? [],
    ...(opts.since === undefined ? {} : { since: time('--since', opts.since) }),
    ...(opts.until === undefined ? {} : { until: time('--until', opts.until) }),
  };
  const runtime = await openLog(configOf(opts));
  const out: string[] = [];
  try {
    await runtime.ensureTopics([...topology.topics, DLQ_REPLAYED_TOPIC]);
    const plan = opts.dryRun ? await planReplay(runtime, filter) : await replayOnce(runtime, filter);
    if (plan.matched === 0) {
      process.stdout.write('no dead letter matches the filter: nothing to replay\n');
      return;
    }
    const deadLetters = plan.inputs.reduce((n, i) => n + i.deadLetters.length, 0);
    const verb = opts.dryRun ? 'would replay' : 'replayed';
    out.push(
      `${plan.matched} dead letter(s) match: ${verb} ${deadLetters} (${plan.inputs.length} input(s) appended again: ${summary(plan.inputs.map((i) => i.input.topic))}), ` +
        `${plan.alreadyReplayed} replayed before, ${plan.cannot.length} cannot be replayed`,
    );
    for (const { deadLetter: dl, why } of plan.cannot)
      out.push(`  cannot replay ${dl.id} (${dl.code}, ${dl.processor ?? 'no processor'}): ${why}`);
    if (deadLetters && !opts.dryRun) out.push('run the pipeline (bioalchemy run) to process them');
    process.stdout.write(`${out.join('\n')}\n`);
  } finally {
    await runtime.close();
  }
}

function summary(topics: string[]): string {
  const counts = new Map<string, number>();
  for (const t of topics) counts.set(t, (counts.get(t) ?? 0) + 1);
  return [...counts].map(([t, n]) => `${t} ${n}`).join(', ') || 'none';
}
