// The browser's half of scripts/bench-console: CONSOLES tabs of Debian's
// chromium (puppeteer-core) on coved's console at COVE_URL, signed in with
// KEY; coved's CPU (its /proc/COVED_PID/stat) and requests (/metrics) over
// SECS seconds in each phase: idle, list, sandbox.  One JSON line each.
import puppeteer from 'puppeteer-core';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const env = (k, d) => process.env[k] ?? d;
const URL0 = env('COVE_URL'), KEY = env('KEY'), PID = env('COVED_PID');
const N = +env('CONSOLES', 5), SECS = +env('SECS', 60);
const TCK = 100; // USER_HZ: /proc's clock ticks on Linux

function cpuTicks() {
  const st = fs.readFileSync(`/proc/${PID}/stat`, 'utf8');
  const f = st.slice(st.lastIndexOf(')') + 2).split(' ');
  return +f[11] + +f[12]; // utime, stime (fields 14, 15)
}

async function requests() {
  const t = await (await fetch(URL0 + '/metrics', { headers: { 'X-API-KEY': KEY } })).text();
  const m = /^coved_requests_total (\d+)/m.exec(t);
  return m ? +m[1] : NaN;
}

async function phase(name) {
  const c0 = cpuTicks(), r0 = await requests(), t0 = Date.now();
  await new Promise((r) => setTimeout(r, SECS * 1000));
  const c1 = cpuTicks(), r1 = await requests(), s = (Date.now() - t0) / 1000;
  const cpu_ms = (c1 - c0) * 1000 / TCK;
  console.log(JSON.stringify({ bench: 'console', phase: name, consoles: name === 'idle' ? 0 : N,
    sandboxes: +env('SANDBOXES', 0), seconds: +s.toFixed(1), coved_cpu_ms: cpu_ms,
    coved_cpu_pct: +(cpu_ms / 10 / s).toFixed(2), requests: r1 - r0 - 1,
    requests_per_s: +((r1 - r0 - 1) / s).toFixed(1) }));
}

const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'cove-bench-chromium-'));
const browser = await puppeteer.launch({
  executablePath: env('CHROMIUM', '/usr/bin/chromium'), headless: true, userDataDir: profile,
  // Background tabs keep their timers: each is a console someone watches.
  args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--no-first-run', '--disable-extensions',
    '--disable-background-timer-throttling', '--disable-renderer-backgrounding', '--disable-backgrounding-occluded-windows'],
  protocolTimeout: 180000, timeout: 180000,
});
try {
  await phase('idle');
  const ids = (await (await fetch(URL0 + '/v2/sandboxes?limit=' + N, { headers: { 'X-API-KEY': KEY } })).json()).map((s) => s.sandboxID);
  const pages = [];
  for (let i = 0; i < N; i++) {
    const p = i === 0 ? (await browser.pages())[0] || await browser.newPage() : await browser.newPage();
    await p.bringToFront();
    await p.setViewport({ width: 1280, height: 800 });
    await p.goto(URL0 + '/ui/', { waitUntil: 'domcontentloaded' });
    await p.waitForSelector('#key', { visible: true });
    await p.type('#key', KEY);
    await p.keyboard.press('Enter');
    await p.waitForFunction(() => document.querySelectorAll('#sbrows tr').length > 0);
    pages.push(p);
  }
  await phase('list');
  for (let i = 0; i < N; i++) {
    await pages[i].bringToFront();
    await pages[i].evaluate((id) => { location.hash = '#/sb/' + id; }, ids[i % ids.length]);
    await pages[i].waitForSelector('#sandbox:not([hidden])');
    await pages[i].click('[data-tab="usage"]');
  }
  await phase('sandbox');
} finally {
  await browser.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
