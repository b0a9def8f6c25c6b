import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isShortForm, shorterNames, writtenForms } from '../../reward/names.js';
import { dropFootnotes } from '../../reward/text.js';

// Issue 45's named steps, each on its own, from the table clients/python/tests/test_reward_steps.py
// reads too: a step that drifts in one language fails here or there, before any output is scored.
const steps = JSON.parse(readFileSync('test/fixtures/reward-steps.json', 'utf8')) as {
  isShortForm: [string, string, boolean][];
  shorterNames: [string[], string[]][];
  writtenForms: [string, string[], string[]][];
  dropFootnotes: [string, string][];
};

describe('reward steps (issue 45)', () => {
  it.each(steps.isShortForm)('isShortForm(%j, %j) is %s', (short, long, want) => {
    expect(isShortForm(short, long)).toBe(want);
  });
  it.each(steps.shorterNames)('shorterNames(%j) = %j', (accepted, want) => {
    expect(shorterNames(accepted)).toEqual(want);
  });
  it.each(steps.writtenForms)('writtenForms(%j, %j) = %j', (text, accepted, want) => {
    expect(writtenForms(text, accepted)).toEqual(want);
  });
  it.each(steps.dropFootnotes)('dropFootnotes(%j) = %j', (text, want) => {
    expect(dropFootnotes(text)).toBe(want);
  });
});
