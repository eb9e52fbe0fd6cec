// A full queue: with --parallel 1 --queue 1, of 12 requests at once at most 2 are taken and the
// rest are answered 503 with Retry-After (through the client: InternalServerError, status 503);
// those taken complete. Truth: the bound the server was started with.
// Usage: node busy.test.mjs --url URL --model NAME
import OpenAI from 'openai';
import { args, assert, summary, test } from './harness.mjs';

const a = args();
const client = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: 'none', maxRetries: 0 });

await test('queue full: 503 with Retry-After; what is taken completes', async () => {
  const results = await Promise.allSettled(Array.from({ length: 12 }, () =>
    client.completions.create({ model: a.model, prompt: 'Once upon a time', max_tokens: 200, temperature: 1 })));
  const ok = results.filter((r) => r.status === 'fulfilled');
  const busy = results.filter((r) => r.status === 'rejected' && r.reason.status === 503);
  assert.equal(ok.length + busy.length, 12, 'a request failed otherwise');
  assert.ok(ok.length >= 1 && ok.length <= 2, `${ok.length} taken, at most 2 allowed`);
  assert.ok(busy.length >= 10);
  assert.equal(busy[0].reason.headers['retry-after'], '1');
  assert.ok(busy[0].reason instanceof OpenAI.InternalServerError);
  return `${ok.length} taken, ${busy.length} answered 503`;
});

summary(`queue bound (${a.model})`);
