// The test LLM server as its own process, for tests that kill -9 a client (or the server):
//   npx tsx test/llm-server/main.ts [--port N] [--seed N] [--latency-ms N | --median-ms N --p99-ms N]
//     [--responder schema|pipeline|arbitrary-judge]   (default schema: arbitrary valid values for every schema)
//     [--dialect NAME]   (how the server speaks, a preset of dialects.ts: plain, vllm-reasoning, llama-cpp-python, ...)
//     [--model NAME]... [--api-key KEY] [--always-500]   (refuse other models 404, other keys 401; every request 500)
//     [--slots N [--states-slots]]   (N decoding slots and a FIFO queue, as llama-server; said at GET /props)
// Prints its base URL on the first line of stdout once it listens; GET /stats, POST /control.
import { parseArgs } from 'node:util';
import { arbitraryJudgeResponder } from './arbitrary-judge-responder.js';
import { DIALECTS } from './dialects.js';
import { pipelineResponder } from './pipeline-responder.js';
import { schemaResponder, start } from './server.js';

const RESPONDERS = {
  schema: schemaResponder,
  pipeline: pipelineResponder,
  'arbitrary-judge': arbitraryJudgeResponder,
};

const { values } = parseArgs({
  options: {
    port: { type: 'string', default: '0' },
    seed: { type: 'string', default: '1' },
    'latency-ms': { type: 'string' },
    'median-ms': { type: 'string' },
    'p99-ms': { type: 'string' },
    responder: { type: 'string', default: 'schema' },
    dialect: { type: 'string', default: 'plain' },
    // A config mistake to answer as a real server does: another model 404, another key 401.
    model: { type: 'string', multiple: true },
    'api-key': { type: 'string' },
    // Every request answered 500 with the same message (a server that refuses the request shape).
    'always-500': { type: 'boolean' },
    slots: { type: 'string' },
    'states-slots': { type: 'boolean' },
  },
});
const dialect = DIALECTS[values.dialect as keyof typeof DIALECTS];
if (!dialect) {
  process.stderr.write(`--dialect: one of ${Object.keys(DIALECTS).join(', ')}\n`);
  process.exit(2);
}
const responder = RESPONDERS[values.responder as keyof typeof RESPONDERS];
if (!responder) {
  process.stderr.write(`--responder: one of ${Object.keys(RESPONDERS).join(', ')}\n`);
  process.exit(2);
}
const server = await start({
  port: Number(values.port),
  seed: Number(values.seed),
  responder,
  dialect,
  ...(values.model ? { models: values.model } : {}),
  ...(values['api-key'] === undefined ? {} : { apiKey: values['api-key'] }),
  ...(values.slots ? { slots: Number(values.slots), statesSlots: values['states-slots'] ?? false } : {}),
  ...(values['always-500'] ? { faults: { rate: 1, kinds: ['server-error' as const] } } : {}),
  latency: values['median-ms']
    ? {
        kind: 'lognormal',
        medianMs: Number(values['median-ms']),
        p99Ms: Number(values['p99-ms'] ?? values['median-ms']),
      }
    : { kind: 'fixed', ms: Number(values['latency-ms'] ?? 0) },
});
process.stdout.write(`${server.url}\n`);
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.on(signal, () => void server.stop().then(() => process.exit(0)));
}
