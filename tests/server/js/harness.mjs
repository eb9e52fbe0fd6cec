// A small test harness for the server tests: named checks that print what they compared, and a
// summary. Node 18's node:test is experimental there, so the tests use this instead.
import assert from 'node:assert/strict';

const results = [];

export async function test(name, fn) {
  const t0 = Date.now();
  try {
    const note = await fn();
    results.push({ name, ok: true });
    console.log(`PASS ${name} (${Date.now() - t0} ms)${note ? ': ' + note : ''}`);
  } catch (e) {
    results.push({ name, ok: false });
    console.log(`FAIL ${name}: ${e && e.stack ? e.stack : e}`);
  }
}

export function summary(what) {
  const failed = results.filter((r) => !r.ok).length;
  console.log(`${what}: ${results.length} tests, ${failed} failed`);
  process.exitCode = failed ? 1 : 0;
}

// Expects fn to throw the client's error class with this HTTP status; returns the error.
export async function rejects(fn, cls, status) {
  let err = null;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err, `expected ${cls.name} (${status}), got success`);
  assert.ok(err instanceof cls, `expected ${cls.name}, got ${err && err.constructor && err.constructor.name}: ${err}`);
  assert.equal(err.status, status);
  return err;
}

export function args() {
  const a = {};
  for (let i = 2; i < process.argv.length; i += 2) a[process.argv[i].replace(/^--/, '')] = process.argv[i + 1];
  return a;
}

export { assert };
