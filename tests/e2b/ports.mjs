// A sandbox's ports through coved (tests/integration/test_ports.sh), with
// the unmodified e2b SDK: `node ports.mjs` prints "ok - ..." or
// "not ok - ..." per check, then "ids A B" (the sandboxes it made).
//
// Environment: KEYA, KEYB (two tenants' API keys), API (coved's control
// plane), SBXURL (coved's listener, for E2B_SANDBOX_URL), DOMAIN (coved's
// "domain"; its names resolve to coved), TEMPLATE (one with python3).
//
// 1. E2B_SANDBOX_URL: tenant A's sandbox runs `python3 -m http.server 8000`
//    and tests/e2b/ports_guest.py on 9000 (websocket echo, server-sent
//    events, the headers it got); requests carry E2b-Sandbox-Id and
//    E2b-Sandbox-Port.  Nothing on 8001: 502 within a second.  Tenant B's
//    key or token on A's ports: 404.  B's sandbox is created with public
//    traffic restricted: its port needs its traffic token (403 without).
// 2. By host name: the SDK connects with no E2B_SANDBOX_URL, so it reaches
//    envd at https://49983-<id>.<domain>; ports at https://<port>-<id>.<domain>.
import { Sandbox } from 'e2b';
import { readFileSync } from 'node:fs';
import { WebSocket } from 'undici';

const { KEYA, KEYB, API, SBXURL, DOMAIN, TEMPLATE } = process.env;
let failed = 0;
function check(cond, what) {
	console.log(`${cond ? 'ok' : 'not ok'} - ${what}`);
	if (!cond) failed++;
}

// get() - a request to a port: {status, body, ms}.
async function get(url, headers = {}) {
	const t0 = performance.now();
	try {
		const r = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) });
		const body = await r.text();
		return { status: r.status, body, ms: performance.now() - t0 };
	} catch (e) {
		return { status: 0, body: String(e.cause?.message || e.message), ms: performance.now() - t0 };
	}
}

// until() - get() again until it answers 200 (the server is starting).
async function until(url, headers, seconds = 60) {
	let r;
	for (let i = 0; i < seconds * 4; i++) {
		r = await get(url, headers);
		if (r.status === 200) return r;
		await new Promise((res) => setTimeout(res, 250));
	}
	return r;
}

// echo() - one websocket message there and back.
function echo(url, headers, msg) {
	return new Promise((resolve) => {
		const ws = new WebSocket(url, { headers });
		const t = setTimeout(() => { ws.close(); resolve('timeout'); }, 30_000);
		ws.onopen = () => ws.send(msg);
		ws.onmessage = (e) => { clearTimeout(t); ws.close(); resolve(e.data); };
		ws.onerror = (e) => { clearTimeout(t); resolve(`error: ${e.error?.message || e.message}`); };
	});
}

// events() - the arrival times (ms) of /sse's events.
async function events(url, headers) {
	const t0 = performance.now();
	const times = [];
	try {
		const r = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) });
		const dec = new TextDecoder();
		let text = '';
		for await (const chunk of r.body) {
			text += dec.decode(chunk, { stream: true });
			while (times.length < (text.match(/data: /g) || []).length) times.push(performance.now() - t0);
		}
	} catch (e) {
		return { times, error: e.message };
	}
	return { times };
}

const opts = (key, extra = {}) => ({ apiKey: key, apiUrl: API, timeoutMs: 600_000, ...extra });
const big = 'x'.repeat(200 * 1024);

// ---- 1. E2B_SANDBOX_URL and E2b-Sandbox-Port ----
const a = await Sandbox.create(TEMPLATE, opts(KEYA, { sandboxUrl: SBXURL }));
check(a.sandboxDomain === DOMAIN, `create answers the domain (${a.sandboxDomain})`);
await a.commands.run('mkdir -p /tmp/www');
await a.files.write('/tmp/www/index.html', 'port-8000-ok\n');
await a.files.write('/tmp/ports_guest.py', readFileSync(new URL('./ports_guest.py', import.meta.url), 'utf8'));
await a.commands.run('cd /tmp/www && exec python3 -m http.server 8000', { background: true, timeoutMs: 0 });
await a.commands.run('exec python3 /tmp/ports_guest.py 9000', { background: true, timeoutMs: 0 });
const hdr = (port, more = {}) => ({ 'E2b-Sandbox-Id': a.sandboxId, 'E2b-Sandbox-Port': String(port), ...more });

let r = await until(`${SBXURL}/index.html`, hdr(8000));
check(r.status === 200 && r.body === 'port-8000-ok\n', `python3 -m http.server 8000 through coved: ${r.status} ${r.body.trim()}`);
r = await until(`${SBXURL}/headers`, hdr(9000, { 'X-Access-Token': a.envdAccessToken, 'X-API-Key': KEYA, 'Authorization': 'Bearer app' }));
check(r.status === 200 && r.body.includes('authorization') && !/x-access-token|x-api-key|e2b-/.test(r.body),
	`the server gets the app's headers, none of coved's (${r.body})`);
