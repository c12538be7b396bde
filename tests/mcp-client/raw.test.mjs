// Raw JSON-RPC over `cocoon mcp` stdio, no SDK: the 2026-07-28 per-request
// style (server/discover, _meta protocolVersion, resultType), version errors,
// and JSON-RPC error handling (bad JSON, unknown method, oversized line) with
// the server still serving afterwards.
import { afterEach, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import readline from 'node:readline';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const COCOON = process.env.COCOON;
assert.ok(COCOON, 'set COCOON to the cocoon binary');

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'raw-test', version: '1' },
};

// Servers not stopped by their test (a failed assertion skips the stop) are
// killed after it, so that one failure cannot hang the run until ctest's timeout.
const running = new Set();
afterEach(() => {
  for (const child of running) child.kill('SIGKILL');
  running.clear();
});

function startServer(args = [], env = process.env) {
  const child = spawn(COCOON, ['mcp', ...args], { stdio: ['pipe', 'pipe', 'inherit'], env });
  running.add(child);
  const waiting = new Map();
  const lines = [];
  const rawWaiters = [];
  let batchWaiter = null;
  readline.createInterface({ input: child.stdout }).on('line', (line) => {
    const message = JSON.parse(line);  // every stdout line must be JSON
    lines.push(message);
    if (rawWaiters.length) rawWaiters.shift()(line);
    if (Array.isArray(message)) {
      if (batchWaiter) batchWaiter(message);
      batchWaiter = null;
      return;
    }
    const key = JSON.stringify(message.id ?? null);
    if (!('method' in message) && waiting.has(key)) {
      waiting.get(key)(message);
      waiting.delete(key);
    }
  });
  return {
    lines,
    send(text) { child.stdin.write(text + '\n'); },
    request(id, method, params) {
      const reply = new Promise((resolve) => waiting.set(JSON.stringify(id), resolve));
      this.send(JSON.stringify({ jsonrpc: '2.0', id, method, params }));
      return reply;
    },
    batch(messages) {
      const reply = new Promise((resolve) => { batchWaiter = resolve; });
      this.send(JSON.stringify(messages));
      return reply;
    },
    // Sends one line and resolves with the next line the server writes, as
    // text (only while nothing else is being written).
    exchange(text) {
      const reply = new Promise((resolve) => rawWaiters.push(resolve));
      this.send(text);
      return reply;
    },
    errorFor(text) {
      const reply = new Promise((resolve) => waiting.set('null', resolve));
      this.send(text);
      return reply;
    },
    async stop() {
      child.stdin.end();
      if (child.exitCode === null && child.signalCode === null) {
        await new Promise((resolve) => child.once('exit', resolve));
      }
      running.delete(child);
    },
  };
}

test('2026-07-28: discover, list and call with per-request _meta, no initialize', async () => {
  const server = startServer();
  const discover = await server.request('d1', 'server/discover', { _meta: META });
  assert.equal(discover.result.resultType, 'complete');
  assert.ok(discover.result.supportedVersions.includes('2026-07-28'));
  assert.equal(discover.result._meta['io.modelcontextprotocol/serverInfo'].name, 'cocoon');

  const list = await server.request(2, 'tools/list', { _meta: META });
  assert.equal(list.result.resultType, 'complete');
  assert.equal(list.result.tools.length, 4);
  assert.equal(typeof list.result.ttlMs, 'number');
  assert.ok(['public', 'private'].includes(list.result.cacheScope));

  const call = await server.request(3, 'tools/call', {
    name: 'execute_code', arguments: { language: 'python', code: 'print("modern")' }, _meta: META,
  });
  assert.equal(call.result.resultType, 'complete');
  assert.equal(call.result.isError, false, JSON.stringify(call));
  assert.equal(call.result.structuredContent.stdout, 'modern\n');
  await server.stop();
});

