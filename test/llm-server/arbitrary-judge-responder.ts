import { pipelineResponder } from './pipeline-responder.js';
import { type Responder, schemaResponder } from './server.js';

const YES_NO = ['Yes', 'No', 'True', 'False'];

/**
 * A model that writes what a small local model writes and judges arbitrarily: the generators
 * answer as pipelineResponder does, except that some free-form questions are the article's title
 * with "Yes" as the answer, some answers are yes/no or true/false, and some multiple-choice items
 * repeat an option. The judges reply with valid, arbitrary scores and verdicts (half of them drawn
 * from the whole schema, half with every score 3-5, so that some items pass), and classify with
 * arbitrary labels and confidences. Deterministic: the same prompt always gets the same reply.
 */
export const arbitraryJudgeResponder: Responder = async (request, context) => {
  const stage = request.response_format?.json_schema?.name;
  const user = String(request.messages.at(-1)?.content ?? '');
  const title = user.match(/^Title: (.*)$/m)?.[1]?.trim() ?? '';
  const draw = context.random();
  switch (stage) {
    case 'freeform': {
      if (draw < 0.2 && title)
        return JSON.stringify({ questions: [{ question: title, answer: 'Yes', rationale: 'The title.' }] });
      const reply = JSON.parse(await pipelineResponder(request, context)) as {
        questions: { answer: string }[];
      };
      if (draw < 0.4)
        for (const q of reply.questions) q.answer = YES_NO[Math.floor(context.random() * YES_NO.length)]!;
      return JSON.stringify(reply);
    }
    case 'mcq': {
      const reply = JSON.parse(await pipelineResponder(request, context)) as {
        questions: { options: string[] }[];
      };
      if (draw < 0.25) for (const q of reply.questions) q.options[1] = q.options[0]!;
      return JSON.stringify(reply);
    }
    case 'mcq-quality':
    case 'freeform-grade': {
      if (draw < 0.5) return schemaResponder(request, context);
      const score = () => 3 + Math.floor(context.random() * 3);
      return JSON.stringify({
        quality: score(),
        difficulty: 1 + Math.floor(context.random() * 5),
        answerability: score(),
        verifiability: score(),
        verdict: context.random() < 0.5 ? 'accept' : 'reject',
        reasons: [],
      });
    }
    case 'classify':
      return schemaResponder(request, context);
    default:
      return pipelineResponder(request, context);
  }
};
