import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { z } from 'zod';
import { Dialect } from './providers/openai.js';

/**
 * What the layer learned of one endpoint's model: the fields it refused (its dialect), the context
 * its 400 named, the budget a thinking model needed, and the concurrency its server took. Learned
 * each at the price of a refused request, a cut-off reply or a ramp from 1: kept with the data
 * folder, a restart starts from them and pays none of that again.
 */
export const EndpointFacts = z
  .object({
    /** Partial: a field added to the dialect since the file was written takes its default. */
    dialect: Dialect.partial().optional(),
    contextTokens: z.number().int().positive().optional(),
    thinkingBudget: z.number().int().positive().optional(),
    concurrencyLimit: z.number().int().positive().optional(),
  })
  .strict();
export type EndpointFacts = z.infer<typeof EndpointFacts>;

const MemoryFile = z
  .object({
    version: z.literal(1),
    /** By endpoint and model: `<endpoint> <model>`. */
    endpoints: z.record(z.string(), EndpointFacts),
  })
  .strict();

const keyOf = (endpoint: string, model: string) => `${endpoint} ${model}`;

/** The facts of every endpoint and model, in one JSON file written whole (a rename) on each change. */
export class EndpointMemory {
  private constructor(
    private readonly path: string | undefined,
    private readonly endpoints: Record<string, EndpointFacts>,
  ) {}

  /** Kept nowhere: a layer with no data folder (tests, `llm check`) learns for its own life only. */
  static inMemory(): EndpointMemory {
    return new EndpointMemory(undefined, {});
  }

  /** The file's facts; none when it is not there yet. A file that does not parse is an error naming it. */
  static open(path: string): EndpointMemory {
    if (!existsSync(path)) return new EndpointMemory(path, {});
    const parsed = MemoryFile.safeParse(JSON.parse(readFileSync(path, 'utf8')));
    if (!parsed.success)
      throw new Error(
        `${path}: not what the LLM layer keeps of its endpoints (${z.prettifyError(parsed.error)}); delete it to learn again`,
      );
    return new EndpointMemory(path, parsed.data.endpoints);
  }

  get(endpoint: string, model: string): EndpointFacts {
    return this.endpoints[keyOf(endpoint, model)] ?? {};
  }

  /** Adds what was learned; written only when it changes something. */
  learn(endpoint: string, model: string, facts: EndpointFacts): void {
    const key = keyOf(endpoint, model);
    const before = this.endpoints[key] ?? {};
    const after = { ...before, ...facts };
    if (JSON.stringify(after) === JSON.stringify(before)) return;
    this.endpoints[key] = after;
    if (!this.path) return;
    mkdirSync(dirname(this.path), { recursive: true });
    // Workers of one data folder write it too: each its own temporary file, renamed whole.
    const tmp = `${this.path}.${process.pid}.tmp`;
    writeFileSync(tmp, `${JSON.stringify({ version: 1, endpoints: this.endpoints }, null, 2)}\n`);
    renameSync(tmp, this.path);
  }
}
