// The unmodified @e2b/code-interpreter SDK against coved
// (tests/integration/test_code_interpreter.sh): Sandbox.create() of its
// default template, code-interpreter-v1, then runCode with state kept
// between calls, the stdout and stderr callbacks, a matplotlib plot as a
// PNG, an exception's name, value and traceback, a second context, a
// restart, JavaScript, a timeoutMs that stops a long loop, and N sandboxes
// doing the first checks at once.  Its requests reach port 49999 of the
// sandbox through coved (E2B_SANDBOX_URL, header E2b-Sandbox-Port: 49999).
// Needs E2B_API_URL, E2B_SANDBOX_URL and E2B_API_KEY.
//   node tests/e2b/code-interpreter.mjs [all|concurrent N|bench N]
// Prints one line per check ("ok - ..." / "not ok - ...") and exits 1 when
// one failed; bench prints one JSON line of figures.
import { Sandbox } from '@e2b/code-interpreter';

for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']) {
	if (!process.env[v]) throw new Error(`${v} is not set`);
}
const [mode = 'all', nArg = '8'] = process.argv.slice(2);
const n = Number(nArg);
// The emulated test host is slow: generous request deadlines.
const opts = { timeoutMs: 600_000, requestTimeoutMs: 600_000 };
const run = { requestTimeoutMs: 300_000, timeoutMs: 300_000 };
let failed = 0;

function check(cond, what, detail) {
	if (cond) {
		console.log(`ok - ${what}`);
	} else {
		failed = 1;
		console.log(`not ok - ${what}: ${JSON.stringify(detail)?.slice(0, 400)}`);
	}
}

async function attempt(what, fn) {
	try {
		await fn();
	} catch (e) {
		check(false, what, String(e?.stack || e));
	}
}

// x = 1, then x + 1: the state is kept.
async function stateKept(sbx, tag = '') {
	await sbx.runCode('x = 1', run);
	const e = await sbx.runCode('x + 1', run);
	check(e.text === '2' && !e.error, `${tag}runCode('x = 1') then runCode('x + 1') gives 2`, e.toJSON());
}

async function plot(sbx, tag = '') {
	const e = await sbx.runCode('import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.show()', run);
	const png = e.results.find((r) => r.png)?.png;
	const head = png ? Buffer.from(png, 'base64').subarray(0, 8).toString('hex') : '';
	check(head === '89504e470d0a1a0a', `${tag}a matplotlib plot gives a PNG result`, e.toJSON());
}

async function all() {
	const sbx = await Sandbox.create(opts);
	check(sbx.sandboxId, `Sandbox.create() of ${Sandbox.defaultTemplate}`, sbx.sandboxId);
	try {
		await attempt('state', () => stateKept(sbx));
		await attempt('callbacks', async () => {
			const out = [];
			const err = [];
			const e = await sbx.runCode('import sys\nprint("hello")\nprint("oops", file=sys.stderr)', {
				...run,
				onStdout: (m) => out.push(m.line),
				onStderr: (m) => err.push(m.line),
			});
			check(
				out.join('') === 'hello\n' && err.join('') === 'oops\n' && e.logs.stdout.join('') === 'hello\n',
				'onStdout and onStderr get the output',
				{ out, err, logs: e.logs },
			);
		});
		await attempt('plot', () => plot(sbx));
		await attempt('error', async () => {
			const e = await sbx.runCode('def f():\n    raise ValueError("boom")\nf()', run);
			check(
				e.error?.name === 'ValueError' && e.error?.value === 'boom' && e.error?.traceback.includes('line 3'),
				'a raised exception gives error.name, value and traceback',
				e.toJSON(),
			);
		});
		await attempt('contexts', async () => {
			const ctx = await sbx.createCodeContext({ requestTimeoutMs: 300_000 });
			const a = await sbx.runCode('x', { ...run, context: ctx });
			await sbx.runCode('x = 10', { ...run, context: ctx });
			const b = await sbx.runCode('x', { ...run, context: ctx });
			const c = await sbx.runCode('x');
			check(
				a.error?.name === 'NameError' && b.text === '10' && c.text === '1',
				'a second context is independent',
				[a.toJSON(), b.text, c.text],
			);
			const listed = await sbx.listCodeContexts();
			check(listed.some((x) => x.id === ctx.id), 'listCodeContexts lists it', listed);
			await sbx.restartCodeContext(ctx);
			const d = await sbx.runCode('x', { ...run, context: ctx });
			check(d.error?.name === 'NameError', 'restartCodeContext clears its state', d.toJSON());
			await sbx.removeCodeContext(ctx);
			const after = await sbx.listCodeContexts();
			check(!after.some((x) => x.id === ctx.id), 'removeCodeContext removes it', after);
		});
		await attempt('js', async () => {
			const e = await sbx.runCode('1+1', { ...run, language: 'js' });
			check(e.text === '2', "runCode('1+1', {language: 'js'}) gives 2", e.toJSON());
		});
		await attempt('timeout', async () => {
			let thrown;
			const t0 = performance.now();
			try {
				await sbx.runCode('import time\nwhile True:\n    time.sleep(0.05)', { timeoutMs: 5_000 });
			} catch (e) {
				thrown = e;
			}
			const ms = Math.round(performance.now() - t0);
			check(thrown?.name === 'TimeoutError', `a timeoutMs stops a long loop (${ms} ms)`, String(thrown));
			const e = await sbx.runCode('x + 2', run);
			check(e.text === '3', 'the next runCode still works, state kept', e.toJSON());
		});
	} finally {
		await sbx.kill();
	}
}

