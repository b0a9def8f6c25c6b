import { pino } from 'pino';
import type { z } from 'zod';
import type { VerifierPrompt } from '../schemas/config.js';
import { type LlmConfig, type LlmMessage, LlmStage } from '../schemas/llm.js';
import type { GradeAccept } from '../schemas/qa.js';
import type { Taxonomy } from '../schemas/taxonomy.js';
import { LlmReplyError } from './errors.js';
import type { ConcurrencyState } from './flow/endpoint.js';
import type { EndpointFault } from './flow/faults.js';
import { Llm } from './llm.js';
import { CLASSIFY_PROMPT, classifyMessages, classifyReply } from './prompts/classify.js';
import { FREEFORM_PROMPT, FreeformReply, freeformMessages } from './prompts/freeform.js';
import { FREEFORM_GRADE_PROMPT, freeformGradeMessages } from './prompts/freeform-grade.js';
import { JudgeReply } from './prompts/judge.js';
import { MCQ_PROMPT, McqReply, mcqMessages } from './prompts/mcq.js';
import { MCQ_QUALITY_PROMPT, mcqQualityMessages } from './prompts/mcq-quality.js';
import { RELEVANCE_PROMPT, RelevanceReply, relevanceMessages } from './prompts/relevance.js';
import { VERDICTS, VERIFY_PROMPT, VerifyReply, verdictScore, verifyMessages } from './prompts/verify.js';

/** What one stage's request shape met at its endpoint. */
export interface StageCheck {
  stage: LlmStage;
  model: string;
  ok: boolean;
  /** One line per thing learned: auth, model, structured output, thinking, parameters, context. */
  findings: string[];
  /** For a stage that cannot run: the config key to fix and how, with the server's words. */
  fault?: { configKey: string; fix: string; message: string; status: number | undefined };
  seconds: number;
}

const TITLE = 'ATP synthase couples proton flow to ATP synthesis';
const PASSAGE =
  'Mitochondrial ATP synthase uses the proton gradient across the inner membrane to make ATP. ' +
  'Protons flowing through the Fo subunit turn its c-ring, and the rotation of the central stalk ' +
  'drives conformational changes in the F1 subunit that bind ADP and phosphate and release ATP. ' +
  'About three ATP are made per full rotation of the c-ring.';
const QUESTION = {
  question: 'What does the rotation of the central stalk of ATP synthase drive in the F1 subunit?',
  options: [
    'Conformational changes that make ATP',
    'Proton pumping out of the matrix',
    'Electron transfer to oxygen',
    'Import of ADP into the matrix',
  ],
  answer: 'A',
};

/** Each stage's request as the pipeline sends it: its prompt, its reply schema, on a sample passage. */
function requests(taxonomy: Taxonomy, accept: GradeAccept, verifier: VerifierPrompt | undefined) {
  const r = (stage: LlmStage, schema: z.ZodType, promptVersion: string, messages: LlmMessage[]) => ({
    stage,
    schema,
    promptVersion: `${promptVersion}+check`,
    messages,
  });
  return [
    r('relevance', RelevanceReply, RELEVANCE_PROMPT, relevanceMessages(TITLE, PASSAGE)),
    r('mcq', McqReply, MCQ_PROMPT, mcqMessages(TITLE, PASSAGE)),
    r('mcq-quality', JudgeReply, MCQ_QUALITY_PROMPT, mcqQualityMessages(PASSAGE, accept, QUESTION)),
    r('freeform', FreeformReply, FREEFORM_PROMPT, freeformMessages(TITLE, PASSAGE)),
    r(
      'freeform-grade',
      JudgeReply,
      FREEFORM_GRADE_PROMPT,
      freeformGradeMessages(PASSAGE, accept, { question: QUESTION.question, answer: 'ATP synthesis' }),
    ),
    r(
      'classify',
      classifyReply(taxonomy),
      CLASSIFY_PROMPT,
      classifyMessages(taxonomy, { question: QUESTION.question, answer: 'ATP synthesis' }),
    ),
    // The reward's verifier, when one is set: an answer that says the reference in other words.
    ...(verifier
      ? [
          r(
            'verify',
            VerifyReply,
            VERIFY_PROMPT,
            verifyMessages(verifier, {
              question: QUESTION.question,
              reference: 'conformational changes that make ATP',
              answer: 'It changes the shape of the F1 subunit so that it binds ADP and releases ATP.',
            }),
          ),
        ]
      : []),
  ];
}

/**
 * Sends each stage's request shape once (a fresh layer per stage, no journal: nothing is reused)
 * and says what the endpoint made of it. A stage whose endpoint faults (auth, model, a request
 * refused) is not waited on: the fault is its answer.
 */
