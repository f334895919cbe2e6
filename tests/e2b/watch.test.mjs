// The unmodified e2b JS SDK against coved: isRunning(), files.watchDir and
// getMetrics (issue 30).  Run by tests/integration/test_e2b_watch.sh, which
// starts coved with a TCP listener and sets E2B_API_URL, E2B_SANDBOX_URL and
// E2B_API_KEY.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox } from 'e2b';

for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']) {
	if (!process.env[v]) throw new Error(`${v} is not set`);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const made = [];
after(async () => {
	for (const s of made) await s.kill().catch(() => {});
});

test('isRunning: true running, false paused, true again, false killed', async () => {
	const sbx = await Sandbox.create('base', { timeoutMs: 300_000 });
	made.push(sbx);
	assert.equal(await sbx.isRunning(), true);
	await sbx.betaPause();
	assert.equal(await sbx.isRunning(), false, 'paused');
	const again = await Sandbox.connect(sbx.sandboxId);
	assert.equal(await again.isRunning(), true, 'resumed');
	await again.kill();
	assert.equal(await again.isRunning(), false, 'killed');
});

test('isRunning: false once its timeout has passed', async () => {
	const sbx = await Sandbox.create('base', { timeoutMs: 3_000 });
	made.push(sbx);
	const t0 = Date.now();
	assert.equal(await sbx.isRunning(), true);
	let running = true;
	while (running && Date.now() - t0 < 30_000) {
		await sleep(500);
		running = await sbx.isRunning();
	}
	assert.equal(running, false, 'still running 30 s after a 3 s timeout');
	assert.ok(Date.now() - t0 >= 2_500, `gone after ${Date.now() - t0} ms`);
});

test('files.watchDir, recursive: create, write, rename, remove, a new folder', async () => {
	const sbx = await Sandbox.create('base', { timeoutMs: 300_000 });
	made.push(sbx);
	await sbx.files.makeDir('/tmp/w');
	const seen = [];
	const h = await sbx.files.watchDir('/tmp/w', (e) => seen.push(`${e.type} ${e.name}`),
		{ recursive: true });
	await sbx.commands.run('echo one > /tmp/w/a.txt');
	await sbx.commands.run('echo two >> /tmp/w/a.txt');
	await sbx.commands.run('mkdir -p /tmp/w/sub/deeper && echo x > /tmp/w/sub/deeper/b.txt');
	await sbx.files.rename('/tmp/w/a.txt', '/tmp/w/c.txt');
	await sbx.files.remove('/tmp/w/c.txt');
	const want = ['create a.txt', 'write a.txt', 'create sub', 'create sub/deeper/b.txt',
		'rename a.txt', 'create c.txt', 'remove c.txt'];
	const t0 = Date.now();
	while (!want.every((w) => seen.includes(w)) && Date.now() - t0 < 10_000) await sleep(100);
	await h.stop();
	for (const w of want) assert.ok(seen.includes(w), `no "${w}" in ${JSON.stringify(seen)}`);
	console.log(`# watchDir events: ${JSON.stringify(seen)}`);
});

test('getMetrics: samples whose CPU rises under a CPU loop', async () => {
	const sbx = await Sandbox.create('base', { timeoutMs: 300_000 });
	made.push(sbx);
	await sleep(5_000);
	const idle = await sbx.getMetrics();
	assert.ok(idle.length >= 1, 'no samples after 5 s');
	const m = idle[idle.length - 1];
	for (const k of ['cpuUsedPct', 'cpuCount', 'memUsed', 'memTotal', 'diskUsed', 'diskTotal'])
		assert.equal(typeof m[k], 'number', `${k}: ${JSON.stringify(m)}`);
	assert.ok(m.timestamp instanceof Date && !isNaN(m.timestamp), `timestamp ${m.timestamp}`);
	assert.ok(m.cpuCount >= 1 && m.memTotal > 0 && m.memUsed > 0 && m.diskTotal > 0,
		JSON.stringify(m));
	const idleMax = Math.max(...idle.map((s) => s.cpuUsedPct));
	const loopStart = new Date();
	await sbx.commands.run('i=0; while [ $i -lt 100000000 ]; do i=$((i+1)); done',
		{ background: true, timeoutMs: 0 });
	await sleep(7_000);
	const busy = await sbx.getMetrics({ start: loopStart });
	const busyMax = Math.max(...busy.map((s) => s.cpuUsedPct));
	console.log(`# getMetrics: idle max ${idleMax}%, under the loop max ${busyMax}% ` +
		`(${busy.length} samples), cpuCount ${m.cpuCount}, memUsed ${m.memUsed}, ` +
		`diskUsed ${m.diskUsed} of ${m.diskTotal}`);
	assert.ok(busy.length >= 2, `${busy.length} samples since the loop began`);
	assert.ok(busyMax >= 30 / m.cpuCount && busyMax > idleMax + 10,
		`CPU did not rise: idle ${idleMax}, loop ${busyMax}`);
	assert.ok(busy.every((s) => s.timestamp >= new Date(loopStart.getTime() - 1000)),
		'start= was not applied');
});

// coved's REST API beside the SDK: what getInfo does not show (Cove's
// stateReason) and the journal's lifecycle lines.
async function rest(path) {
	const r = await fetch(`${process.env.E2B_API_URL}${path}`,
		{ headers: { 'X-API-KEY': process.env.E2B_API_KEY } });
	assert.equal(r.status, 200, `GET ${path}: ${r.status}`);
	return r.json();
}

