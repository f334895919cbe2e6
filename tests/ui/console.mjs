// The browser's half of tests/integration/test_console.sh: Debian's
// chromium, driven by puppeteer-core (nothing downloaded), against coved's
// console.  Prints TAP-like lines ("ok ..." / "not ok ...") and "bench:"
// lines; exits 1 when any check failed.
//
// Environment: COVE_URL (http://127.0.0.1:PORT), KEY_A and KEY_B (two
// tenants' keys), SB_A and SB_B (tenant A's sandboxes: SB_A ran the SDK's
// commands and files), KEY_SYNTH (the synthetic sandboxes' tenant; empty:
// that part is skipped), SHOTS (where the screenshots go), CHROMIUM.
// PARTS: "all" (default), or "synth" for the synthetic list alone.
import puppeteer from 'puppeteer-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const env = (k, d) => process.env[k] ?? d;
const URL0 = env('COVE_URL');
const SHOTS = env('SHOTS', 'build/console-shots');
const PARTS = env('PARTS', 'all');
const HOSTILE = ['<img src=x onerror=alert(1)>', '"><script>alert(2)</script>'];
const WAIT = +env('UI_WAIT_MS', 60000);
let failed = 0;
const T0 = Date.now();
const at = () => `[${((Date.now() - T0) / 1000).toFixed(0)} s] `;

function ok(cond, what, detail) {
  if (cond) console.log('ok - ' + at() + what);
  else { failed++; console.log('not ok - ' + at() + what + (detail ? ': ' + String(detail).slice(0, 400) : '')); }
  return cond;
}

async function step(what, fn) {
  try { return await fn(); } catch (e) { ok(false, what, e.message); return undefined; }
}

fs.mkdirSync(SHOTS, { recursive: true });
async function shot(page, name) {
  const f = path.resolve(SHOTS, 'console-' + name + '.png');
  await page.screenshot({ path: f, fullPage: false });
  console.log('screenshot: ' + f);
}

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'cove-chromium-'));
const downloads = path.join(profile, 'downloads');
fs.mkdirSync(downloads);
const browser = await puppeteer.launch({
  executablePath: env('CHROMIUM', '/usr/bin/chromium'),
  headless: true,
  userDataDir: profile,
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-extensions', ...env('CHROMIUM_ARGS', '').split(' ').filter(Boolean)],
  protocolTimeout: 180000,
  timeout: 180000, // chromium's start in the emulated host is slow
});

// Downloads land in the profile's folder, where the files step reads them.
await step('downloads allowed', async () => {
  const cdp = await browser.target().createCDPSession();
  await cdp.send('Browser.setDownloadBehavior', { behavior: 'allow', downloadPath: downloads });
});

// The browser's first tab (one tab for every part: a second one is half a
// minute in the emulated host), recording every dialog, page error and
// CSP report.
async function newPage() {
  const page = (await browser.pages())[0] || await browser.newPage();
  page.dialogs = [];
  page.errors = [];
  // The one dialog the console opens itself, Kill's confirmation, is
  // accepted when the test asked for it (page.confirmKill); any other is
  // recorded (and would fail the test).
  page.on('dialog', async (d) => {
    if (d.type() === 'confirm' && page.confirmKill && d.message() === `Kill sandbox ${page.confirmKill}?`) {
      page.confirmKill = null;
      await d.accept();
      return;
    }
    page.dialogs.push(d.type() + ': ' + d.message());
    await d.dismiss();
  });
  page.on('pageerror', (e) => page.errors.push(String(e.message || e)));
  page.on('console', (m) => { if (m.type() === 'error') page.errors.push(m.text()); });
  page.setDefaultTimeout(WAIT);
  await page.setViewport({ width: 1280, height: 800 });
  return page;
}

// signIn(page, key, load): with load false the sign-in form is already
// shown (after a sign-out): a page load is several seconds in the
// emulated host.
async function signIn(page, key, load = true) {
  const resp = load ? await page.goto(URL0 + '/ui/', { waitUntil: 'domcontentloaded' }) : null;
  await page.waitForSelector('#key', { visible: true });
  await page.type('#key', key);
  await page.evaluate(() => { document.body.dataset.signinAt = performance.now().toFixed(1); });
  await page.keyboard.press('Enter');
  await page.waitForSelector('#list:not([hidden])');
  await page.waitForFunction(() => document.body.dataset.listReadyMs);
  return resp;
}

