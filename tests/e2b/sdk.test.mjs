// The unmodified e2b JS SDK (pinned in package-lock.json) against coved.
// Run by tests/integration/test_e2b_sdk.sh, which starts coved with a TCP
// listener and sets E2B_API_URL, E2B_SANDBOX_URL (the same http://host:port)
// and E2B_API_KEY.  One sandbox goes through the SDK flow of issue 16,
// point 3, in order; each step asserts what coved answered.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox, CommandExitError } from 'e2b';

for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']) {
	if (!process.env[v]) throw new Error(`${v} is not set`);
}

let sbx;

test('Sandbox.create with envs, metadata and a timeout', async () => {
	sbx = await Sandbox.create('base', {
		envs: { FROM_CREATE: 'create-value' },
		metadata: { suite: 'e2b-sdk', n: '1' },
		timeoutMs: 300_000,
	});
	assert.match(sbx.sandboxId, /^[A-Za-z0-9._-]+$/);
	const info = await sbx.getInfo();
	assert.equal(info.sandboxId, sbx.sandboxId);
	assert.equal(info.metadata.suite, 'e2b-sdk');
	const r = await sbx.commands.run('echo $FROM_CREATE');
	assert.equal(r.stdout, 'create-value\n');
});

test('commands.run in the foreground: callbacks, envs, cwd', async () => {
	const out = [], err = [];
	const r = await sbx.commands.run('echo out; echo err >&2; echo $X; pwd', {
		envs: { X: 'from-run' },
		cwd: '/tmp',
		onStdout: (d) => out.push(d),
		onStderr: (d) => err.push(d),
	});
	assert.equal(r.exitCode, 0);
	assert.equal(r.stdout, 'out\nfrom-run\n/tmp\n');
	assert.equal(r.stderr, 'err\n');
	assert.equal(out.join(''), r.stdout);
	assert.equal(err.join(''), 'err\n');
});

test('a non-zero exit raises CommandExitError', async () => {
	await assert.rejects(sbx.commands.run('echo bad >&2; exit 3'), (e) => {
		assert.ok(e instanceof CommandExitError, `got ${e}`);
		assert.equal(e.exitCode, 3);
		assert.equal(e.stderr, 'bad\n');
		return true;
	});
});

test('a command over its timeout fails, and is killed', async () => {
	await assert.rejects(sbx.commands.run('echo started > /tmp/t.txt; sleep 600', { timeoutMs: 2000 }));
	// The client gives up at its deadline; coved passed the deadline on to
	// the agent, which kills the process group at about the same moment:
	// wait (bounded) until it is gone.
	let left;
	for (let i = 0; i < 100; i++) {
		left = await sbx.commands.list();
		if (!left.some((p) => p.args.join(' ').includes('sleep 600'))) break;
		await new Promise((r) => setTimeout(r, 100));
	}
	assert.ok(!left.some((p) => p.args.join(' ').includes('sleep 600')), JSON.stringify(left));
	assert.equal(await sbx.files.read('/tmp/t.txt'), 'started\n');
});

test('background commands: list, sendStdin, wait, kill', async () => {
	const h = await sbx.commands.run('read line; echo got $line', { background: true, stdin: true });
	assert.ok(h.pid > 0);
	const listed = await sbx.commands.list();
	const me = listed.find((p) => p.pid === h.pid);
	assert.ok(me, JSON.stringify(listed));
	// The SDK runs /bin/bash; an image without bash runs it with /bin/sh.
	assert.ok(['/bin/bash', '/bin/sh'].includes(me.cmd), me.cmd);
	assert.deepEqual(me.args.slice(0, 2), ['-l', '-c']);
	await h.sendStdin('abc\n');
	const r = await h.wait();
	assert.equal(r.stdout, 'got abc\n');

	const k = await sbx.commands.run('sleep 600', { background: true });
	assert.equal(await k.kill(), true);
	await assert.rejects(k.wait(), (e) => e instanceof CommandExitError);
	assert.equal(await sbx.commands.kill(k.pid), false); // gone: not_found
	assert.ok(!(await sbx.commands.list()).some((p) => p.pid === k.pid));
});

test('a client that disconnects mid-command: Connect re-attaches', async () => {
	const h = await sbx.commands.run('echo one; sleep 2; echo two', { background: true });
	await h.disconnect();
	const again = await sbx.commands.connect(h.pid);
	const r = await again.wait();
	assert.equal(r.stdout, 'one\ntwo\n');
});

