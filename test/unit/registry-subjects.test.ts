import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { pipelineTopology } from '../../processors/pipeline.js';
import { RECORD_SCHEMA_NAMES, type RecordSchemaName } from '../../schemas/index.js';
import {
  registrySchemaOf,
  SUBJECT_GENERATIONS,
  subjectOf,
  subjectOfGeneration,
} from '../../schemas/registry-subjects.js';
import { TopicCodecs } from '../../topology/codec.js';
import { parseKafkaUrl } from '../../topology/runtime/kafka/config.js';
import { sampleArticle } from '../fixtures/records.js';
import { PREVIOUS, previousRecord } from '../upgrade/previous-release.js';

const RUNS = { numRuns: 100, seed: Number(process.env.FC_SEED ?? 32) };
const ajv = new Ajv({ strict: false, validateFormats: false });

/** Every object node of a JSON Schema that names its properties. */
function objectsOf(node: unknown, out: Record<string, unknown>[] = []): Record<string, unknown>[] {
  if (Array.isArray(node)) for (const n of node) objectsOf(n, out);
  else if (node && typeof node === 'object') {
    const o = node as Record<string, unknown>;
    if (o.type === 'object' && o.properties) out.push(o);
    for (const v of Object.values(o)) objectsOf(v, out);
  }
  return out;
}

interface SchemaNode {
  type?: string;
  properties?: Record<string, SchemaNode>;
  required?: string[];
  [keyword: string]: unknown;
}

/** `now` is `recorded` with optional properties added to its objects, and nothing else changed. */
function expectOnlyOptionalAdded(recorded: SchemaNode, now: SchemaNode, at: string): void {
  const { properties: before, required: requiredBefore, title: _t, ...rest } = recorded;
  const { properties: after, required: requiredAfter, title: _u, ...restNow } = now;
  expect(restNow, at).toEqual(rest);
  expect(requiredAfter ?? [], at).toEqual(requiredBefore ?? []);
  for (const [name, node] of Object.entries(before ?? {})) {
    expect(after?.[name], `${at}.${name}`).toBeDefined();
    expectOnlyOptionalAdded(node, after![name]!, `${at}.${name}`);
  }
}

/** A value of each record kind as the engine writes it now: the previous release's, read and written again. */
function writtenNow(): [RecordSchemaName, string, unknown][] {
  const topology = pipelineTopology();
  const codecs = new TopicCodecs(topology);
  const byKind = new Map<string, string>();
  for (const t of topology.topics) if (t.schema && !byKind.has(t.schema)) byKind.set(t.schema, t.name);
  const out: [RecordSchemaName, string, unknown][] = [];
  for (const [topic, { schema }] of Object.entries(PREVIOUS.topics)) {
    const kind = topology.topics.find((t) => t.name === topic)!.schema!;
    out.push([kind, topic, JSON.parse(codecs.encode(topic, codecs.decode(topic, previousRecord(schema))))]);
  }
  const call = {
    callId: 'c1',
    requestKey: 'k1',
    stage: 'relevance',
    provider: 'openai',
    model: 'm',
    inputTokens: 1,
    outputTokens: 1,
    latencyMs: 5,
    costUsd: 0,
    cached: false,
    attempts: 1,
    repair: false,
    at: 0,
  };
  out.push(['llm-call', byKind.get('llm-call')!, JSON.parse(codecs.encode(byKind.get('llm-call')!, call))]);
  // The dedup's records are new in this release: written with a graded QA of the previous one.
  const graded = out.find(([kind]) => kind === 'graded-qa')![2];
  const band = { qaId: 'q1', band: 'exact', bands: 17, signature: [1, 2, 3], order: '2020-05-01/q1', graded };
  const verdict = { qaId: 'q1', band: '3', bands: 17, duplicateOf: 'q0', similarity: 0.9, overtaken: true };
  const withdrawal = { qaId: 'q1', duplicateOf: 'q0', kind: 'near', similarity: 0.9 };
  for (const [kind, value] of [
    ['qa-band', band],
    ['band-verdict', verdict],
    ['qa-withdrawal', withdrawal],
    // New in this release too: a fact the LLM layer learned of an endpoint.
    ['llm-endpoint-fact', { endpoint: 'http://llm', model: 'm', facts: { dialect: { maxTokens: false } } }],
  ] as const)
    out.push([kind, byKind.get(kind)!, JSON.parse(codecs.encode(byKind.get(kind)!, value))]);
  return out;
}

