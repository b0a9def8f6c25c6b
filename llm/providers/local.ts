import { availableParallelism } from 'node:os';
import { basename } from 'node:path';
import type { LlmMessage } from '../../schemas/llm.js';
import { TransientError } from '../errors.js';
import { Semaphore } from '../flow/semaphore.js';
import { STAGE_GRAMMARS } from './local-grammars.js';
import type { Provider, ProviderRequest } from './provider.js';

/**
 * The part of node-llama-cpp 3.x this provider uses. The package is an optional dependency loaded
 * on first use, so its types are not required to build; these are checked at run time by use.
 */
interface NodeLlamaCpp {
  getLlama(options: { gpu: false | 'auto' }): Promise<Llama>;
  LlamaChatSession: new (options: {
    contextSequence: Sequence;
    chatWrapper: unknown;
    autoDisposeSequence: boolean;
  }) => ChatSession;
  GemmaChatWrapper: new () => unknown;
}
interface Llama {
  loadModel(options: { modelPath: string }): Promise<Model>;
  createGrammarForJsonSchema(schema: unknown): Promise<unknown>;
  createGrammar(options: { grammar: string }): Promise<unknown>;
  dispose(): Promise<void>;
}
interface Model {
  createContext(options: { contextSize: number; sequences: number; threads: number }): Promise<Context>;
  dispose(): Promise<void>;
}
interface Context {
  getSequence(): Sequence;
  dispose(): Promise<void>;
}
interface Sequence {
  tokenMeter: { usedInputTokens: number; usedOutputTokens: number };
  dispose(): void;
}
type HistoryItem = { type: 'system' | 'user'; text: string } | { type: 'model'; response: string[] };
interface ChatSession {
  setChatHistory(history: HistoryItem[]): void;
  promptWithMeta(
    prompt: string,
    options: { grammar: unknown; maxTokens: number; temperature: number; signal: AbortSignal },
  ): Promise<{ responseText: string; stopReason: string }>;
  dispose(): void;
}

interface Loaded {
  lib: NodeLlamaCpp;
  llama: Llama;
  model: Model;
  context: Context;
  sequence: Sequence;
}

export interface LocalOptions {
  modelPath: string;
  contextSize?: number;
  /** llama.cpp threads; the cores less one by default. */
  threads?: number;
}

/**
 * A GGUF model in this process through node-llama-cpp, replies constrained by a grammar built from
 * the JSON Schema. One generation at a time (two CPU cores gain nothing from more); a request's
 * timeout starts when its generation does, not while it queues.
 */
export class LocalProvider implements Provider {
  private loading?: Promise<Loaded>;
  private readonly grammars = new Map<string, Promise<unknown>>();
  private readonly turn = new Semaphore(1);

  constructor(private readonly opts: LocalOptions) {}

  async chat(request: ProviderRequest) {
    const { lib, llama, sequence } = await this.load();
    const grammar = await this.grammar(llama, request.schema);
    await this.turn.acquire();
    const { history, prompt } = split(request.messages);
    // One sequence serves every call, one after another: a session reuses the evaluated prefix
    // (system prompt) its predecessor left, and a disposed sequence is not free again at once.
    // The wrapper node-llama-cpp resolves from Gemma's Jinja template is ~100x slower (DESIGN.md).
    const session = new lib.LlamaChatSession({
      contextSequence: sequence,
      chatWrapper: new lib.GemmaChatWrapper(),
      autoDisposeSequence: false,
    });
    const meter = sequence.tokenMeter;
    const [inputBefore, outputBefore] = [meter.usedInputTokens, meter.usedOutputTokens];
    try {
      session.setChatHistory(history);
      const signal = AbortSignal.timeout(request.timeoutMs);
      const reply = await session.promptWithMeta(prompt, {
        grammar,
        maxTokens: request.maxTokens,
        // Unset means the model's default; greedy is this one's (a grammar does the rest).
        temperature: request.temperature ?? 0,
        signal,
      });
      if (signal.aborted)
        throw new TransientError('timeout', `local generation over ${request.timeoutMs} ms`);
      return {
        content: reply.responseText,
        model: basename(this.opts.modelPath),
        usage: {
          inputTokens: meter.usedInputTokens - inputBefore,
          outputTokens: meter.usedOutputTokens - outputBefore,
        },
        truncated: reply.stopReason === 'maxTokens',
      };
    } catch (e) {
      if ((e as Error).name === 'AbortError') {
        throw new TransientError('timeout', `local generation over ${request.timeoutMs} ms`);
      }
      throw e;
    } finally {
      session.dispose();
      this.turn.release();
    }
  }

