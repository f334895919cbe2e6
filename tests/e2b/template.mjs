// The unmodified e2b SDK's Template builder against coved: defines a
// template, builds it with Template.build (coved's E2B template routes:
// POST /v3/templates, the COPY archive's upload link, POST
// /v2/templates/{id}/builds/{id}, the status polls), then starts a sandbox
// from it by name and checks what each step left.  Needs E2B_API_URL,
// E2B_SANDBOX_URL and E2B_API_KEY as sdk.test.mjs; E2B_API_KEY_B (another
// tenant's key), when set, must not see the template.
//   node tests/e2b/template.mjs IMAGE [NAME]            Template().fromImage(IMAGE)
//   node tests/e2b/template.mjs --template PARENT [NAME] Template().fromTemplate(PARENT)
// IMAGE is any reference coved's builder takes (oci:DIR[:TAG],
// oci-archive:FILE[:TAG], docker-archive:FILE or a registry name): the SDK
// passes fromImage's string through as it is.  Prints one line per check
// and exits non-zero on the first that fails.
import assert from 'node:assert/strict';
import { mkdtempSync, mkdirSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sandbox, Template, waitForFile } from 'e2b';

for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']) {
	if (!process.env[v]) throw new Error(`${v} is not set`);
}
const args = process.argv.slice(2);
const fromTemplate = args[0] === '--template';
if (fromTemplate) args.shift();
const [source, name = `e2b-tmpl-${process.pid}`] = args;
if (!source) throw new Error('usage: template.mjs IMAGE [NAME] | --template PARENT [NAME]');

// The build context: a small folder the COPY step uploads (a gzip'ed tar
// through the upload link coved hands out).
const ctx = mkdtempSync(join(tmpdir(), 'cove-e2b-tmpl-'));
mkdirSync(join(ctx, 'files', 'sub'), { recursive: true });
writeFileSync(join(ctx, 'files', 'hello.txt'), 'hello from copy\n');
writeFileSync(join(ctx, 'files', 'sub', 'deep.txt'), 'deep\n');

const opts = { requestTimeoutMs: 600_000 };
const base = Template({ fileContextPath: ctx });
const t = (fromTemplate ? base.fromTemplate(source) : base.fromImage(source))
	.runCmd('mkdir -p /app && echo built > /app/built.txt')
	.copy('files', '/app/data/', { mode: 0o750 })
	.setEnvs({ GREETING: 'hello from env' })
	.setWorkdir('/app')
	.setStartCmd('echo started > /tmp/started && exec sleep 100000', waitForFile('/tmp/started'));

const lines = [];
try {
	const info = await Template.build(t, name, {
		...opts,
		onBuildLogs: (e) => lines.push(`${e.level} ${e.message}`),
	});
	assert.equal(info.name, name);
	assert.match(info.buildId, /^[0-9a-f-]{36}$/);
	console.log(`ok build: template ${info.templateId}, build ${info.buildId}, ${lines.length} log lines`);
} catch (e) {
	console.log(lines.slice(-40).join('\n'));
	throw e;
} finally {
	rmSync(ctx, { recursive: true, force: true });
}

assert.equal(await Template.exists(name, opts), true);
console.log('ok Template.exists');

const sbx = await Sandbox.create(name, { ...opts, timeoutMs: 300_000 });
try {
	const r = await sbx.commands.run(
		'cat /app/built.txt /app/data/hello.txt /app/data/sub/deep.txt; echo "$GREETING"; pwd; cat /tmp/started; ' +
		'stat -c %a /app/data/hello.txt /app/data/sub/deep.txt');
	assert.equal(r.stdout, 'built\nhello from copy\ndeep\nhello from env\n/app\nstarted\n750\n750\n');
	console.log('ok sandbox from the template: RUN, COPY (with its mode), ENV, WORKDIR and the start command left their marks');
} finally {
	await sbx.kill();
}

if (process.env.E2B_API_KEY_B) {
	const other = { ...opts, apiKey: process.env.E2B_API_KEY_B };
	assert.equal(await Template.exists(name, other), false);
	await assert.rejects(Sandbox.create(name, other), /not found|404/);
	console.log('ok another tenant sees no such template');
}
