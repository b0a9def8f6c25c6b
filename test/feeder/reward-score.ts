// Scores JSON lines of reward items from stdin with reward/score.ts, one result per line: the
// Python twin's test (clients/python/tests/test_reward.py) compares its own results with these.
import { createInterface } from 'node:readline';
import { score } from '../../reward/index.js';
import { RewardRequestItem } from '../../schemas/feeder.js';

for await (const line of createInterface({ input: process.stdin })) {
  if (line.trim())
    process.stdout.write(`${JSON.stringify(score(RewardRequestItem.parse(JSON.parse(line))))}\n`);
}
