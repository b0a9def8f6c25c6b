import { writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ingestFile, ingestProcessor } from '../../processors/ingest.js';
import { pipelineTopology } from '../../processors/pipeline.js';
import type { DeadLetter } from '../../schemas/dead-letter.js';
import { readPath } from '../../sources/read.js';
import { EngineMetrics } from '../../topology/metrics.js';
import { EmbeddedRuntime } from '../../topology/runtime/embedded.js';
import { ProcessorTask } from '../../topology/task.js';
import { readAll } from '../conformance/suite.js';
import { collect, scratchDir } from './helpers/collect.js';
import { PUBMED_TAIL, pubmedRecord } from './helpers/medline-gen.js';

// XML bombs: entity expansion (billion laughs, quadratic blow-up) and external entities (file://,
// http://, parameter entities) are refused with one dead letter, before any reference is resolved;
// nothing is fetched, nothing is read from the disk. An external DTD named in a DOCTYPE (every JATS
// file names one) is neither fetched nor a reason to refuse.

const scratch = scratchDir();
const SECRET = 'root:x:0:0:the-secret-line-no-article-may-carry';
const secretFile = join(scratch.dir, 'passwd');
writeFileSync(secretFile, SECRET);

let server: Server;
let base = '';
const fetched: string[] = [];
beforeAll(async () => {
  server = createServer((req, res) => {
    fetched.push(req.url ?? '');
    res.end(`<!ENTITY leak "${SECRET}">`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
  scratch.cleanup();
});

const withDoctype = (subset: string, title = '&e;') =>
  `<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet [\n${subset}\n]>\n<PubmedArticleSet>${pubmedRecord(
    1,
  ).replace(
    /<ArticleTitle>.*?<\/ArticleTitle>/,
    `<ArticleTitle>${title}</ArticleTitle>`,
  )}${pubmedRecord(2)}${PUBMED_TAIL}`;

const laughs = (levels: number) => {
  const lines = ['<!ENTITY lol0 "lol">'];
  for (let i = 1; i <= levels; i++) lines.push(`<!ENTITY lol${i} "${`&lol${i - 1};`.repeat(10)}">`);
  return lines.join('\n');
};

const bombs: Record<string, { xml: () => string; reason: RegExp }> = {
  'billion laughs (10 levels of 10)': {
    xml: () => withDoctype(laughs(10), '&lol10;'),
    reason: /^refused XML: entity "lol1" refers to other entities \(nested expansion\)$/,
  },
  'quadratic blow-up (one 100,000-character entity, referenced 50,000 times)': {
    xml: () => withDoctype(`<!ENTITY big "${'a'.repeat(100_000)}">`, '&big;'.repeat(50_000)),
    reason: /^refused XML: entity "big" of 100000 characters \(at most 64\)$/,
  },
  'external entity, file://': {
    xml: () => withDoctype(`<!ENTITY e SYSTEM "file://${secretFile}">`),
    reason: new RegExp(`^refused XML: external entity "e" \\(SYSTEM file://${secretFile}\\), never fetched$`),
  },
  'external entity, a bare path': {
    xml: () => withDoctype(`<!ENTITY e SYSTEM "${secretFile}">`),
    reason: /^refused XML: external entity "e" \(SYSTEM .*passwd\), never fetched$/,
  },
  'external entity, http://': {
    xml: () => withDoctype(`<!ENTITY e SYSTEM "${base}/entity">`),
    reason: /^refused XML: external entity "e" \(SYSTEM http:\/\/127\.0\.0\.1:\d+\/entity\), never fetched$/,
  },
  'external entity, PUBLIC': {
    xml: () => withDoctype(`<!ENTITY e PUBLIC "-//X//Y" "${base}/public">`),
    reason: /^refused XML: external entity "e" \(PUBLIC -\/\/X\/\/Y\), never fetched$/,
  },
  'parameter entity pulling an external DTD (out-of-band XXE)': {
    xml: () => withDoctype(`<!ENTITY % remote SYSTEM "${base}/oob.dtd">\n%remote;`),
    reason: /^refused XML: parameter entity "remote"$/,
  },
};

function expectRefused(deadLetters: DeadLetter[], reason: RegExp) {
  expect(deadLetters).toHaveLength(1);
  expect(deadLetters[0]!.reason).toMatch(reason);
  expect(deadLetters[0]!.origin).toMatchObject({
    kind: 'file',
    position: expect.stringMatching(/^line \d+/),
  });
  expect(Buffer.byteLength(deadLetters[0]!.payload)).toBeLessThanOrEqual(64 * 1024);
}

describe('XML bombs are refused, never expanded or fetched', () => {
  for (const [name, bomb] of Object.entries(bombs)) {
    it(name, async () => {
      const path = join(scratch.dir, `${name.replace(/\W+/g, '-')}.xml`);
      writeFileSync(path, bomb.xml());
      const before = process.memoryUsage().heapUsed;
      const { articles, deadLetters, items } = await collect(readPath(path));
      // The whole file is refused at its DOCTYPE: no record of it is read, expanded or not.
      expect(articles).toEqual([]);
      expect(items).toHaveLength(1);
      expectRefused(deadLetters, bomb.reason);
      expect(JSON.stringify(items)).not.toContain(SECRET);
      expect(JSON.stringify(items)).not.toContain('lollollol');
      expect(process.memoryUsage().heapUsed - before).toBeLessThan(200 * 1024 * 1024);
      expect(fetched).toEqual([]);
    });
  }

  it('every bomb through `ingest`: one dead letter each on dlq, no article, nothing fetched', async () => {
    const runtime = EmbeddedRuntime.open(':memory:');
    const topology = pipelineTopology();
    await runtime.ensureTopics(topology.topics);
    const task = await new ProcessorTask(runtime, topology, ingestProcessor, {
      log: pino({ level: 'silent' }),
      metrics: new EngineMetrics(),
    }).open();
    for (const [i, bomb] of Object.values(bombs).entries()) {
      const path = join(scratch.dir, `ingest-${i}.xml`);
      writeFileSync(path, bomb.xml());
      await ingestFile(task, path);
    }
    const dlq = (await readAll(runtime, 'dlq')).map((r) => (r.value as DeadLetter).reason);
    expect(dlq).toHaveLength(Object.keys(bombs).length);
    for (const reason of dlq) expect(reason).toMatch(/^refused XML: /);
    expect(await readAll(runtime, 'articles')).toEqual([]);
    expect(fetched).toEqual([]);
    await task.close();
    await runtime.close();
  });

  it('short declared entities and an external DTD by name are read, and the DTD is not fetched', async () => {
    const xml = `<?xml version="1.0"?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle//EN" "${base}/pubmed.dtd" [\n<!ENTITY nbsp "&#160;">\n<!ENTITY mdash2 "&#x2014;&#x2014;">\n]>\n<PubmedArticleSet>${pubmedRecord(
      1,
    ).replace(
      /<ArticleTitle>(.*?)<\/ArticleTitle>/,
      '<ArticleTitle>$1&nbsp;&mdash2;</ArticleTitle>',
    )}${PUBMED_TAIL}`;
    const path = join(scratch.dir, 'fine.xml');
    writeFileSync(path, xml);
    const { articles, deadLetters } = await collect(readPath(path));
    expect(deadLetters).toEqual([]);
    expect(articles).toHaveLength(1);
    expect(articles[0]!.title).toContain('——');
    expect(fetched).toEqual([]);
  });
});

describe('binary files under every reader', () => {
  it('random bytes, an executable and a zip named as each format: one dead letter each, never an article', async () => {
    const { randomBytes } = await import('node:crypto');
    const { gzipSync } = await import('node:zlib');
    const blobs: Record<string, Buffer> = {
      random: randomBytes(256 * 1024),
      elf: Buffer.concat([Buffer.from([0x7f, 0x45, 0x4c, 0x46, 2, 1, 1, 0]), randomBytes(4096)]),
      zip: Buffer.concat([Buffer.from('PK\u0003\u0004'), randomBytes(4096)]),
    };
    for (const [kind, blob] of Object.entries(blobs))
      for (const ext of ['xml', 'nxml', 'jsonl', 'txt', 'md', 'pdf', 'xml.gz']) {
        const path = join(scratch.dir, `${kind}.${ext}`);
        writeFileSync(path, ext.endsWith('.gz') && kind !== 'random' ? gzipSync(blob) : blob);
        const { articles, deadLetters } = await collect(readPath(path));
        expect(articles, `${kind}.${ext}`).toEqual([]);
        expect(deadLetters, `${kind}.${ext}`).toHaveLength(1);
        expect(deadLetters[0]!.reason, `${kind}.${ext}`).not.toMatch(/^unexpected/);
      }
  });
});
