// rlx serve under load and abuse, through the openai client and raw sockets. Truth: each answer
// under load equals the same request answered alone (greedy, --deterministic: batched == alone),
// every request gets its answer (none lost), the server's RSS after the load stays within a bound
// of its RSS after a warm-up of the same shape (memory does not grow with requests served), and
// after disconnects and broken connections it still answers /health and new requests.
// Usage: node load.test.mjs --url URL --pid PID --model NAME --http-timeout S
import net from 'node:net';
import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { args, assert, summary, test } from './harness.mjs';

const a = args();
const client = new OpenAI({ baseURL: `${a.url}/v1`, apiKey: 'none', maxRetries: 0, timeout: 120000 });
const CLIENTS = 64, REQUESTS = 320, MAX_TOKENS = 24, RSS_GROWTH_BOUND_MIB = 48;
const { hostname, port } = new URL(a.url);

const rssMiB = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${a.pid}/status`, 'utf8'))[1]) / 1024;
const animals = ['cat', 'dog', 'bird', 'fish', 'fox', 'bear', 'frog', 'duck'];
const names = ['Tom', 'Sue'];
const prompts = animals.flatMap((x) => names.map((n) => `Once upon a time, a ${x} named ${n}`));

async function complete(prompt, stream) {
  const body = { model: a.model, prompt, temperature: 0, max_tokens: MAX_TOKENS };
  if (!stream) {
    const r = await client.completions.create(body);
    return { text: r.choices[0].text, finish: r.choices[0].finish_reason };
  }
  let text = '', finish = null;
  for await (const c of await client.completions.create({ ...body, stream: true })) {
    for (const ch of c.choices) {
      text += ch.text;
      if (ch.finish_reason) finish = ch.finish_reason;
    }
  }
  return { text, finish };
}

// n requests, `clients` at a time; request k uses prompt k % prompts.length, streamed when k is odd.
async function pool(n, clients, fn) {
  let next = 0;
  const out = new Array(n);
  await Promise.all(Array.from({ length: clients }, async () => {
    while (next < n) {
      const k = next++;
      out[k] = await fn(k);
    }
  }));
  return out;
}

async function metric(name) {
  const text = await (await fetch(`${a.url}/metrics`)).text();
  const m = new RegExp(`^vllm:${name}\\{[^}]*\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : NaN;
}

const alone = [];
await test('alone: each prompt answered by itself', async () => {
  for (const p of prompts) alone.push(await complete(p, false));
  assert.ok(alone.every((r) => r.text.length > 0));
  return `${prompts.length} prompts`;
});

let rssWarm = 0;
await test(`load: ${REQUESTS} requests from ${CLIENTS} concurrent clients, each equal to its answer alone`, async () => {
  await pool(CLIENTS, CLIENTS, (k) => complete(prompts[k % prompts.length], k % 2 === 1)); // warm-up: the same shape
  rssWarm = rssMiB();
  const t0 = Date.now();
  const got = await pool(REQUESTS, CLIENTS, (k) => complete(prompts[k % prompts.length], k % 2 === 1));
  const secs = (Date.now() - t0) / 1000;
  const wrong = got.filter((r, k) => r.text !== alone[k % prompts.length].text || r.finish !== alone[k % prompts.length].finish);
  assert.equal(got.filter(Boolean).length, REQUESTS, 'requests lost');
  assert.equal(wrong.length, 0, `${wrong.length} answers differ from the same request alone`);
  const rss = rssMiB();
  assert.ok(rss - rssWarm < RSS_GROWTH_BOUND_MIB, `RSS grew ${rss - rssWarm} MiB (${rssWarm} -> ${rss})`);
  return `${secs.toFixed(2)} s; RSS ${rssWarm.toFixed(1)} MiB after warm-up, ${rss.toFixed(1)} MiB after (bound +${RSS_GROWTH_BOUND_MIB})`;
});

await test('disconnects mid-stream cancel their sequences; the server goes on', async () => {
  const aborted0 = await metric('request_success_total') || 0;
  await Promise.all(Array.from({ length: 32 }, async (_, k) => {
    const ac = new AbortController();
    const s = await client.completions.create(
      { model: a.model, prompt: prompts[k % prompts.length], temperature: 0.8, max_tokens: 200, stream: true },
      { signal: ac.signal });
    try {
      for await (const c of s) { // eslint-disable-line no-unused-vars
        ac.abort();
      }
    } catch (e) {
      if (!(e instanceof OpenAI.APIUserAbortError) && e.name !== 'AbortError') throw e;
    }
  }));
  let running = -1, waiting = -1;
  for (let i = 0; i < 100 && (running !== 0 || waiting !== 0); i++) {
    await new Promise((r) => setTimeout(r, 50));
    running = await metric('num_requests_running');
    waiting = await metric('num_requests_waiting');
  }
  assert.equal(running, 0, 'requests still running after their clients left');
  assert.equal(waiting, 0, 'requests still waiting after their clients left');
  const text = await (await fetch(`${a.url}/metrics`)).text();
  const aborted = Number(/^vllm:request_success_total\{[^}]*finished_reason="abort"\} (\S+)$/m.exec(text)[1]);
  assert.ok(aborted > 0, 'no request was cancelled: disconnects went unnoticed');
  const h = await fetch(`${a.url}/health`);
  assert.equal(h.status, 200);
  const r = await complete(prompts[0], false);
  assert.equal(r.text, alone[0].text);
  return `${aborted} of 32 cancelled before their end (aborted0 ${aborted0})`;
});

