// rlx serve through the official OpenAI Node client (openai, pinned in package.json): what a
// client sees. Truth: OpenAI's wire format as this client parses it (its types and its error
// classes), `rlx run --temp 0` for the greedy text, and properties: streamed deltas add up to the
// non-streamed content, a seed repeats its answer, a stop string cuts the text where it first
// occurs in the text without it.
// Usage: node openai.test.mjs --url URL --model NAME --rlx PATH --rlx-model PATH|default
//        [--api-key KEY] [--ctx N]
import { execFileSync } from 'node:child_process';
import OpenAI from 'openai';
import { args, assert, rejects, summary, test } from './harness.mjs';

const a = args();
const client = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: a['api-key'] || 'none', maxRetries: 0, timeout: 60000 });
const ctx = Number(a.ctx);

// `rlx run --temp 0`: its stdout (the prompt, then the continuation), decoded by Node as the
// client would decode bytes.
function rlxRun(prompt, n) {
  const m = a['rlx-model'] === 'default' ? [] : ['-m', a['rlx-model']];
  const out = execFileSync(a.rlx, ['run', ...m, '--backend', 'cpu', '--temp', '0', '-n', String(n), '-p', prompt], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return out.toString('utf8');
}

async function collect(stream) {
  let text = '', finish = null, usage = null, role = null, chunks = 0;
  for await (const c of stream) {
    chunks++;
    if (c.usage) usage = c.usage;
    for (const ch of c.choices) {
      if (ch.delta) {
        if (ch.delta.role) role = ch.delta.role;
        if (ch.delta.content) text += ch.delta.content;
      }
      if (typeof ch.text === 'string') text += ch.text;
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  return { text, finish, usage, role, chunks };
}

const chatBody = (extra) => ({ model: 'any-name', messages: [{ role: 'user', content: 'Once upon a time' }], ...extra });

await test('models: one model, the name the server was given', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].id, a.model);
  assert.equal(list.data[0].object, 'model');
  return `id ${list.data[0].id}`;
});