export async function checkStages(
  config: LlmConfig,
  opts: {
    taxonomy: Taxonomy;
    accept: GradeAccept;
    env?: NodeJS.ProcessEnv;
    stages?: readonly LlmStage[];
    /** The reward verifier's prompt format (reward.verifier.prompt): the verify stage is checked too. */
    verifier?: VerifierPrompt;
    /** Longest wait for one stage's answer. */
    deadlineMs?: number;
  },
): Promise<StageCheck[]> {
  const checks: StageCheck[] = [];
  for (const request of requests(opts.taxonomy, opts.accept, opts.verifier)) {
    if (opts.stages?.length && !opts.stages.includes(request.stage)) continue;
    checks.push(await checkStage(config, request, opts));
  }
  return checks;
}

async function checkStage(
  config: LlmConfig,
  request: ReturnType<typeof requests>[number],
  opts: { env?: NodeJS.ProcessEnv; deadlineMs?: number; verifier?: VerifierPrompt },
): Promise<StageCheck> {
  const started = performance.now();
  const warnings: string[] = [];
  const log = pino({ level: 'warn' }, { write: (line: string) => void warnings.push(JSON.parse(line).msg) });
  let reasoningTokens = 0;
  let onFault: (f: EndpointFault) => void = () => {};
  const faulted = new Promise<EndpointFault>((resolve) => {
    onFault = resolve;
  });
  const llm = new Llm(config, {
    log,
    ...(opts.env ? { env: opts.env } : {}),
    onFault: (f) => f && onFault(f),
    onCall: (c) => {
      reasoningTokens += (c as { reasoningTokens?: number }).reasoningTokens ?? 0;
    },
  });
  const model = config.stages[request.stage]?.model ?? config.model;
  const done = (ok: boolean, findings: string[], fault?: StageCheck['fault']): StageCheck => ({
    stage: request.stage,
    model,
    ok,
    findings,
    ...(fault ? { fault } : {}),
    seconds: (performance.now() - started) / 1000,
  });
  const refused = () => {
    const learned = warnings.filter((w) => /refused a parameter/i.test(w));
    return `parameters refused: ${learned.length ? learned.map((w) => w.replace(/^.*?: /, '')).join('; ') : 'none'}`;
  };
  let timer: NodeJS.Timeout | undefined;
  // Twice the timeout a silent endpoint meets first: the first chunk's when streaming (the
  // whole-reply bound above it is minutes), else the whole reply's.
  const deadlineMs = opts.deadlineMs ?? (config.stream ? config.firstTokenTimeoutMs : config.timeoutMs) * 2;
  try {
    const outcome = await Promise.race([
      llm.complete(request).then(
        (reply) => ({ kind: 'reply' as const, reply }),
        (error: unknown) => ({ kind: 'error' as const, error }),
      ),
      faulted.then((fault) => ({ kind: 'fault' as const, fault })),
      new Promise<{ kind: 'timeout' }>((resolve) => {
        timer = setTimeout(() => resolve({ kind: 'timeout' }), deadlineMs);
      }),
    ]);
    if (outcome.kind === 'fault') {
      const f = outcome.fault;
      return done(false, [`cannot run: fix ${f.configKey}: ${f.fix}`], {
        configKey: f.configKey,
        fix: f.fix,
        message: f.message,
        status: f.status,
      });
    }
    if (outcome.kind === 'timeout')
      return done(false, [
        `no answer within ${(deadlineMs / 1000).toFixed(0)} s: the endpoint is down or too slow (llm.baseUrl, llm.firstTokenTimeoutMs, llm.timeoutMs)`,
      ]);
    if (outcome.kind === 'error') {
      const e = outcome.error as Error;
      if (e instanceof LlmReplyError)
        return done(false, [
          'auth and model accepted',
          `structured output: replies do not match the schema even after a repair: ${e.reason}`,
          refused(),
        ]);
      const fix =
        "the endpoint refuses this stage's request (its prompt, parameters and response_format json_schema): point llm.baseUrl at a server that takes it, or change the parameters it names";
      return done(false, [`cannot run: fix llm.baseUrl: ${fix}`, refused()], {
        configKey: 'llm.baseUrl',
        fix,
        message: e.message,
        status: (e as { status?: number }).status,
      });
    }
    const { reply } = outcome;
    const findings = [
      `auth and model accepted (${reply.model})`,
      'structured output (json_schema) accepted: the reply matches the schema',
      `thinking: ${reasoningTokens > 0 ? `seen (${reasoningTokens} reasoning tokens)` : 'none seen'}`,
      refused(),
      `context: a prompt of ${reply.usage.inputTokens} tokens and a reply of ${reply.usage.outputTokens} fit`,
      capacity(llm.concurrency()[0]),
    ];
    if (request.stage !== 'verify' || !opts.verifier) return done(true, findings);
    // A verdict outside the format's tokens pays nothing: every undecided reward keeps the rules' 0.
    const { verdict } = reply.value as VerifyReply;
    const score = verdictScore(opts.verifier, verdict);
    const tokens = VERDICTS[opts.verifier].tokens.join(', ');
    if (score === null) {
      const fix = `the model's verdicts are not ${opts.verifier}'s (${tokens}): set reward.verifier.prompt to the format it was trained on, or point llm.stages.verify at a verifier model`;
      return done(
        false,
        [...findings, `verdict "${verdict}": cannot run: fix reward.verifier.prompt: ${fix}`],
        {
          configKey: 'reward.verifier.prompt',
          fix,
          message: `verdict "${verdict}"`,
          status: undefined,
        },
      );
    }
    return done(true, [
      ...findings,
      `verdict "${verdict}" (${score ? 'pays' : 'does not pay'}) on an answer that says the reference in other words`,
    ]);
  } finally {
    clearTimeout(timer);
    llm.stop();
    await llm.close();
  }
}

