import { existsSync } from 'node:fs';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Llm, MemoryJournal } from '../../llm/index.js';
import { FREEFORM_PROMPT, FreeformReply, freeformMessages } from '../../llm/prompts/freeform.js';
import { MCQ_PROMPT, McqReply, mcqMessages } from '../../llm/prompts/mcq.js';
import { INTERROGATIVES, STAGE_GRAMMARS } from '../../llm/providers/local-grammars.js';
import { LlmConfig } from '../../schemas/llm.js';
import { LOCAL_MODEL } from '../setup/model.js';

// The real local model: the unit project's global setup (test/setup/model.ts) fetches it with
// deploy/model.sh, or BIOALCHEMY_LOCAL_MODEL names one. node-llama-cpp is an optional dependency
// with a prebuilt binary for this platform: here, it must have installed.
const modelPath = process.env.BIOALCHEMY_LOCAL_MODEL ?? LOCAL_MODEL;

const Relevance = z.object({ relevant: z.boolean(), reason: z.string().max(120) }).strict();

describe('local GGUF model', () => {
  it('is installed: node-llama-cpp loads and the model file is there', async () => {
    expect(existsSync(modelPath)).toBe(true);
    await expect(import('node-llama-cpp' as string)).resolves.toBeDefined();
  });

  it('answers with a grammar-constrained reply that validates, journaled like any other', async () => {
    const journal = new MemoryJournal();
    // Room for the reason the model writes: the grammar bounds the shape, not the string's length,
    // and at 96 tokens the model's reason here was cut off mid-string.
    const llm = new Llm(LlmConfig.parse({ provider: 'local', modelPath, maxTokens: 256 }), {
      journal,
      log: pino({ level: 'silent' }),
    });
    try {
      const request = {
        stage: 'relevance' as const,
        schema: Relevance,
        promptVersion: 'relevance-v1',
        messages: [
          {
            role: 'system' as const,
            content: 'Decide whether the passage is about biology. Answer in JSON.',
          },
          { role: 'user' as const, content: 'Passage: mitochondria make ATP by oxidative phosphorylation.' },
        ],
      };
      const reply = await llm.complete(request);
      expect(Relevance.parse(reply.value)).toEqual(reply.value);
      expect(reply.model).toBe('gemma-3-270m-q4_k_m.gguf');
      expect(reply.usage.outputTokens).toBeGreaterThan(0);
      expect(journal.size).toBeGreaterThanOrEqual(1);
      expect((await llm.complete(request)).cached).toBe(true);
    } finally {
      await llm.close();
    }
  }, 300_000);

  it('compiles the grammars of the generation stages', async () => {
    const lib = (await import('node-llama-cpp' as string)) as {
      getLlama(o: { gpu: false }): Promise<{ createGrammar(o: { grammar: string }): Promise<unknown> }>;
    };
    const llama = await lib.getLlama({ gpu: false });
    for (const [stage, grammar] of Object.entries(STAGE_GRAMMARS))
      await expect(llama.createGrammar({ grammar }), stage).resolves.toBeDefined();
  }, 120_000);

  // Issue 34: what grade refuses for its form, the small model cannot write.
  it('writes questions grade can take: an interrogative and one "?", 4-5 options with a key among them, short answers', async () => {
    const llm = new Llm(LlmConfig.parse({ provider: 'local', modelPath, maxTokens: 700 }), {
      journal: new MemoryJournal(),
      log: pino({ level: 'silent' }),
    });
    const title = 'Trehalose protects tardigrades during drying';
    const passage =
      'Tardigrades that were dried slowly accumulated trehalose to about 2% of their dry mass and survived for ten years. ' +
      'Animals lacking the cytoplasmic abundant heat soluble proteins died within a day of desiccation.';
    const QUESTION = new RegExp(`^(${INTERROGATIVES.join('|')}) [^?]+\\?$`);
    const ask = async <T extends z.ZodType>(stage: 'mcq' | 'freeform', schema: T, promptVersion: string) =>
      schema.parse(
        (
          await llm.complete({
            stage,
            schema,
            promptVersion,
            messages: (stage === 'mcq' ? mcqMessages : freeformMessages)(title, passage),
          })
        ).value,
      ) as z.infer<T>;
    try {
      const mcq = await ask('mcq', McqReply, MCQ_PROMPT);
      expect(mcq.questions).toHaveLength(1);
      for (const q of mcq.questions) {
        expect(q.question).toMatch(QUESTION);
        expect([4, 5]).toContain(q.options.length);
        expect('ABCDE'.slice(0, q.options.length)).toContain(q.answer);
        for (const o of q.options) expect(o).not.toMatch(/[<>]/);
      }
      const free = await ask('freeform', FreeformReply, FREEFORM_PROMPT);
      expect(free.questions).toHaveLength(1);
      for (const q of free.questions) {
        expect(q.question).toMatch(QUESTION);
        expect(q.answer.length).toBeLessThanOrEqual(40);
        expect(q.answer).not.toMatch(/[.?!<>]$/);
      }
    } finally {
      await llm.close();
    }
  }, 300_000);
});
