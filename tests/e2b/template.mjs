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
import { copyFileSync, mkdtempSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Sandbox, Template, waitForURL } from 'e2b';

for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY']) {
	if (!process.env[v]) throw new Error(`${v} is not set`);
}
const args = process.argv.slice(2);
const fromTemplate = args[0] === '--template';
if (fromTemplate) args.shift();
const [source, name = `e2b-tmpl-${process.pid}`] = args;
if (!source) throw new Error('usage: template.mjs IMAGE [NAME] | --template PARENT [NAME]');

// The build context: the app of tests/integration/test_dockerfile.sh, which
// the COPY step uploads (a gzip'ed tar through the upload link coved hands
// out).  The template is that test's Dockerfile in the SDK's words: ARG
// (the SDK makes it an env), ENV, WORKDIR, COPY, a RUN making a venv, the
// last RUN, and CMD as a start command with a ready check.
const ctx = mkdtempSync(join(tmpdir(), 'cove-e2b-tmpl-'));
mkdirSync(join(ctx, 'app'), { recursive: true });
// The same app as test_dockerfile.sh's (tests/integration/app).
copyFileSync(new URL('../integration/app/server.py', import.meta.url), join(ctx, 'app', 'server.py'));

const opts = { requestTimeoutMs: 600_000 };
const base = Template({ fileContextPath: ctx });
const t = (fromTemplate ? base.fromTemplate(source) : base.fromImage(source))
	.setEnvs({ APP_MSG: 'from-build-arg' })
	.setEnvs({ APP_NAME: 'cove-app' })
	.setWorkdir('/srv/app')
	.copy('app', '/srv/app/', { mode: 0o750 })
	.runCmd('echo "$APP_MSG" >/srv/app/msg && python3 -m venv --without-pip /srv/venv && echo venv-made')
	.runCmd('echo last-v1 >/srv/app/last && echo ran-last-v1')
	.setStartCmd('python3 /srv/app/server.py', waitForURL('http://127.0.0.1:8000/'));

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
	// The first request to the start command's server: one try, no retries.
	const r = await sbx.commands.run(
		'pwd; echo "$APP_NAME"; cat msg last; test -x /srv/venv/bin/python3 && echo venv; ' +
		'stat -c %a /srv/app/server.py; curl -sS --max-time 20 http://127.0.0.1:8000/');
	assert.equal(r.stdout,
		'/srv/app\ncove-app\nfrom-build-arg\nlast-v1\nvenv\n750\nhello from cove-app in /srv/app\n');
	console.log('ok sandbox from the template: ENV, WORKDIR, COPY (with its mode), both RUNs and the start command\'s server answering');
} finally {
	await sbx.kill();
}

if (process.env.E2B_API_KEY_B) {
	const other = { ...opts, apiKey: process.env.E2B_API_KEY_B };
	assert.equal(await Template.exists(name, other), false);
	await assert.rejects(Sandbox.create(name, other), /not found|404/);
	console.log('ok another tenant sees no such template');
}
