import type { Responder } from './server.js';
import { schemaResponder } from './server.js';

/**
 * Replies for the pipeline's stages that read the passage, so end-to-end tests see what a real
 * model gives: relevant passages, questions built from the passage's own words (distinct per
 * passage, so duplicates come only from duplicated text), one in four of them context-bound (the
 * checks must refuse it), and a judge that rejects about one in six. Deterministic: the same prompt
 * always gets the same reply.
 */
export const pipelineResponder: Responder = (request, context) => {
  const stage = request.response_format?.json_schema?.name;
  const user = String(request.messages.at(-1)?.content ?? '');
  const passage = user.match(/<<<ARTICLE_TEXT\n([\s\S]*)\nARTICLE_TEXT>>>/)?.[1] ?? user;
  const words = [
    ...new Set((passage.toLowerCase().match(/\p{L}{6,}/gu) ?? []).filter((w) => w.length <= 20)),
  ];
  const pick = (n: number) => {
    const out: string[] = [];
    const pool = [...words];
    while (out.length < n && pool.length)
      out.push(pool.splice(Math.floor(context.random() * pool.length), 1)[0]!);
    return out;
  };
  switch (stage) {
    case 'relevance': {
      const relevant = words.length >= 8 && !/acknowledg|funding/i.test(passage);
      return JSON.stringify({ relevant, reason: relevant ? 'states a result' : 'too little to ask about' });
    }
    case 'mcq': {
      const [a, b, ...options] = pick(6);
      if (!a || !b || options.length < 4) return JSON.stringify({ questions: [] });
      const contextBound = context.random() < 0.25;
      const question = `${contextBound ? 'In this study, which' : 'Which'} term is most closely associated with ${a} when the role of ${b} is considered?`;
      const answer = 'ABCD'[Math.floor(context.random() * 4)]!;
      return JSON.stringify({
        questions: [{ question, options, answer, rationale: `The text links ${a} with it.` }],
      });
    }
    case 'freeform': {
      const [a, b, answer] = pick(3);
      if (!a || !b || !answer) return JSON.stringify({ questions: [] });
      return JSON.stringify({
        questions: [
          {
            question: `What single term describes the link between ${a} and ${b} in this area of biology?`,
            answer,
            rationale: 'Stated in the text.',
          },
        ],
      });
    }
    case 'mcq-quality':
    case 'freeform-grade': {
      const accept = context.random() >= 1 / 6;
      const score = accept ? 4 : 2;
      return JSON.stringify({
        quality: score,
        difficulty: 3,
        answerability: score,
        verifiability: accept ? 5 : 2,
        verdict: accept ? 'accept' : 'reject',
        reasons: accept ? [] : ['the key is not supported by the text'],
      });
    }
    default:
      return schemaResponder(request, context);
  }
};