describe('registry subjects (issue 32)', () => {
  it('registers closed content models, where a new optional field is a compatible change', () => {
    for (const name of RECORD_SCHEMA_NAMES) {
      const objects = objectsOf(JSON.parse(registrySchemaOf(name)));
      expect(objects.length).toBeGreaterThan(0);
      for (const o of objects) expect(o.additionalProperties, name).toBeDefined();
    }
  });

  it('what the engine writes of every kind is valid under the registered (closed) schema', () => {
    const written = writtenNow();
    expect(new Set(written.map(([kind]) => kind))).toEqual(new Set(RECORD_SCHEMA_NAMES));
    for (const [kind, , value] of written) {
      const validate = ajv.compile(JSON.parse(registrySchemaOf(kind)));
      expect(validate(value), `${kind}: ${ajv.errorsText(validate.errors)}`).toBe(true);
    }
  });

  it('llm-endpoint-fact on its recorded generation: every property the recorded schema named stays as it was, and a fact added since (interruptsStreams, dialect.stringLengths) is optional', () => {
    // What test/services/schema-evolution.test.ts asks the registry, checked here without one: in a
    // closed content model, a new optional property is the BACKWARD change.
    const recorded = JSON.parse(
      readFileSync(new URL('../fixtures/registered-schemas.json', import.meta.url), 'utf8'),
    )['llm-endpoint-fact'] as { generation: number; schema: SchemaNode };
    expect(SUBJECT_GENERATIONS['llm-endpoint-fact']).toBe(recorded.generation);
    const now = JSON.parse(registrySchemaOf('llm-endpoint-fact')) as SchemaNode;
    expectOnlyOptionalAdded(recorded.schema, now, 'llm-endpoint-fact');
    const facts = now.properties!.facts!;
    expect(Object.keys(facts.properties!)).toContain('interruptsStreams');
    expect(facts.required ?? []).not.toContain('interruptsStreams');
  });

  it('a value with properties no schema names is written without them (property): the closed model holds', () => {
    const codecs = new TopicCodecs(pipelineTopology());
    const validate = ajv.compile(JSON.parse(registrySchemaOf('article')));
    fc.assert(
      fc.property(
        fc.dictionary(
          fc.string({ minLength: 1 }).filter((k) => !(k in sampleArticle) && k !== '__proto__'),
          fc.jsonValue(),
        ),
        (extra) => validate(JSON.parse(codecs.encode('articles', { ...sampleArticle, ...extra }))),
      ),
      RUNS,
    );
  });

  it('names subjects by generation: <topic>-value, then <topic>-v<N>-value', () => {
    expect(subjectOfGeneration('bioalchemy.articles', 1)).toBe('bioalchemy.articles-value');
    expect(subjectOf('bioalchemy.articles', 'article')).toBe(
      `bioalchemy.articles-v${SUBJECT_GENERATIONS.article}-value`,
    );
    expect(SUBJECT_GENERATIONS.article).toBeGreaterThan(1);
  });
});

describe('the log URL (one way to set the registry and its policy)', () => {
  const registry = 'registry=http://127.0.0.1:8081';

  it('runs every subject under BACKWARD unless it says a stricter rule', () => {
    expect(parseKafkaUrl(`kafka://h:9092?${registry}`).compatibility).toBe('BACKWARD');
    expect(parseKafkaUrl(`kafka://h:9092?${registry}&compatibility=FULL_TRANSITIVE`).compatibility).toBe(
      'FULL_TRANSITIVE',
    );
    for (const weaker of ['NONE', 'FORWARD', 'backward'])
      expect(() => parseKafkaUrl(`kafka://h:9092?${registry}&compatibility=${weaker}`)).toThrow(
        /compatibility must be one of BACKWARD, BACKWARD_TRANSITIVE, FULL, FULL_TRANSITIVE/,
      );
    expect(() => parseKafkaUrl('kafka://h:9092?compatibility=FULL')).toThrow(/add registry=/);
  });

  it('refuses a parameter it does not know, naming it', () => {
    expect(() => parseKafkaUrl('kafka://h:9092?registy=http://x:8081')).toThrow(
      /unknown parameter "registy"/,
    );
    expect(() => parseKafkaUrl('kafka://h:9092?client=rdkafka&app=a')).not.toThrow();
  });
});
