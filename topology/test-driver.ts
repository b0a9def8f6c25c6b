import pino from 'pino';
import { TopicCodecs } from './codec.js';
import { EngineMetrics } from './metrics.js';
import type { Processor } from './processor.js';
import { EmbeddedRuntime } from './runtime/embedded.js';
import { ProcessorTask } from './task.js';
import { defineTopology, type TopicInput, type Topology } from './topology.js';

/**
 * Like Kafka Streams' TopologyTestDriver: pipe records into a topology (or one processor), run it
 * to quiescence in memory, read what it wrote. The clock is the driver's, so timers fire on
 * advanceTime(), not on the wall clock.
 */
export class TestDriver {
  private time = 0;
  private readonly codecs: TopicCodecs;
  private tasks: ProcessorTask[] = [];
  private readonly runtime = EmbeddedRuntime.open(':memory:');
  readonly metrics = new EngineMetrics();

  private constructor(readonly topology: Topology) {
    this.codecs = new TopicCodecs(topology);
  }

  static async create(
    topology: Topology,
    opts: { run?: readonly string[]; startTime?: number } = {},
  ): Promise<TestDriver> {
    const driver = new TestDriver(topology);
    driver.time = opts.startTime ?? 0;
    await driver.runtime.ensureTopics(topology.topics);
    const chosen = topology.processors.filter((p) => (opts.run ? opts.run.includes(p.name) : !p.placeholder));
    driver.tasks = await Promise.all(
      chosen.map((p) =>
        new ProcessorTask(driver.runtime, topology, p, {
          log: pino({ level: 'silent' }),
          metrics: driver.metrics,
          clock: () => driver.time,
          sleep: async () => {},
        }).open(),
      ),
    );
    return driver;
  }

  /** A topology of one processor; its topics are made up from what it reads and writes, without schemas. */
  static forProcessor(processor: Processor, topics: readonly TopicInput[] = []): Promise<TestDriver> {
    const declared = new Set(topics.map((t) => t.name));
    const implied = [...new Set([...processor.reads, ...processor.writes, 'dlq'])]
      .filter((name) => !declared.has(name))
      .map((name) => ({ name, schema: name === 'dlq' ? ('dead-letter' as const) : null }));
    return TestDriver.create(defineTopology({ topics: [...topics, ...implied], processors: [processor] }), {
      run: [processor.name],
    });
  }

  /** Appends values (validated like any producer) to a topic. */
  async pipe(topic: string, records: readonly { key?: string | null; value: unknown }[]): Promise<void> {
    await this.runtime.append(
      records.map((r) => ({ topic, key: r.key ?? null, value: this.codecs.encode(topic, r.value) })),
    );
  }

  /** Runs every processor until none has input left. Returns the input records processed. */
  async drain(): Promise<number> {
    let total = 0;
    for (;;) {
      let progress = 0;
      for (const t of this.tasks) progress += await t.step(0);
      total += progress;
      if (progress === 0) return total;
    }
  }

  /** Moves the clock; processors whose timers fall due run once each, then input drains. */
  async advanceTime(ms: number): Promise<void> {
    this.time += ms;
    for (const t of this.tasks) if (t.processor.punctuate) await t.step(0);
    await this.drain();
  }

  /** Everything on a topic, partitions in order, as parsed values. */
  async output<T = unknown>(
    topic: string,
  ): Promise<{ key: string | null; value: T; partition: number; offset: number }[]> {
    const ends = await this.runtime.endOffsets(topic);
    const out = [];
    for (const [partition, end] of ends.entries()) {
      for (const r of await this.runtime.read(topic, partition, 0, end)) {
        out.push({ key: r.key, value: JSON.parse(r.value) as T, partition, offset: r.offset });
      }
    }
    return out;
  }

  async values<T = unknown>(topic: string): Promise<T[]> {
    return (await this.output<T>(topic)).map((r) => r.value);
  }

  /**
   * Committed state of a processor's store: in one scope (an input partition, or GLOBAL), or by
   * default the key's value in whichever scope holds it.
   */
  state<T = unknown>(processor: string, store: string, key: string, partition?: number): T | undefined {
    const row = this.runtime
      .storeRows(processor, store)
      .find((r) => r.key === key && (partition === undefined || r.partition === partition));
    return row ? (JSON.parse(row.value) as T) : undefined;
  }

  async close(): Promise<void> {
    for (const t of this.tasks) await t.close();
    await this.runtime.close();
  }
}