let greedyChat;
await test('chat: non-streamed, greedy, usage adds up', async () => {
  const r = await client.chat.completions.create(chatBody({ temperature: 0, max_tokens: 24 }));
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.equal(typeof r.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.ok(r.usage.prompt_tokens > 0 && r.usage.completion_tokens > 0 && r.usage.completion_tokens <= 24);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  assert.equal(typeof r.usage.prompt_tokens_details.cached_tokens, 'number');
  greedyChat = r;
  return `${r.usage.completion_tokens} tokens, finish ${r.choices[0].finish_reason}`;
});

await test('chat: streamed deltas add up to the non-streamed content; usage chunk', async () => {
  const s = await client.chat.completions.create(
    chatBody({ temperature: 0, max_tokens: 24, stream: true, stream_options: { include_usage: true } }));
  const got = await collect(s);
  assert.equal(got.role, 'assistant');
  assert.equal(got.text, greedyChat.choices[0].message.content);
  assert.equal(got.finish, greedyChat.choices[0].finish_reason);
  assert.ok(got.usage, 'no usage chunk');
  assert.equal(got.usage.completion_tokens, greedyChat.usage.completion_tokens);
  assert.equal(got.usage.prompt_tokens, greedyChat.usage.prompt_tokens);
  return `${got.chunks} chunks, ${got.text.length} characters`;
});

await test('completions: greedy text equals `rlx run --temp 0`', async () => {
  const prompt = 'Once upon a time';
  const r = await client.completions.create({ model: a.model, prompt, temperature: 0, max_tokens: 40 });
  assert.equal(r.object, 'text_completion');
  const want = rlxRun(prompt, 40);
  assert.equal(prompt + r.choices[0].text, want);
  const s = await collect(await client.completions.create({ model: a.model, prompt, temperature: 0, max_tokens: 40, stream: true }));
  assert.equal(s.text, r.choices[0].text);
  return `${r.usage.completion_tokens} tokens: ${JSON.stringify(r.choices[0].text.slice(0, 40))}...`;
});

await test('completions: a prompt of token ids', async () => {
  const ids = [1, 2, 3, 4, 5].map((x) => x * 7);
  const r = await client.completions.create({ model: a.model, prompt: ids, temperature: 0, max_tokens: 8 });
  assert.equal(r.usage.prompt_tokens, ids.length);
  assert.ok(r.usage.completion_tokens >= 1);
});

await test('seed: the same seed gives the same sampled text, streamed or not', async () => {
  const body = { model: a.model, prompt: 'The little dog', temperature: 1.0, top_p: 0.95, max_tokens: 32, seed: 1234 };
  const r1 = await client.completions.create(body);
  const r2 = await client.completions.create(body);
  const s = await collect(await client.completions.create({ ...body, stream: true }));
  assert.equal(r2.choices[0].text, r1.choices[0].text);
  assert.equal(s.text, r1.choices[0].text);
  const others = [];
  for (const seed of [1, 2, 3]) others.push((await client.completions.create({ ...body, seed })).choices[0].text);
  assert.ok(others.some((t) => t !== r1.choices[0].text), 'four seeds gave one text: the seed is not used');
  return `seed 1234: ${JSON.stringify(r1.choices[0].text.slice(0, 30))}...`;
});

await test('stop strings: the text ends before the first occurrence, not emitted, streamed or not', async () => {
  const body = { model: a.model, prompt: 'Once upon a time', temperature: 0, max_tokens: 48 };
  const full = (await client.completions.create(body)).choices[0].text;
  // a stop string from the middle of the greedy text, spanning tokens
  const from = Math.floor(full.length / 3);
  const stop = full.slice(from, from + 4);
  assert.ok(stop.length === 4, `greedy text too short: ${JSON.stringify(full)}`);
  const want = full.slice(0, full.indexOf(stop));
  const r = await client.completions.create({ ...body, stop: [stop, 'never-seen-xyzzy'] });
  assert.equal(r.choices[0].text, want);
  assert.equal(r.choices[0].finish_reason, 'stop');
  const s = await collect(await client.completions.create({ ...body, stop, stream: true }));
  assert.equal(s.text, want);
  assert.equal(s.finish, 'stop');
  return `stop ${JSON.stringify(stop)}: ${want.length} of ${full.length} characters`;
});

await test('prefix cache: a repeated long prompt reports cached tokens', async () => {
  const prompt = 'Once upon a time there was a cat. '.repeat(12);
  const body = { model: a.model, prompt, temperature: 0, max_tokens: 2 };
  await client.completions.create(body);
  const r = await client.completions.create(body);
  assert.ok(r.usage.prompt_tokens_details.cached_tokens > 0, `cached ${r.usage.prompt_tokens_details.cached_tokens}`);
  assert.ok(r.usage.prompt_tokens_details.cached_tokens < r.usage.prompt_tokens);
  return `${r.usage.prompt_tokens_details.cached_tokens} of ${r.usage.prompt_tokens} prompt tokens cached`;
});

await test('prefix cache: a chat that comes back with one more turn reuses its history', async () => {
  const first = [{ role: 'system', content: 'You tell short stories about animals. '.repeat(4) },
    { role: 'user', content: 'Tell me about a cat who lived by the sea and liked fish.' }];
  const r1 = await client.chat.completions.create({ model: a.model, messages: first, temperature: 0, max_tokens: 16 });
  const second = [...first, { role: 'assistant', content: r1.choices[0].message.content },
    { role: 'user', content: 'And then?' }];
  const r2 = await client.chat.completions.create({ model: a.model, messages: second, temperature: 0, max_tokens: 4 });
  const cached = r2.usage.prompt_tokens_details.cached_tokens;
  assert.ok(r2.usage.prompt_tokens > r1.usage.prompt_tokens);
  assert.ok(cached > 0, `the second turn found ${cached} cached tokens`);
  assert.ok(cached <= r1.usage.prompt_tokens + r1.usage.completion_tokens);
  return `turn 2: ${cached} of ${r2.usage.prompt_tokens} prompt tokens cached`;
});

await test('errors: each a 4xx through the client\'s own exception classes', async () => {
  let e = await rejects(() => client.chat.completions.create({ model: a.model, messages: [] }), OpenAI.BadRequestError, 400);
  assert.equal(e.param, 'messages');
  e = await rejects(() => client.chat.completions.create(chatBody({ n: 2 })), OpenAI.BadRequestError, 400);
  assert.equal(e.param, 'n');
  e = await rejects(() => client.chat.completions.create(chatBody({ max_tokens: ctx + 1 })), OpenAI.BadRequestError, 400);
  assert.equal(e.code, 'context_length_exceeded');
  e = await rejects(() => client.completions.create({ model: a.model, prompt: 'word '.repeat(ctx + 10) }), OpenAI.BadRequestError, 400);
  assert.equal(e.code, 'context_length_exceeded');
  e = await rejects(() => client.chat.completions.create(chatBody({ temperature: 'hot' })), OpenAI.BadRequestError, 400);
  assert.equal(e.param, 'temperature');
  e = await rejects(() => client.completions.create({ model: a.model, prompt: [1, 99999999] }), OpenAI.BadRequestError, 400);
  assert.equal(e.param, 'prompt');
  await rejects(() => client.chat.completions.create(chatBody({ messages: [{ role: 'wizard', content: 'x' }] })), OpenAI.BadRequestError, 400);
  // the server still serves
  const r = await client.chat.completions.create(chatBody({ temperature: 0, max_tokens: 4 }));
  assert.ok(r.choices[0].message.content.length >= 0);
});

if (a['api-key']) {
  await test('api key: a wrong or missing key is a 401; /health needs none', async () => {
    const bad = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: 'wrong', maxRetries: 0 });
    await rejects(() => bad.models.list(), OpenAI.AuthenticationError, 401);
    const none = await fetch(`${a.url}/v1/models`);
    assert.equal(none.status, 401);
    const h = await fetch(`${a.url}/health`);
    assert.equal(h.status, 200);
    assert.deepEqual(await h.json(), { status: 'ok' });
  });
}