  /** One sequence, one call at a time (`turn`): more in flight would only wait here. */
  async statedCapacity(): Promise<number> {
    return 1;
  }

  async close(): Promise<void> {
    if (!this.loading) return;
    const { llama, model, context, sequence } = await this.loading;
    sequence.dispose();
    await context.dispose();
    await model.dispose();
    await llama.dispose();
  }

  private load(): Promise<Loaded> {
    this.loading ??= (async () => {
      const lib = await importOptional();
      const llama = await lib.getLlama({ gpu: 'auto' });
      const model = await llama.loadModel({ modelPath: this.opts.modelPath });
      // llama.cpp's default thread count can exceed the cores this process may use, and its
      // threads spin: oversubscribed, a reply takes minutes instead of seconds. One core is left
      // to the event loop and the rest of the machine: on 2 busy cores (load 5), 2 threads took
      // 75 s for five calls where 1 took 27 s; idle, both took 27 s (BENCHMARKS.md).
      const context = await model.createContext({
        contextSize: this.opts.contextSize ?? 4096,
        sequences: 1,
        threads: this.opts.threads ?? Math.max(1, availableParallelism() - 1),
      });
      return { lib, llama, model, context, sequence: context.getSequence() };
    })();
    return this.loading;
  }

  /** The stage's own grammar where it has one (local-grammars.ts), else one from its JSON Schema. */
  private grammar(llama: Llama, schema: ProviderRequest['schema']): Promise<unknown> {
    const own = STAGE_GRAMMARS[schema.name];
    const key = own ?? JSON.stringify(schema.schema);
    let grammar = this.grammars.get(key);
    if (!grammar) {
      grammar = own
        ? llama.createGrammar({ grammar: own })
        : llama.createGrammarForJsonSchema(boundedForGrammar(schema.schema));
      this.grammars.set(key, grammar);
    }
    return grammar;
  }
}

/** The longest string, and the most items of an array, a reply may have where its schema sets none. */
const GRAMMAR_MAX_STRING = 240;
const GRAMMAR_MAX_ITEMS = 8;

/**
 * The schema as the grammar gets it, bounded where the schema is not: a small model tends to go on
 * writing a string or an array until maxTokens (a reply cut there is no JSON at all), so strings
 * and arrays get a length cap; and an integer range (1-5 scores), which the grammar builder
 * ignores, becomes the enum of its values. The reply is still validated against the stage's schema.
 */
function boundedForGrammar(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(boundedForGrammar);
  if (typeof schema !== 'object' || schema === null) return schema;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(schema))
    out[key] = key === 'enum' || key === 'const' ? value : boundedForGrammar(value);
  const { type, minimum, maximum } = out;
  if (type === 'string' && !('enum' in out) && !('const' in out) && !('format' in out))
    out.maxLength ??= GRAMMAR_MAX_STRING;
  if (type === 'array') out.maxItems ??= GRAMMAR_MAX_ITEMS;
  if (
    type === 'integer' &&
    Number.isInteger(minimum) &&
    Number.isInteger(maximum) &&
    (maximum as number) - (minimum as number) <= 20
  ) {
    const { type: _, minimum: __, maximum: ___, ...rest } = out;
    return {
      ...rest,
      enum: Array.from(
        { length: (maximum as number) - (minimum as number) + 1 },
        (_, i) => (minimum as number) + i,
      ),
    };
  }
  return out;
}

async function importOptional(): Promise<NodeLlamaCpp> {
  // A specifier in a variable keeps TypeScript from requiring the optional package to build.
  const name = 'node-llama-cpp';
  try {
    return (await import(name)) as NodeLlamaCpp;
  } catch (e) {
    throw new Error(
      `the local LLM provider needs the optional package node-llama-cpp: ${(e as Error).message}`,
    );
  }
}

/** Chat messages as node-llama-cpp wants them: a history, then the last user message as the prompt. */
function split(messages: LlmMessage[]): { history: HistoryItem[]; prompt: string } {
  const last = messages.at(-1);
  if (last?.role !== 'user') throw new Error('the last message to the local model must be the user prompt');
  const history = messages
    .slice(0, -1)
    .map(
      (m): HistoryItem =>
        m.role === 'assistant' ? { type: 'model', response: [m.content] } : { type: m.role, text: m.content },
    );
  return { history, prompt: last.content };
}