// A raw TCP connection: sends `data`, then waits for the server to close it (resolves with the
// seconds that took and what came back) or for `waitMs` (resolves null).
function raw(data, waitMs, { end = false } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = Date.now();
    let got = '';
    const sock = net.connect(Number(port), hostname, () => {
      if (data) sock.write(data);
      if (end) sock.end();
    });
    const timer = setTimeout(() => { sock.destroy(); resolve(null); }, waitMs);
    sock.on('data', (d) => { got += d; });
    sock.on('close', () => { clearTimeout(timer); resolve({ secs: (Date.now() - t0) / 1000, got }); });
    sock.on('error', (e) => { if (e.code !== 'ECONNRESET') reject(e); });
  });
}

const timeout = Number(a['http-timeout']);
await test('faults: slowloris headers and a body cut short are closed by the connection timeout', async () => {
  const held = [];
  for (let i = 0; i < 100; i++) held.push(raw('POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Ty', (timeout + 5) * 1000));
  const body = '{"prompt": "Once upon a time", "max_tokens": 4}';
  held.push(raw(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 10)}`, (timeout + 5) * 1000));
  // while they hang, the server serves
  const r = await complete(prompts[1], false);
  assert.equal(r.text, alone[1].text);
  const done = await Promise.all(held);
  const open = done.filter((x) => x === null).length;
  assert.equal(open, 0, `${open} of ${held.length} idle connections were not closed within ${timeout + 5} s`);
  const worst = Math.max(...done.map((x) => x.secs));
  assert.ok(worst >= timeout - 0.5, `closed after ${worst} s, before the timeout of ${timeout} s`);
  return `${held.length} idle connections closed after at most ${worst.toFixed(1)} s (timeout ${timeout} s)`;
});

await test('faults: truncated bodies and 1,000 connections opened and dropped', async () => {
  const body = '{"prompt": "Once upon a time", "max_tokens": 4}';
  for (let round = 0; round < 10; round++) {
    await Promise.all(Array.from({ length: 100 }, (_, i) => new Promise((resolve) => {
      const sock = net.connect(Number(port), hostname, () => {
        if (i % 3 === 1) sock.write('GET /health HT');
        if (i % 3 === 2) sock.write(`POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, 20)}`);
        sock.destroy();
      });
      sock.on('close', resolve);
      sock.on('error', resolve);
    })));
  }
  const h = await fetch(`${a.url}/health`);
  assert.equal(h.status, 200);
  const r = await complete(prompts[2], true);
  assert.equal(r.text, alone[2].text);
  return '1,000 connections dropped (a third mid-header, a third mid-body); the server still answers';
});

await test('faults: malformed requests get 4xx in OpenAI\'s shape, the server goes on', async () => {
  const post = (path, body, headers = {}) =>
    fetch(`${a.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
  const cases = [
    ['/v1/chat/completions', '{"messages": [', 400],
    ['/v1/chat/completions', Buffer.from([0x7b, 0x22, 0x6d, 0x22, 0x3a, 0x22, 0xc3, 0x28, 0x22, 0x7d]), 400], // bad UTF-8
    ['/v1/completions', '{"prompt": 7}', 400],
    ['/v1/completions', 'x'.repeat(9 << 20), 413],
    ['/v1/nothing', '{}', 404],
  ];
  for (const [path, body, status] of cases) {
    const r = await post(path, body);
    assert.equal(r.status, status, `${path}: ${r.status}, expected ${status}`);
    const e = await r.json();
    assert.ok(e.error && typeof e.error.message === 'string' && 'type' in e.error && 'param' in e.error && 'code' in e.error,
      `${path}: not an OpenAI error object: ${JSON.stringify(e)}`);
  }
  // malformed HTTP: libmicrohttpd answers 400 itself and closes
  const bad = await raw('GARBAGE / NOT-HTTP\r\n\r\n', 5000);
  assert.ok(bad && /^HTTP\/1\.[01] 400/.test(bad.got), `malformed request line: ${JSON.stringify(bad && bad.got.slice(0, 40))}`);
  const g = await fetch(`${a.url}/v1/completions`);
  assert.equal(g.status, 405);
  const r = await complete(prompts[3], false);
  assert.equal(r.text, alone[3].text);
  return `${cases.length + 2} malformed requests`;
});

summary(`load and faults (${a.model})`);
