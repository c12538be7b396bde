// End-to-end test of `cocoon mcp` with the official MCP TypeScript SDK
// client (@modelcontextprotocol/sdk): handshake, tools/list, output schema
// validation, real Python and bash runs, isError on timeout, -32602 on an
// unknown tool, cancellation (checked from the host: the sandbox's process is
// gone), progress notifications and concurrent calls.
// Run by run.sh (ctest): COCOON=/path/to/cocoon node --test e2e.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import Ajv from 'ajv';

const COCOON = process.env.COCOON;
assert.ok(COCOON, 'set COCOON to the cocoon binary');

let client;
let transport;

before(async () => {
  transport = new StdioClientTransport({
    command: COCOON,
    args: ['mcp', '--max-concurrent', '4'],
    stderr: 'inherit',
  });
  client = new Client({ name: 'cocoon-e2e', version: '1.0.0' });
  await client.connect(transport);
});

after(async () => {
  await client?.close();
});

function pids(marker) {
  try {
    return execFileSync('pgrep', ['-f', marker], { encoding: 'utf8' }).trim().split('\n').filter(Boolean);
  } catch {
    return [];  // pgrep exits 1 when nothing matches
  }
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

test('initialize negotiates a supported version and names the server', () => {
  const info = client.getServerVersion();
  assert.equal(info.name, 'cocoon');
  assert.ok(client.getServerCapabilities().tools);
});

test('tools/list: four tools with strict input and compilable output schemas', async () => {
  const { tools } = await client.listTools();
  assert.deepEqual(tools.map((t) => t.name).sort(),
                   ['execute_code', 'execute_skill', 'inspect_runtimes', 'run_in_sandbox']);
  const ajv = new Ajv({ strict: false });
  for (const tool of tools) {
    assert.equal(tool.inputSchema.type, 'object');
    assert.equal(tool.inputSchema.additionalProperties, false, tool.name);
    assert.ok(tool.outputSchema, tool.name);
    assert.ok(ajv.compile(tool.outputSchema), tool.name);
    assert.ok(ajv.compile(tool.inputSchema), tool.name);
    assert.ok(tool.annotations && typeof tool.annotations.readOnlyHint === 'boolean', tool.name);
  }
  const execute = tools.find((t) => t.name === 'execute_code');
  for (const language of ['python', 'bash']) {
    assert.ok(execute.inputSchema.properties.language.enum.includes(language), language);
  }
});

test('execute_code runs Python in a sandbox; text content is the same JSON', async () => {
  const result = await client.callTool({ name: 'execute_code', arguments: { language: 'python', code: 'print(6*7)' } });
  assert.equal(result.isError, false, JSON.stringify(result));
  assert.equal(result.structuredContent.stdout, '42\n');
  assert.equal(result.structuredContent.exit_code, 0);
  assert.deepEqual(JSON.parse(result.content[0].text), result.structuredContent);
  assert.ok('audit' in result.structuredContent);
});

test('execute_code runs bash, with stdin and staged files', async () => {
  const result = await client.callTool({
    name: 'execute_code',
    arguments: { language: 'bash', code: 'read x; echo "got $x"; cat data/in.txt; echo oops >&2; exit 3',
                 stdin: 'hello\n', files: { 'data/in.txt': 'file-content\n' } },
  });
  assert.equal(result.isError, false, JSON.stringify(result));
  assert.equal(result.structuredContent.stdout, 'got hello\nfile-content\n');
  assert.equal(result.structuredContent.stderr, 'oops\n');
  assert.equal(result.structuredContent.exit_code, 3);
});

test('the sandbox has no network and a read-only system', async () => {
  const code = [
    'import socket, os',
    'try:',
    '    socket.create_connection(("127.0.0.1", 22), timeout=1); print("net: open")',
    'except OSError as e: print("net: blocked")',
    'try:',
    '    open("/usr/cocoon-probe", "w"); print("usr: writable")',
    'except OSError: print("usr: read-only")',
  ].join('\n');
  const result = await client.callTool({ name: 'execute_code', arguments: { language: 'python', code } });
  assert.equal(result.structuredContent.stdout, 'net: blocked\nusr: read-only\n', JSON.stringify(result));
});

test('a timeout is isError with timed_out set', async () => {
  const result = await client.callTool({
    name: 'execute_code', arguments: { language: 'python', code: 'while True: pass', timeout_ms: 700 },
  });
  assert.equal(result.isError, true);
  assert.equal(result.structuredContent.timed_out, true);
});

test('bad input is an isError result naming the field', async () => {
  const result = await client.callTool({ name: 'run_in_sandbox', arguments: { command: 'true', workdir: '../etc' } });
  assert.equal(result.isError, true);
  assert.match(result.structuredContent.error.message, /workdir/);
});

test('an unknown tool is JSON-RPC error -32602', async () => {
  await assert.rejects(client.callTool({ name: 'format_disk', arguments: {} }), (error) => {
    assert.ok(error instanceof McpError);
    assert.equal(error.code, -32602);
    return true;
  });
});

test('run_in_sandbox takes an argv array or a shell string', async () => {
  const argv = await client.callTool({ name: 'run_in_sandbox', arguments: { command: ['echo', 'a', 'b'] } });
  assert.equal(argv.structuredContent.stdout, 'a b\n', JSON.stringify(argv));
  const shell = await client.callTool({ name: 'run_in_sandbox', arguments: { command: 'echo $((2+3)) | sed s/5/five/' } });
  assert.equal(shell.structuredContent.stdout, 'five\n');
});

test('inspect_runtimes lists python with a version', async () => {
  const result = await client.callTool({ name: 'inspect_runtimes', arguments: {} });
  const python = result.structuredContent.runtimes.find((r) => r.name === 'python');
  assert.ok(python && python.available, JSON.stringify(result.structuredContent));
  assert.match(python.version, /Python 3/);
});

test('a refused inspect_runtimes call still matches its output schema', async () => {
  // The SDK checks structuredContent against the tool's outputSchema even when
  // isError is set; a result of the wrong shape would throw here instead.
  const result = await client.callTool({ name: 'inspect_runtimes', arguments: { unexpected: 1 } });
  assert.equal(result.isError, true);
  assert.deepEqual(result.structuredContent.runtimes, []);
  assert.equal(result.structuredContent.error.kind, 'bad_input');
});

test('progress notifications stream the output live', async () => {
  // The program pauses after each line, so each notification is delivered
  // while the call still runs. That is what "live" means, and it also keeps
  // this test clear of SDK 1.x's own race: it dispatches notifications on a
  // microtask but responses at once, and a response read in the same chunk
  // as the call's last notifications retires their handler first, dropping
  // them (modelcontextprotocol/typescript-sdk#2580). That the server writes
  // every notification before its response is checked on the raw protocol
  // in raw.test.mjs.
  const messages = [];
  let ended = false;
  let liveBeforeEnd = 0;
  const result = await client.callTool(
    { name: 'execute_code', arguments: { language: 'python', code: 'import time\nfor i in range(3):\n    print("line", i, flush=True)\n    time.sleep(0.3)' } },
    undefined,
    { onprogress: (p) => { messages.push(p.message); if (!ended) liveBeforeEnd += 1; } },
  );
  ended = true;
  assert.equal(result.isError, false);
  assert.equal(messages.join(''), 'line 0\nline 1\nline 2\n');
  assert.equal(liveBeforeEnd, messages.length);
});

test('cancelling a call kills its sandbox', async () => {
  const marker = `cocoon-cancel-${process.pid}-${Date.now()}`;
  const controller = new AbortController();
  const call = client.callTool(
    { name: 'execute_code', arguments: { language: 'python', code: `import time\n# ${marker}\ntime.sleep(30)` } },
    undefined,
    { signal: controller.signal, timeout: 60000 },
  );
  let seen = [];
  for (let i = 0; i < 100 && seen.length === 0; ++i) {
    await sleep(50);
    seen = pids(marker);
  }
  assert.ok(seen.length > 0, 'the sandboxed process never appeared');
  const abortedAt = Date.now();
  controller.abort('test cancels');
  await assert.rejects(call);
  let left = pids(marker);
  while (left.length > 0 && Date.now() - abortedAt < 3000) {
    await sleep(50);
    left = pids(marker);
  }
  assert.deepEqual(left, [], 'sandbox still running after cancellation');
  assert.ok(Date.now() - abortedAt < 3000);
});

test('four calls run concurrently', async () => {
  // Each call reports when its program started and ended (the wall clock is
  // the host's: there is no time namespace) and sleeps 1 s in between. The
  // four ran at once if one moment lies inside all four intervals: the
  // latest start comes before the earliest end. Unlike a bound on the
  // elapsed time, this holds however loaded the machine is.
  const calls = [0, 1, 2, 3].map((i) => client.callTool({
    name: 'execute_code',
    arguments: { language: 'python', code: `import time\nprint(time.time())\ntime.sleep(1)\nprint(time.time())\nprint(${i})` },
  }));
  const results = await Promise.all(calls);
  const intervals = results.map((r, i) => {
    assert.equal(r.isError, false, JSON.stringify(r));
    const [start, end, index] = r.structuredContent.stdout.trim().split('\n');
    assert.equal(index, `${i}`);
    return [Number(start), Number(end)];
  });
  const latestStart = Math.max(...intervals.map(([start]) => start));
  const earliestEnd = Math.min(...intervals.map(([, end]) => end));
  assert.ok(latestStart < earliestEnd, `the four calls did not overlap: ${JSON.stringify(intervals)}`);
});