test('every progress notification of a call is written before its response, in order', async () => {
  // Output that ends right before the program exits is read by the
  // supervisor's final drain; its notifications must still precede the
  // result (clients drop progress for a request that has completed).
  const server = startServer();
  await server.request(0, 'initialize', {
    protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw-test', version: '1' },
  });
  server.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  for (let id = 1; id <= 5; ++id) {
    const code = 'import sys\nfor i in range(3): print("line", i, flush=True)\nsys.stderr.write("done\\n")';
    const before = server.lines.length;
    const reply = await server.request(id, 'tools/call', {
      name: 'execute_code', arguments: { language: 'python', code }, _meta: { progressToken: `p${id}` },
    });
    assert.equal(reply.result.isError, false, JSON.stringify(reply));
    const mine = server.lines.slice(before).filter((m) => m.params?.progressToken === `p${id}` || m.id === id);
    assert.equal(mine.at(-1).id, id, 'the response comes last');
    const progress = mine.slice(0, -1);
    assert.ok(progress.every((m) => m.method === 'notifications/progress'));
    assert.deepEqual(progress.map((m) => m.params.progress), progress.map((_, i) => i + 1));
    const stream = (name) => progress.filter((m) => m.params._meta['dev.cocoon/stream'] === name)
      .map((m) => m.params.message).join('');
    assert.equal(stream('stdout'), 'line 0\nline 1\nline 2\n');
    assert.equal(stream('stderr'), 'done\n');
  }
  await server.stop();
});

test('2026-07-28: unsupported version is -32022 with the supported list; missing capabilities is -32602', async () => {
  const server = startServer();
  const bad = await server.request(1, 'tools/list', {
    _meta: { ...META, 'io.modelcontextprotocol/protocolVersion': '2099-01-01' },
  });
  assert.equal(bad.error.code, -32022);
  assert.deepEqual(bad.error.data, { supported: ['2026-07-28'], requested: '2099-01-01' });
  const meta = { ...META };
  delete meta['io.modelcontextprotocol/clientCapabilities'];
  const missing = await server.request(2, 'tools/list', { _meta: meta });
  assert.equal(missing.error.code, -32602);
  await server.stop();
});

test('JSON-RPC errors do not stop the server', async () => {
  const server = startServer(['--max-message-bytes', '1024']);
  assert.equal((await server.errorFor('{"jsonrpc": "2.0", "id": 1, "method": ')).error.code, -32700);
  assert.equal((await server.errorFor('x'.repeat(5000))).error.code, -32600);
  assert.equal((await server.request(5, 'no/such/method', {})).error.code, -32601);
  const init = await server.request(6, 'initialize', {
    protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' },
  });
  assert.equal(init.result.protocolVersion, '2025-03-26');
  assert.deepEqual((await server.request(7, 'ping', {})).result, {});
  await server.stop();
});

// A 2025-03-26 batch gets one array once every call has finished. The calls
// are identical and the cache is fresh (they once all wrote one
// content-addressed stdin file at once, and one failed). A call's stdin now
// goes to its sandbox through a pipe from memory: nothing of it is left in
// the host's cache (it once stayed there, mode 0644, after the server ended).
test('a batch of identical calls is answered with one array, every call succeeding', async () => {
  for (let round = 0; round < 12; ++round) {
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'cocoon-batch-cache-'));
    const server = startServer(['--max-concurrent', '6'], { ...process.env, COCOON_CACHE_DIR: cache });
    try {
      const init = await server.request(0, 'initialize', {
        protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' },
      });
      assert.equal(init.result.protocolVersion, '2025-03-26');
      const calls = [];
      for (let id = 1; id <= 6; ++id) {
        calls.push({ jsonrpc: '2.0', id, method: 'tools/call', params: {
          name: 'execute_code',
          arguments: { language: 'python', code: 'import sys; print(sys.stdin.read())', stdin: `round ${round}` },
        } });
      }
      calls.push({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const answer = await server.batch(calls);
      assert.deepEqual(answer.map((r) => r.id).sort(), [1, 2, 3, 4, 5, 6]);
      for (const response of answer) {
        assert.equal(response.result.isError, false, JSON.stringify(response).slice(0, 500));
        assert.equal(response.result.structuredContent.stdout, `round ${round}\n`);
      }
      await server.stop();
      const left = fs.readdirSync(cache, { recursive: true }).map(String).filter((name) => name.endsWith('.stdin'));
      assert.deepEqual(left, [], 'stdin written to the host cache');
    } finally {
      await server.stop();  // a failed assertion must not leave the server (and the test) running
      fs.rmSync(cache, { recursive: true, force: true });
    }
  }
});