const text = (page, sel) => page.$eval(sel, (e) => e.textContent);
const waitText = (page, sel, s) => page.waitForFunction((q, t) => {
  const e = document.querySelector(q); return e && e.textContent.includes(t);
}, {}, sel, s);

let shared = null;
if (PARTS === 'all') {
  const KEY_A = env('KEY_A'), KEY_B = env('KEY_B'), SB_A = env('SB_A'), SB_B = env('SB_B');
  const page = await newPage();
  const resp = await step('the console loads', () => signIn(page, KEY_A));
  if (resp) {
    const h = resp.headers();
    const csp = h['content-security-policy'] || '';
    ok(/default-src 'self'/.test(csp) && /frame-ancestors 'none'/.test(csp) && !/unsafe-inline/.test(csp) &&
      h['x-content-type-options'] === 'nosniff', '/ui/ has a strict CSP and nosniff', csp);
  }
  await step('both sandboxes listed', async () => {
    await page.waitForSelector(`tr[data-id="${SB_A}"]`);
    await page.waitForSelector(`tr[data-id="${SB_B}"]`);
    ok(true, 'tenant A sees both sandboxes in the list');
  });
  await step('list filters', async () => {
    // coved filters: metadata as E2B's SDK encodes it (markup, '=' and
    // spaces in the value), then a template no sandbox has.
    // (Values set at once: typing is a round trip a key in the emulated host.)
    const set = (sel, v) => page.$eval(sel, (e, x) => { e.value = x; e.dispatchEvent(new Event('change')); }, v);
    await set('#f-meta', 'note=<img src=x onerror=alert(3)>');
    await page.waitForFunction((b) => !document.querySelector(`tr[data-id="${b}"]`), {}, SB_B);
    ok(!!(await page.$(`tr[data-id="${SB_A}"]`)), 'the metadata filter note=<img …> lists A alone');
    await set('#f-meta', '');
    await set('#f-template', 'no-such-template');
    await waitText(page, '#list-count', 'none');
    await set('#f-template', 'base');
    await page.waitForSelector(`tr[data-id="${SB_B}"]`);
    ok(!!(await page.$(`tr[data-id="${SB_A}"]`)), 'the template filter: none for no-such-template, both for base');
    await set('#f-template', '');
  });
  await step('overview of the last hour', async () => {
    await page.waitForFunction(() => +document.getElementById('ov-creates').textContent >= 2 &&
      /p50 \d+ ms/.test(document.getElementById('ov-first').textContent), { timeout: 30000 });
    const o = await page.$eval('.overview', (e) => e.textContent.replace(/\s+/g, ' ').trim());
    const pts = await page.$eval('#ov-hour', (e) => +e.dataset.points);
    ok(pts === 60 && !!(await page.$('#ov-hour canvas')), `the overview's last hour: ${o}`, String(pts));
  });
  await step('metadata as text in the list', async () => {
    const m = await page.$eval(`tr[data-id="${SB_A}"] .meta`, (e) => e.textContent);
    ok(m.includes('<img src=x onerror=alert(3)>'), 'hostile metadata shown as written in the list', m);
  });
  const where = await page.evaluate(() => ({ url: location.href, cookie: document.cookie, stored: !!sessionStorage.getItem('cove.apiKey') }));
  const cookies = await page.cookies();
  ok(!where.url.includes(KEY_A) && where.cookie === '' && cookies.length === 0 && where.stored,
    'the key is in sessionStorage only (not in the URL, no cookie)', JSON.stringify(where));
  await page.setViewport({ width: 390, height: 844 });
  await shot(page, 'list-phone');
  await page.setViewport({ width: 1280, height: 800 });
  await shot(page, 'list');

  // One sandbox.
  await step('open sandbox A', async () => {
    await page.$eval(`tr[data-id="${SB_A}"] a`, (a) => a.click());
    await page.waitForSelector('#sandbox:not([hidden])');
  });
  await step('journal', async () => {
    await waitText(page, '#jrows', 'echo ui-test-one');
    await waitText(page, '#chain', 'Chain verified');
    ok(true, 'the journal shows the SDK\'s commands, chain verified');
    const j = await text(page, '#jrows');
    ok(j.includes("printf '<script>alert(4)</script>"), 'a command line with <script> shown as text', j.slice(0, 300));
  });
  await step('metadata in the view', async () => {
    const m = await text(page, '#sb-info dd[data-k="metadata"]');
    ok(m.includes('note=<img src=x onerror=alert(3)>'), 'hostile metadata shown as written in the view', m);
  });
  await shot(page, 'journal');
  await step('egress', async () => {
    await page.click('[data-tab="egress"]');
    await page.waitForFunction(() => [...document.querySelectorAll('#erows tr')].some((r) => r.textContent.includes('198.51.100.91') && r.textContent.includes('deny')));
    const row = await page.$$eval('#erows tr', (rs) => rs.map((r) => r.textContent).find((t) => t.includes('198.51.100.91')));
    ok(row.includes('198.51.100.91:9000'), 'the egress log shows the denied connection to 198.51.100.91:9000', row);
    await shot(page, 'egress');
  });
  await step('usage', async () => {
    await page.click('[data-tab="usage"]');
    await page.waitForFunction(() => /%/.test(document.getElementById('cpu-now').textContent));
    const c = await text(page, '#cpu-now'), m = await text(page, '#mem-now');
    ok(/^\d+(\.\d)? %$/.test(c), `live CPU: ${c}, memory ${m}`, c);
    // uPlot's charts, drawn from the samples (network: rates between two).
    await page.waitForFunction(() => ['cpu', 'mem', 'disk'].every((n) => +document.getElementById('ch-' + n).dataset.points >= 2) &&
      +document.getElementById('ch-net').dataset.points >= 1);
    const drawn = await page.$$eval('.charts .chart', (ds) => ds.map((d) => ({ id: d.id, points: +d.dataset.points, canvas: !!d.querySelector('canvas') })));
    ok(drawn.length === 4 && drawn.every((d) => d.canvas && d.points >= 1),
      'CPU, memory, disk and network charts drawn by uPlot with data (' + drawn.map((d) => d.id + ' ' + d.points).join(', ') + ')', JSON.stringify(drawn));
    await shot(page, 'usage');
  });
  await step('files', async () => {
    await page.click('[data-tab="files"]');
    await page.waitForSelector('#tree button[data-path="/root/console-note.txt"]');
    // A name with a '/' is a folder and a file: each part is a node.
    const nodes = await page.$$eval('#tree li > :first-child', (es) => es.map((e) => e.textContent));
    const parts = HOSTILE.flatMap((h) => h.split('/'));
    ok(parts.every((p) => nodes.some((n) => n.startsWith(p + ' ('))), 'hostile file names shown as written in the diff tree', nodes.join(' | '));
    await page.click('#tree button[data-path="/root/console-note.txt"]');
    await waitText(page, '#view', 'hello from the console test');
    ok(true, 'the file\'s content in the viewer');
    await page.click('#view-dl');
    const got = path.join(downloads, 'console-note.txt');
    for (let i = 0; i < 300 && !fs.existsSync(got); i++) await new Promise((r) => setTimeout(r, 100));
    const bytes = fs.existsSync(got) ? fs.readFileSync(got, 'utf8') : null;
    ok(bytes === 'hello from the console test\n', 'the file downloaded from the viewer, its bytes as written', JSON.stringify(bytes));
    await page.click(`#tree button[data-path="/root/${HOSTILE[1].replace(/"/g, '\\"')}"]`);
    await waitText(page, '#view', 'hostile name');
    ok((await text(page, '#view-path')) === '/root/' + HOSTILE[1], 'a hostile file opens, its name as text');
    await shot(page, 'files');
  });
  await step('terminal', async () => {
    await page.click('[data-tab="terminal"]');
    await page.click('#term-start');
    await waitText(page, '#term-msg', 'shell ');
    const pid = (await text(page, '#term-msg')).replace(/^shell /, '');
    // xterm.js draws the terminal: its rows, as text (each checked in the page).
    await page.focus('#xterm textarea');
    await page.keyboard.type('echo hi-from-ui\n');
    await page.waitForFunction(() => [...document.querySelectorAll('#xterm .xterm-rows > div')]
      .some((d) => d.textContent.replace(/\u00a0/g, ' ').trim() === 'hi-from-ui'));
    ok(true, 'typed `echo hi-from-ui` in the xterm.js terminal and read it back');
    await page.keyboard.type("printf '<b>x</b><script>alert(5)</script>\\n'\n");
    await page.waitForFunction(() => [...document.querySelectorAll('#xterm .xterm-rows > div')]
      .some((d) => d.textContent.replace(/\u00a0/g, ' ').trim() === '<b>x</b><script>alert(5)</script>'));
    ok(await page.$eval('#xterm', (e) => !e.querySelector('script, b, img')), '<script> in command output shown as text, no element made');
    await shot(page, 'terminal');
    // The shell in the process list (envd's process.Process/List).
    await page.click('[data-tab="procs"]');
    await page.waitForSelector(`#prows tr[data-pid="${pid}"]`);
    const row = await page.$eval(`#prows tr[data-pid="${pid}"]`, (r) => r.textContent);
    ok(row.includes('/bin/sh -i'), `the terminal's shell (pid ${pid}) in the process list`, row);
    await page.click('[data-tab="terminal"]');
    await page.click('#term-stop');
  });
  await step('pause', async () => {
    await page.click('#act-pause');
    await waitText(page, '#sb-info dd[data-k="state"]', 'paused');
    ok(true, 'paused from the console');
  });
  await step('kill', async () => {
    // Sandbox B goes: its CPU time is the emulated host's too.
    await page.goto(URL0 + '/ui/#/sb/' + SB_B);
    await waitText(page, '#sb-info dd[data-k="state"]', 'running');
    page.confirmKill = SB_B;
    await page.click('#act-kill');
    await page.waitForSelector('#list:not([hidden])');
    await page.waitForFunction((id) => !document.querySelector(`tr[data-id="${id}"]`) && document.querySelectorAll('#sbrows tr').length > 0, {}, SB_B);
    ok(page.confirmKill === null, 'killed sandbox B from the console (after its confirmation); the list lost it');
  });
  await step('templates and snapshots', async () => {
    await page.goto(URL0 + '/ui/#/templates');
    await waitText(page, '#trows', 'base');
    ok(true, 'the templates view lists base');
    await shot(page, 'templates');
    await page.goto(URL0 + '/ui/#/snapshots');
    await page.waitForSelector('#snapshots:not([hidden])');
    await shot(page, 'snapshots');
  });
  ok(page.dialogs.length === 0, 'no dialog fired', page.dialogs.join(' | '));
  ok(!page.errors.some((e) => /Content Security Policy|Refused/.test(e)), 'no CSP violation', page.errors.join(' | '));

  // Tenant B sees neither, and gets 404 for A's sandbox on every route.
  // Signed out and in again in the same tab (a second browser context is
  // half a minute in the emulated host).
  const pb = page;
  await step('tenant B', async () => {
    await pb.click('#signout');
    await pb.waitForSelector('#key', { visible: true });
    ok(await pb.$eval('#sbrows', (e) => e.children.length === 0), 'signing out leaves none of its rows in the page');
    await signIn(pb, KEY_B, false);
    await pb.waitForFunction(() => document.getElementById('list-count').textContent !== '');
    const rows = await pb.$$eval('#sbrows tr', (r) => r.map((x) => x.dataset.id));
    ok(!rows.includes(SB_A) && !rows.includes(SB_B), 'tenant B\'s list has neither sandbox', rows.join(','));
    const seen = [];
    pb.on('response', (r) => { if (r.url().includes(SB_A)) seen.push(r.status()); });
    await pb.goto(URL0 + '/ui/#/sb/' + SB_A);
    await waitText(pb, '#act-msg', 'No such sandbox');
    await pb.click('[data-tab="files"]');
    await new Promise((r) => setTimeout(r, 1500));
    const direct = await pb.evaluate(async (id) => {
      const k = sessionStorage.getItem('cove.apiKey');
      const out = [];
      for (const p of [`/sandboxes/${id}`, `/sandboxes/${id}/logs`, `/sandboxes/${id}/logs?verify=1`, `/sandboxes/${id}/diff`, `/sandboxes/${id}/metrics`]) {
        out.push((await fetch(p, { headers: { 'X-API-KEY': k } })).status);
      }
      out.push((await fetch(`/sandboxes/${id}/pause`, { method: 'POST', headers: { 'X-API-KEY': k, 'Content-Type': 'application/json' }, body: '{}' })).status);
      return out;
    }, SB_A);
    const cnt = await pb.evaluate(async () => (await fetch('/sandboxes/counts', { headers: { 'X-API-KEY': sessionStorage.getItem('cove.apiKey') } })).json());
    ok(cnt.running === 0 && cnt.paused === 0, 'tenant B\'s counts hold none of A\'s sandboxes', JSON.stringify(cnt));
    ok(seen.length > 0 && seen.every((s) => s === 404) && direct.every((s) => s === 404),
      `tenant B's console calls for A's sandbox all 404 (${seen.length} by the page, ${direct.length} direct)`, JSON.stringify({ seen, direct }));
  });
  ok(pb.dialogs.length === 0, 'no dialog fired for tenant B');
  shared = page;
}