test('pty.create, sendInput, resize, connect, kill', async () => {
	let out = '';
	const dec = new TextDecoder();
	const t = await sbx.pty.create({ cols: 80, rows: 24, timeoutMs: 0, onData: (d) => { out += dec.decode(d); } });
	assert.ok(t.pid > 0);
	await sbx.pty.sendInput(t.pid, new TextEncoder().encode('echo pty-$((6*7)); stty size\n'));
	for (let i = 0; i < 200 && !out.includes('24 80'); i++) await new Promise((r) => setTimeout(r, 50));
	assert.ok(out.includes('pty-42') && out.includes('24 80'), out);
	await sbx.pty.resize(t.pid, { cols: 100, rows: 30 });
	await sbx.pty.sendInput(t.pid, new TextEncoder().encode('stty size\n'));
	for (let i = 0; i < 200 && !out.includes('30 100'); i++) await new Promise((r) => setTimeout(r, 50));
	assert.ok(out.includes('30 100'), out);
	// Re-attach to the pty from a new handle: its output is pty data again.
	await t.disconnect();
	let again = '';
	const t2 = await sbx.pty.connect(t.pid, { timeoutMs: 0, onData: (d) => { again += dec.decode(d); } });
	await sbx.pty.sendInput(t.pid, new TextEncoder().encode('echo back-$((2+3))\n'));
	for (let i = 0; i < 200 && !again.includes('back-5'); i++) await new Promise((r) => setTimeout(r, 50));
	assert.ok(again.includes('back-5'), again);
	assert.equal(await t2.kill(), true);
});

test('files.write/read/list/exists (and rename, remove, makeDir)', async () => {
	const info = await sbx.files.write('/tmp/sdk/dir/a.txt', 'hello from the sdk');
	assert.equal(info.path, '/tmp/sdk/dir/a.txt');
	assert.equal(await sbx.files.read('/tmp/sdk/dir/a.txt'), 'hello from the sdk');
	const big = new Uint8Array(3 * 1024 * 1024);
	for (let i = 0; i < big.length; i++) big[i] = (i * 7) & 255;
	await sbx.files.write('/tmp/sdk/big.bin', big.buffer);
	const back = await sbx.files.read('/tmp/sdk/big.bin', { format: 'bytes' });
	assert.equal(back.length, big.length);
	assert.ok(Buffer.from(back).equals(Buffer.from(big)));
	const names = (await sbx.files.list('/tmp/sdk')).map((e) => `${e.name}:${e.type}`).sort();
	assert.deepEqual(names, ['big.bin:file', 'dir:dir']);
	assert.equal(await sbx.files.exists('/tmp/sdk/dir/a.txt'), true);
	assert.equal(await sbx.files.exists('/tmp/sdk/nope'), false);
	assert.equal(await sbx.files.makeDir('/tmp/sdk/new/deep'), true);
	assert.equal(await sbx.files.makeDir('/tmp/sdk/new/deep'), false);
	const moved = await sbx.files.rename('/tmp/sdk/dir/a.txt', '/tmp/sdk/new/b.txt');
	assert.equal(moved.name, 'b.txt');
	assert.equal((await sbx.commands.run('cat /tmp/sdk/new/b.txt')).stdout, 'hello from the sdk');
	await sbx.files.remove('/tmp/sdk/new');
	assert.equal(await sbx.files.exists('/tmp/sdk/new'), false);
});

test('setTimeout, getInfo, Sandbox.list', async () => {
	await sbx.setTimeout(600_000);
	const info = await sbx.getInfo();
	assert.ok(info.endAt.getTime() - Date.now() > 300_000, `endAt ${info.endAt}`);
	const items = await Sandbox.list().nextItems();
	assert.ok(items.some((s) => s.sandboxId === sbx.sandboxId), JSON.stringify(items));
});

test('betaPause then Sandbox.connect: the files are still there', async () => {
	await sbx.commands.run('echo kept > /root/before-pause.txt');
	await sbx.betaPause();
	const again = await Sandbox.connect(sbx.sandboxId);
	assert.equal(again.sandboxId, sbx.sandboxId);
	assert.equal(await again.files.read('/root/before-pause.txt'), 'kept\n');
	assert.equal((await again.commands.run('echo resumed')).stdout, 'resumed\n');
	sbx = again;
});

test('kill', async () => {
	await sbx.kill();
	const items = await Sandbox.list().nextItems();
	assert.ok(!items.some((s) => s.sandboxId === sbx.sandboxId));
});
