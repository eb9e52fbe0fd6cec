// SIGTERM drains: streams in flight when the server is told to stop still end properly (a
// finish_reason, then [DONE]) and new connections are refused. Truth: the drain rule of
// docs/SERVER.md (finish within 10 s, else cancel).
// Usage: node drain.test.mjs --url URL --pid PID --model NAME
import OpenAI from 'openai';
import { args, assert, summary, test } from './harness.mjs';

const a = args();
const client = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: 'none', maxRetries: 0 });

await test('SIGTERM: the streams in flight end with a finish_reason', async () => {
  let started = 0, signalled = false;
  const streams = Array.from({ length: 8 }, async (_, k) => {
    const s = await client.completions.create(
      { model: a.model, prompt: `Once upon a time, number ${k}`, max_tokens: 200, temperature: 1, stream: true });
    let finish = null, n = 0;
    for await (const c of s) {
      if (n++ === 0 && ++started === 8) {
        process.kill(Number(a.pid), 'SIGTERM');
        signalled = true;
      }
      for (const ch of c.choices) if (ch.finish_reason) finish = ch.finish_reason;
    }
    return finish;
  });
  const finishes = await Promise.all(streams);
  assert.ok(signalled, 'SIGTERM was not sent');
  assert.ok(finishes.every((f) => f === 'stop' || f === 'length'), `finish reasons: ${finishes}`);
  let refused = false;
  try {
    await fetch(`${a.url}/health`);
  } catch {
    refused = true;
  }
  assert.ok(refused, 'a new connection was accepted after the drain');
  return `8 streams ended: ${finishes.join(', ')}`;
});

summary(`drain (${a.model})`);