r = await echo(SBXURL.replace(/^http/, 'ws') + '/ws', hdr(9000), 'hello over a websocket');
check(r === 'hello over a websocket', `websocket echo round trip (${String(r).slice(0, 60)})`);
r = await echo(SBXURL.replace(/^http/, 'ws') + '/ws', hdr(9000), big);
check(r === big, `a 200 KiB websocket message and back (${String(r).length} bytes)`);
r = await events(`${SBXURL}/sse`, hdr(9000));
check(r.times.length === 3 && r.times[2] - r.times[0] > 1500,
	`server-sent events arrive as sent: ${r.times.map((t) => Math.round(t)).join(', ')} ms ${r.error || ''}`);
r = await get(`${SBXURL}/`, hdr(8001));
check(r.status === 502 && r.body.includes('nothing listens') && r.ms < 1000,
	`nothing on 8001: ${r.status} in ${Math.round(r.ms)} ms (${r.body})`);

const b = await Sandbox.create('minimal', opts(KEYB, { sandboxUrl: SBXURL, network: { allowPublicTraffic: false } }));
check(typeof b.trafficAccessToken === 'string' && b.trafficAccessToken.length === 64,
	'allowPublicTraffic false: create answers a trafficAccessToken');
r = await get(`${SBXURL}/index.html`, hdr(8000, { 'X-API-Key': KEYB }));
check(r.status === 404, `tenant B's key on A's port: ${r.status}`);
r = await get(`${SBXURL}/index.html`, hdr(8000, { 'X-Access-Token': b.envdAccessToken }));
check(r.status === 404, `B's access token on A's port: ${r.status}`);
r = await get(`${SBXURL}/index.html`, hdr(8000, { 'X-API-Key': KEYA }));
check(r.status === 200, `A's own key on A's port: ${r.status}`);
await b.commands.run('mkdir -p /tmp/w && echo b-ok > /tmp/w/index.html && httpd -p 8080 -h /tmp/w');
const bh = (more = {}) => ({ 'E2b-Sandbox-Id': b.sandboxId, 'E2b-Sandbox-Port': '8080', ...more });
r = await until(`${SBXURL}/index.html`, bh({ 'E2B-Traffic-Access-Token': b.trafficAccessToken }), 20);
check(r.status === 200 && r.body === 'b-ok\n', `restricted: with its traffic token ${r.status}`);
r = await get(`${SBXURL}/index.html`, bh());
check(r.status === 403, `restricted: no traffic token ${r.status} (${r.body})`);
r = await get(`${SBXURL}/index.html`, bh({ 'E2B-Traffic-Access-Token': a.envdAccessToken }));
check(r.status === 403, `restricted: a wrong traffic token ${r.status}`);
r = await get(`${SBXURL}/index.html`, bh({ 'X-API-Key': KEYA }));
check(r.status === 404, `restricted: tenant A's key on B's port ${r.status}`);

// ---- 2. by host name: no E2B_SANDBOX_URL ----
const h = await Sandbox.connect(a.sandboxId, opts(KEYA));
check(h.sandboxDomain === DOMAIN, `connect answers the domain (${h.sandboxDomain})`);
try {
	const out = await h.commands.run('echo envd-by-host-name');
	check(out.stdout.trim() === 'envd-by-host-name', 'envd at https://49983-<id>.<domain>: commands.run');
} catch (e) {
	check(false, `envd at https://49983-<id>.<domain>: ${e.message}`);
}
r = await get(`https://${h.getHost(8000)}/index.html`);
check(r.status === 200 && r.body === 'port-8000-ok\n', `https://${h.getHost(8000)}/index.html: ${r.status}`);
r = await echo(`wss://${h.getHost(9000)}/ws`, {}, 'hello by host name');
check(r === 'hello by host name', `wss://${h.getHost(9000)}/ws echo (${String(r).slice(0, 60)})`);
r = await get(`https://${h.getHost(8001)}/`);
check(r.status === 502 && r.ms < 1000, `by host name, nothing on 8001: ${r.status} in ${Math.round(r.ms)} ms`);
r = await get(`https://${h.getHost(8000)}/index.html`, { 'X-API-Key': KEYB });
check(r.status === 404, `by host name, tenant B's key: ${r.status}`);
r = await get(`https://${b.getHost(8080)}/index.html`);
check(r.status === 403, `by host name, B restricted without its token: ${r.status}`);

console.log(`ids ${a.sandboxId} ${b.sandboxId}`);
process.exit(failed ? 1 : 0);