test('idle pause after 5 s of nothing, never during a command; auto-resume', async () => {
	// autoPause with autoResume: the 5 s timeout counts idle time only.
	const sbx = await Sandbox.create('base',
		{ timeoutMs: 5_000, lifecycle: { onTimeout: 'pause', autoResume: true } });
	made.push(sbx);
	await sbx.files.write('/root/before.txt', 'kept');
	const r0 = await sbx.commands.run('sleep 8; echo slept', { timeoutMs: 60_000 });
	assert.equal(r0.stdout, 'slept\n');
	assert.equal((await sbx.getInfo()).state, 'running', 'paused during an 8 s command');
	const quiet = Date.now();
	let state = 'running';
	while (state === 'running' && Date.now() - quiet < 60_000) {
		await sleep(250);
		state = (await rest(`/sandboxes/${sbx.sandboxId}`)).state;
	}
	const after = Date.now() - quiet;
	assert.equal(state, 'paused', 'not paused 60 s after its last request');
	assert.ok(after >= 4_800, `paused ${after} ms after its last request`);
	const info = await rest(`/sandboxes/${sbx.sandboxId}`);
	assert.equal(info.stateReason, 'idle');
	assert.equal(info.lifecycle.autoResume, true);
	assert.equal(await sbx.isRunning(), false, 'isRunning woke it');
	// Any envd request resumes it: a command, then the file from before.
	const t0 = Date.now();
	const r = await sbx.commands.run('cat /root/before.txt');
	assert.equal(r.stdout, 'kept');
	const resumed = await rest(`/sandboxes/${sbx.sandboxId}`);
	assert.equal(resumed.state, 'running');
	assert.equal(resumed.stateReason, 'auto');
	const log = await rest(`/sandboxes/${sbx.sandboxId}/logs`);
	const life = log.entries.filter((e) => e.type === 'lifecycle').map((e) => `${e.event}:${e.reason}`);
	assert.ok(life.includes('paused:idle') && life.includes('resumed:auto'), JSON.stringify(life));
	console.log(`# idle: paused ${after} ms after the last request; a command resumed it and ` +
		`ran in ${Date.now() - t0} ms; journal ${JSON.stringify(life)}`);
});

test('diff: an SDK session, then GET /sandboxes/{id}/diff lists exactly what it did', async () => {
	const sbx = await Sandbox.create('base', { timeoutMs: 300_000 });
	made.push(sbx);
	// A file of the image to delete, and a file of it to edit.
	const victim = (await sbx.commands.run(
		'find /etc -maxdepth 1 -type f | sort | head -n 1')).stdout.trim();
	assert.match(victim, /^\/etc\/./);
	await sbx.files.write('/root/notes.txt', 'first\n');
	await sbx.files.write('/root/notes.txt', 'first\nsecond\n'); // edited
	await sbx.files.makeDir('/root/dir1/sub');
	await sbx.files.write('/root/dir1/sub/f.txt', 'f\n');
	await sbx.files.rename('/root/dir1', '/root/dir2');
	await sbx.commands.run(`rm ${victim} && chmod 600 /root/notes.txt && ` +
		'ln -s /root/notes.txt /root/link && ' +
		'dd if=/dev/urandom of=/root/big.bin bs=1M count=20 2>/dev/null && sync');
	const sums = (await sbx.commands.run('sha256sum /root/big.bin /root/notes.txt')).stdout
		.trim().split('\n').map((l) => l.split(/\s+/)[0]);
	const r = await fetch(`${process.env.E2B_API_URL}/sandboxes/${sbx.sandboxId}/diff`,
		{ headers: { 'X-API-KEY': process.env.E2B_API_KEY } });
	assert.equal(r.status, 200);
	const d = await r.json();
	const got = new Map(d.changes.map((c) => [c.path, c]));
	const want = {
		'/root/notes.txt': 'added', '/root/link': 'added', '/root/big.bin': 'added',
		'/root/dir2': 'added', '/root/dir2/sub': 'added', '/root/dir2/sub/f.txt': 'added',
		[victim]: 'deleted',
	};
	for (const [p, k] of Object.entries(want))
		assert.equal(got.get(p)?.kind, k, `${p}: ${JSON.stringify(got.get(p))}`);
	// Nothing else but the folders whose entries changed: not /etc/hostname,
	// which cove-agent renames in every restore through a tmpfs file bound
	// over the image's.
	for (const c of d.changes)
		assert.ok(c.path in want || (c.kind === 'changed' && c.type === 'dir'),
			`unexpected ${JSON.stringify(c)}`);
	assert.equal(got.get('/root/big.bin').sha256, sums[0]);
	assert.equal(got.get('/root/notes.txt').sha256, sums[1]);
	assert.equal(got.get('/root/notes.txt').mode, 0o600);
	assert.equal(got.get('/root/link').target, '/root/notes.txt');
	assert.ok(!got.has('/root/dir1'), 'the rename\'s old path is not in the diff');
	console.log(`# diff: ${d.changes.map((c) => `${c.kind[0].toUpperCase()} ${c.path}`).join(', ')}; ` +
		`${d.stats.bytes_read} bytes read in ${d.stats.elapsed_us} us`);
});