if (env('KEY_SYNTH', '')) {
  const ps = shared || await newPage();
  await step('synthetic list', async () => {
    if (shared) {
      await ps.click('#signout');
      await ps.waitForSelector('#key', { visible: true });
    }
    await signIn(ps, env('KEY_SYNTH'), !shared);
    await ps.waitForFunction(() => document.querySelectorAll('#sbrows tr').length > 0);
    const n = await ps.$$eval('#sbrows tr', (r) => r.length);
    ok(n === 50, `the first page of the synthetic sandboxes: ${n} rows`);
    // Sign-in to the first page in the DOM; with LIST_LOADS, also from a
    // fresh navigation with the key kept (a page load is many seconds in
    // the emulated host, so the test leaves that to a by-hand run).
    const signin = await ps.evaluate(() => (+document.body.dataset.listReadyMs - +document.body.dataset.signinAt).toFixed(1));
    console.log(`bench: {"console_signin_to_list_ms": ${signin}, "sandboxes": ${env('SYNTH_N', '?')}}`);
    const times = [];
    for (let i = 0; i < +env('LIST_LOADS', 0); i++) {
      await ps.reload({ waitUntil: 'domcontentloaded' });
      await ps.waitForFunction(() => document.body.dataset.listReadyMs);
      times.push(+(await ps.evaluate(() => document.body.dataset.listReadyMs)));
    }
    if (times.length) console.log(`bench: {"console_first_list_ms": [${times.join(', ')}], "sandboxes": ${env('SYNTH_N', '?')}}`);
    await ps.click('#next');
    await ps.waitForFunction(() => /^51–100/.test(document.getElementById('list-count').textContent));
    ok(true, 'the next page of the synthetic sandboxes');
    await ps.waitForFunction((n) => document.getElementById('ov-paused').textContent === n, {}, env('SYNTH_N', '?'));
    ok(true, 'the overview counts the synthetic sandboxes');
    await shot(ps, 'list-2000');
  });
  await step('benchmarks view', async () => {
    const f = path.join(profile, 'bench.json');
    const ph = (ms) => ({ vmm_start: ms, first_exec: ms * 10 });
    fs.writeFileSync(f, JSON.stringify({ benchmark: 'restore', cpus: 1, memory_mib: 128,
      samples: [1, 2, 3, 4].map((i) => ({ system: 'cove', phases: ph(i), work: {} })) }));
    await ps.goto(URL0 + '/ui/#/bench');
    const input = await ps.waitForSelector('#bench-file');
    await input.uploadFile(f);
    await ps.waitForFunction(() => document.querySelectorAll('#brows tr').length === 2);
    const r = await ps.$$eval('#brows tr', (rows) => rows.map((x) => [...x.children].map((c) => c.textContent).join(' ')));
    ok(r.includes('vmm_start cove 4 1.0 2.0 4.0 4.0 4.0') && r.includes('first_exec cove 4 10.0 20.0 40.0 40.0 40.0'),
      'the benchmarks view tabulates a cove bench --json file', r.join(' | '));
    await shot(ps, 'bench');
  });
}

await browser.close();
fs.rmSync(profile, { recursive: true, force: true });
console.log(failed ? `FAILED ${failed}` : 'PASSED');
process.exit(failed ? 1 : 0);