/** What the endpoint says of its capacity, and so where `run`'s adaptive limit starts. */
function capacity(c: ConcurrencyState | undefined): string {
  if (!c) return 'capacity: unknown';
  return c.stated
    ? `capacity: the server states ${c.stated} slots: run sends up to ${c.bound} at once from the start`
    : `capacity: the server states none: run finds it from latency, from 1 up to ${c.bound} (llm.concurrency)`;
}

/**
 * What `run` says at start, free of charge: the endpoint's model list (GET /models, no tokens),
 * read for the two mistakes it can show, a key refused and a stage's model not served. Anything
 * inconclusive (no such route, a timeout) says nothing: the calls themselves decide (faults.ts).
 */
export async function preflightAtStart(
  config: LlmConfig,
  env: NodeJS.ProcessEnv = process.env,
  timeoutMs = 5_000,
): Promise<{ stage: LlmStage | null; configKey: string; fix: string; message: string }[]> {
  const provider = config.provider ?? (config.baseUrl ? 'openai' : 'local');
  if (provider !== 'openai') return [];
  const base = (config.baseUrl ?? 'https://api.openai.com/v1').replace(/\/$/, '');
  const key = env[config.apiKeyEnv] ?? '';
  let res: Response;
  try {
    res = await fetch(`${base}/models`, {
      headers: { authorization: `Bearer ${key}` },
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch {
    return [];
  }
  const text = await res.text().catch(() => '');
  const secretless = key.length >= 4 ? text.split(key).join('[redacted]') : text;
  if (res.status === 401 || res.status === 403) {
    let message = secretless.slice(0, 300);
    try {
      const body = JSON.parse(secretless) as { error?: { message?: string } | string; message?: string };
      message =
        (typeof body.error === 'string' ? body.error : body.error?.message) ?? body.message ?? message;
    } catch {}
    return [
      {
        stage: null,
        configKey: 'llm.apiKeyEnv',
        fix: `the endpoint refuses the API key: set ${config.apiKeyEnv} (the variable llm.apiKeyEnv names) to a key ${base} accepts`,
        message: `${res.status} ${message}`,
      },
    ];
  }
  if (!res.ok) return [];
  let served: string[];
  try {
    served = ((JSON.parse(text) as { data?: { id?: unknown }[] }).data ?? [])
      .map((m) => m.id)
      .filter((id): id is string => typeof id === 'string');
  } catch {
    return [];
  }
  if (served.length === 0) return [];
  const found: { stage: LlmStage; configKey: string; fix: string; message: string }[] = [];
  // The pipeline's stages: the verifier's is the reward's, asked only when reward.verifier is set.
  for (const stage of LlmStage.options.filter((s) => s !== 'verify')) {
    const own = config.stages[stage]?.model;
    const model = own ?? config.model;
    if (served.includes(model)) continue;
    const configKey = own ? `llm.stages.${stage}.model` : 'llm.model';
    found.push({
      stage,
      configKey,
      fix: `the endpoint serves no model "${model}": set ${configKey} to one it serves (${served.slice(0, 5).join(', ')}${served.length > 5 ? ', ...' : ''})`,
      message: `GET ${base}/models does not list "${model}"`,
    });
  }
  return found;
}