await test('tokenize / detokenize: llama-server\'s shapes, a round trip', async () => {
  const post = async (path, body) => {
    const r = await fetch(`${a.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${a['api-key'] || ''}` }, body: JSON.stringify(body) });
    assert.equal(r.status, 200, `${path}: ${r.status}`);
    return r.json();
  };
  const text = 'Once upon a time, a cat.';
  const t = await post('/tokenize', { content: text });
  assert.ok(Array.isArray(t.tokens) && t.tokens.length > 0 && t.tokens.every(Number.isInteger));
  const p = await post('/tokenize', { content: text, with_pieces: true });
  assert.deepEqual(p.tokens.map((x) => x.id), t.tokens);
  const d = await post('/detokenize', { tokens: t.tokens });
  assert.equal(d.content, text);
  return `${t.tokens.length} tokens`;
});

await test('metrics: vLLM\'s and rlx\'s names, counting what was served', async () => {
  const r = await fetch(`${a.url}/metrics`);
  assert.equal(r.status, 200);
  const text = await r.text();
  for (const name of ['num_requests_running', 'num_requests_waiting', 'kv_cache_usage_perc', 'prompt_tokens_total',
    'generation_tokens_total', 'time_to_first_token_seconds_bucket', 'inter_token_latency_seconds_bucket',
    'e2e_request_latency_seconds_count', 'prefix_cache_queries_total', 'prefix_cache_hits_total']) {
    for (const p of ['vllm', 'rlx']) assert.ok(text.includes(`${p}:${name}{`), `${p}:${name} missing`);
  }
  const gen = Number(/^vllm:generation_tokens_total\{[^}]*\} (\S+)$/m.exec(text)[1]);
  assert.ok(gen > 100, `generation_tokens_total ${gen}`);
  const hits = Number(/^vllm:prefix_cache_hits_total\{[^}]*\} (\S+)$/m.exec(text)[1]);
  assert.ok(hits > 0, `prefix_cache_hits_total ${hits}`);
  return `${gen} generated tokens, ${hits} prefix-cache hits`;
});

summary(`openai client vs rlx serve (${a.model})`);
