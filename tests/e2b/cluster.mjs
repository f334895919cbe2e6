// The unmodified e2b SDK against a cluster of coved nodes, pointed at one
// node only (E2B_API_URL = E2B_SANDBOX_URL = node 1).  Driven step by step
// by tests/integration/test_cluster.sh, which kills and restarts nodes in
// between.  Each step asserts what it got and exits non-zero otherwise.
//   create N            N sandboxes; prints their ids, one a line
//   work ID [MB]        foreground and background commands with stdin, a
//                       file of MB megabytes each way, pause and connect
//   list ID...          Sandbox.list shows exactly these; tenant B
//                       (E2B_API_KEY_B) sees none of them
//   alive ID...         a command in each answers
//   cat ID PATH         prints the file (connects, so resumes a paused one)
//   pause ID            betaPause
//   rtt ID N URL        N exec round trips through node 1 and N direct to
//                       URL (the owner), alternating; prints both medians
//                       in ms
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { Sandbox } from 'e2b';

const [step, ...args] = process.argv.slice(2);
// requestTimeoutMs: a 50 MB file on a slow emulated host outlasts the SDK's default.
const opts = { timeoutMs: 900_000, requestTimeoutMs: 600_000 };

async function work(id, mb) {
	const sbx = await Sandbox.connect(id, opts);
	const r = await sbx.commands.run('echo fg-$X', { envs: { X: id } });
	assert.equal(r.stdout, `fg-${id}\n`);
	const h = await sbx.commands.run('read line; echo got $line', { background: true, stdin: true });
	await h.sendStdin('abc\n');
	assert.equal((await h.wait()).stdout, 'got abc\n');
	if (mb > 0) {
		const big = new Uint8Array(mb << 20);
		for (let i = 0; i < big.length; i += 4096) big[i] = (i >> 12) & 0xff;
		const want = createHash('sha256').update(big).digest('hex');
		await sbx.files.write('/root/big.bin', big.buffer);
		const sum = await sbx.commands.run('sha256sum /root/big.bin');
		assert.equal(sum.stdout.split(' ')[0], want, 'the upload arrived whole');
		const back = await sbx.files.read('/root/big.bin', { format: 'bytes' });
		assert.equal(back.length, big.length);
		assert.equal(createHash('sha256').update(back).digest('hex'), want, 'the download came back whole');
		await sbx.commands.run('rm /root/big.bin');
	}
	await sbx.commands.run('echo kept > /root/kept.txt');
	await sbx.betaPause();
	const again = await Sandbox.connect(id, opts);
	assert.equal(await again.files.read('/root/kept.txt'), 'kept\n');
	console.log(`ok ${id}: commands, stdin, ${mb} MB each way, pause and resume`);
}

if (step === 'create') {
	const ids = [];
	for (let i = 0; i < Number(args[0]); i++) {
		const sbx = await Sandbox.create('base', opts);
		ids.push(sbx.sandboxId);
	}
	console.log(ids.join('\n'));
} else if (step === 'work') {
	await work(args[0], Number(args[1] || 0));
} else if (step === 'list') {
	const seen = [];
	const p = Sandbox.list();
	while (p.hasNext) seen.push(...(await p.nextItems()).map((s) => s.sandboxId));
	assert.deepEqual([...seen].sort(), [...args].sort());
	const other = Sandbox.list({ apiKey: process.env.E2B_API_KEY_B });
	const theirs = [];
	while (other.hasNext) theirs.push(...(await other.nextItems()).map((s) => s.sandboxId));
	assert.deepEqual(theirs.filter((x) => args.includes(x)), []);
	console.log(`ok list: ${seen.length} sandboxes; tenant B sees ${theirs.length}`);
} else if (step === 'alive') {
	for (const id of args) {
		const sbx = await Sandbox.connect(id, opts);
		assert.equal((await sbx.commands.run('echo alive')).stdout, 'alive\n');
	}
	console.log(`ok alive: ${args.length}`);
} else if (step === 'cat') {
	const sbx = await Sandbox.connect(args[0], opts);
	process.stdout.write(await sbx.files.read(args[1]));
} else if (step === 'pause') {
	const sbx = await Sandbox.connect(args[0], opts);
	await sbx.betaPause();
	console.log(`ok paused ${args[0]}`);
} else if (step === 'rtt') {
	const via = await Sandbox.connect(args[0], opts);
	const direct = await Sandbox.connect(args[0], { ...opts, apiUrl: args[2], sandboxUrl: args[2] });
	const t = { via: [], direct: [] };
	for (let i = 0; i < 2 * Number(args[1]); i++) {
		const [name, sbx] = i % 2 ? ['direct', direct] : ['via', via];
		const t0 = performance.now();
		await sbx.commands.run('true');
		t[name].push(performance.now() - t0);
	}
	const median = (a) => a.sort((x, y) => x - y)[a.length >> 1].toFixed(1);
	console.log(`${median(t.via)} ${median(t.direct)}`);
} else {
	console.error('usage: cluster.mjs create N | work ID [MB] | list ID... | alive ID... | cat ID PATH | pause ID | rtt ID N URL');
	process.exit(2);
}
