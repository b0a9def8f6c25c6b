import { existsSync } from 'node:fs';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { Llm, MemoryJournal } from '../../llm/index.js';
import { LlmConfig } from '../../schemas/llm.js';
import { LOCAL_MODEL } from '../model-setup.js';

// The real local model: the unit project's global setup (test/model-setup.ts) fetches it with
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
});