async function concurrent() {
	const t0 = performance.now();
	const sbxs = await Promise.all(Array.from({ length: n }, () => Sandbox.create(opts)));
	try {
		const before = failed;
		await Promise.all(
			sbxs.map((s, i) =>
				attempt(`sandbox ${i}`, async () => {
					await stateKept(s, `[${i}] `);
					await plot(s, `[${i}] `);
				}),
			),
		);
		const ms = Math.round(performance.now() - t0);
		check(failed === before, `${n} sandboxes created and running code at once (${ms} ms)`, '');
	} finally {
		await Promise.all(sbxs.map((s) => s.kill()));
	}
}

// Create -> the first runCode's result (N sandboxes, one after another),
// and in each: runCode('1+1') round trips, commands.run('true') round
// trips (envd's path, for scale), and the server alone: a cell that times
// POST /execute of 1+1 to another context over the guest's loopback.
const inGuest = `
import http.client, json, time
def post(path, body):
    c = http.client.HTTPConnection("127.0.0.1", 49999, timeout=60)
    c.request("POST", path, json.dumps(body), {"Content-Type": "application/json"})
    r = c.getresponse().read()
    c.close()
    return r
ctx = json.loads(post("/contexts", {}))["id"]
post("/execute", {"code": "1", "context_id": ctx})
ms = []
for _ in range(5):
    t = time.monotonic()
    post("/execute", {"code": "1+1", "context_id": ctx})
    ms.append(round((time.monotonic() - t) * 1000, 1))
json.dumps(ms)`;

async function bench() {
	const out = { create_first_runcode_ms: [], runcode_1p1_ms: [], command_true_ms: [], server_alone_ms: [] };
	const time = async (key, fn) => {
		const t = performance.now();
		await fn();
		out[key].push(Math.round(performance.now() - t));
	};
	for (let i = 0; i < n; i++) {
		const t0 = performance.now();
		const sbx = await Sandbox.create(opts);
		const e = await sbx.runCode('1+1', run);
		out.create_first_runcode_ms.push(Math.round(performance.now() - t0));
		if (e.text !== '2') throw new Error(`runCode gave ${JSON.stringify(e.toJSON())}`);
		for (let j = 0; j < 5; j++) {
			await time('runcode_1p1_ms', () => sbx.runCode('1+1', run));
			await time('command_true_ms', () => sbx.commands.run('true', { requestTimeoutMs: 300_000 }));
		}
		const g = await sbx.runCode(inGuest, run);
		if (!g.text) throw new Error(`the in-guest timing gave ${JSON.stringify(g.toJSON())}`);
		out.server_alone_ms.push(...JSON.parse(g.text.slice(1, -1)));
		await sbx.kill();
	}
	console.log(JSON.stringify(out));
}

if (mode === 'all') await all();
else if (mode === 'concurrent') await concurrent();
else if (mode === 'bench') await bench();
else throw new Error('usage: code-interpreter.mjs [all|concurrent N|bench N]');
process.exit(failed);