// MCP's RequestId is `string | number`, and JSON-RPC allows any number: the
// response carries the id in the client's own digits (nlohmann would write
// 1e2 back as 100.0 and 2^64 as 1.8446744073709552e+19). Anything else is
// -32600 with id null.
test('a number id is answered in the digits the client sent', async () => {
  const server = startServer();
  for (const id of ['1.0', '18446744073709551616', '1e2', '-0.250']) {
    const line = await server.exchange(`{"jsonrpc":"2.0","id":${id},"method":"ping"}`);
    assert.equal(line, `{"id":${id},"jsonrpc":"2.0","result":{}}`);
  }
  for (const id of ['null', 'true', '{}', '[]']) {
    const reply = JSON.parse(await server.exchange(`{"jsonrpc":"2.0","id":${id},"method":"ping"}`));
    assert.equal(reply.id, null);
    assert.equal(reply.error.code, -32600);
  }
  await server.stop();
});

// 2025-06-18 removed JSON-RPC batching: a batch is one Invalid Request with
// id null (none of its calls runs), before initialize too; a 2025-03-26
// session still gets one array.
test('a batch is refused before initialize and after 2025-06-18, answered in 2025-03-26', async () => {
  const batch = JSON.stringify([
    { jsonrpc: '2.0', id: 1, method: 'ping' },
    { jsonrpc: '2.0', id: 2, method: 'ping' },
  ]);
  for (const version of [null, '2025-06-18', '2025-11-25', '2025-03-26']) {
    const server = startServer();
    if (version) {
      const init = await server.request(0, 'initialize', {
        protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' },
      });
      assert.equal(init.result.protocolVersion, version);
      server.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
    }
    const reply = JSON.parse(await server.exchange(batch));
    if (version === '2025-03-26') {
      assert.ok(Array.isArray(reply), JSON.stringify(reply));
      assert.deepEqual(reply.map((r) => r.id), [1, 2]);
    } else {
      assert.ok(!Array.isArray(reply), `${version}: ${JSON.stringify(reply)}`);
      assert.equal(reply.id, null);
      assert.equal(reply.error.code, -32600);
      assert.deepEqual((await server.request(3, 'ping', {})).result, {}, 'the session goes on');
    }
    await server.stop();
  }
});

// Initialization happens once per session: a second initialize is -32600
// and neither renegotiates the version nor resets the session.
test('a second initialize is an Invalid Request and changes nothing', async () => {
  const server = startServer();
  const first = await server.request(1, 'initialize', {
    protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'raw', version: '1' },
  });
  assert.equal(first.result.protocolVersion, '2025-03-26');
  server.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }));
  const second = await server.request(2, 'initialize', {
    protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' },
  });
  assert.equal(second.error?.code, -32600, JSON.stringify(second));
  assert.equal(second.result, undefined);
  // Still 2025-03-26, which batches (2025-11-25 would refuse the array).
  const answer = await server.batch([{ jsonrpc: '2.0', id: 3, method: 'ping' }]);
  assert.deepEqual(answer, [{ jsonrpc: '2.0', id: 3, result: {} }]);
  await server.stop();
});

// A notification over --max-message-bytes is never answered (JSON-RPC 2.0
// section 4.1; stderr says why); a request is refused with its own id even
// when the id comes last, after the params that made it too long (as the
// TypeScript SDK writes requests), past the first 64 KiB.
test('an oversized notification gets no answer; an oversized request gets its id back', async () => {
  const server = startServer(['--max-message-bytes', '1024']);
  const pad = 'x'.repeat(100000);
  server.send(JSON.stringify({ jsonrpc: '2.0', method: 'notifications/progress', params: { pad } }));
  const ping = JSON.parse(await server.exchange('{"jsonrpc":"2.0","id":40,"method":"ping"}'));
  assert.deepEqual(ping, { jsonrpc: '2.0', id: 40, result: {} }, 'the first line is the ping\'s answer');
  const refused = JSON.parse(await server.exchange(JSON.stringify({ method: 'ping', params: { pad }, jsonrpc: '2.0', id: 41 })));
  assert.equal(refused.id, 41, JSON.stringify(refused));
  assert.equal(refused.error.code, -32600);
  await server.stop();
});
