// Cove's web console (docs/console.md).  Everything shown comes from
// coved's API with the tab's key (sessionStorage, sent as X-API-KEY), and
// every piece of sandbox data (file names, commands, output, host names,
// metadata) goes into the page as text (textContent), never as markup.
'use strict';

const KEY = 'cove.apiKey';
const PAGE = 50;
const LIST_POLL_MS = 3000;
const SB_POLL_MS = 2000;
const VIEW_MAX = 256 * 1024;
const TERM_MAX = 64 * 1024;

const $ = (id) => document.getElementById(id);

// The third-party pieces, uPlot (charts) and xterm.js (the terminal), are
// in coved only when it was built with them (Makefile UI_VENDOR, from npm);
// without them the charts are plain lines and the terminal plain text.
// They load when first needed (uPlot after the first list, xterm.js with
// the first shell), so a page load parses only the console's own files.
const vendor = { uplot: false, xterm: false }; // served by this coved
const loading = {};
const hasCharts = () => typeof window.uPlot === 'function';
const hasXterm = () => typeof window.Terminal === 'function';

// loadVendor(name): a promise of whether /ui/NAME.js ran.
function loadVendor(name) {
  if (!loading[name]) {
    loading[name] = new Promise((res) => {
      if (!vendor[name]) { res(false); return; }
      const sc = document.createElement('script');
      sc.src = name + '.js';
      sc.onload = () => res(true);
      sc.onerror = () => res(false);
      document.head.append(sc);
    });
  }
  return loading[name];
}

// Which pieces this coved has (HEAD, no key needed), and the note when
// one is missing.
async function vendorCheck() {
  const has = async (f) => { try { return (await fetch(f, { method: 'HEAD', cache: 'no-store' })).ok; } catch (e) { return false; } };
  [vendor.uplot, vendor.xterm] = await Promise.all([has('uplot.js'), has('xterm.js')]);
  const miss = [!vendor.uplot && 'charts (uPlot)', !vendor.xterm && 'terminal (xterm.js)'].filter(Boolean);
  $('cpu-chart').style.display = vendor.uplot ? 'none' : '';
  for (const f of document.querySelectorAll('.charts')) f.hidden = !vendor.uplot;
  if (!miss.length) return;
  $('vendor-note').textContent = `This coved was built without the console's ${miss.join(' and ')}, so they are plain here. ` +
    'To get them: scripts/install-deps (it runs npm ci in daemon/ui), then build coved again (make).';
  $('vendor-note').hidden = false;
}

// xterm.js writes its cell sizes and colours into <style> elements, which
// this page's CSP (style-src 'self', no 'unsafe-inline') refuses, even
// empty.  A <style> asked for in this page (the console makes none itself)
// is an inert <template> instead, and what is written into it goes into a
// constructed stylesheet: adoptedStyleSheets are not inline markup, so the
// CSP allows them.
let adopted = false;
function adoptStyleElements() {
  if (adopted) return;
  adopted = true;
  const make = document.createElement;
  document.createElement = function (tag, opts) {
    if (String(tag).toLowerCase() !== 'style') return make.call(this, tag, opts);
    const e = make.call(this, 'template');
    const sheet = new CSSStyleSheet();
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
    const text = { configurable: true, get() { return ''; }, set(v) { sheet.replaceSync(String(v)); } };
    Object.defineProperty(e, 'textContent', text);
    Object.defineProperty(e, 'innerText', text);
    return e;
  };
}

// el(tag, props, ...children): children are nodes or strings (as text).
function el(tag, props, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (k === 'class') e.className = v;
    else if (k.startsWith('on')) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k instanceof Node ? k : document.createTextNode(String(k)));
  return e;
}

function key() { return sessionStorage.getItem(KEY); }

class ApiError extends Error {
  constructor(status, msg) { super(msg); this.status = status; }
}

// api(method, path, body?): JSON (or null for 204) with the key; a 401
// signs out.
async function api(method, path, body, extra) {
  const headers = { 'X-API-KEY': key() || '' };
  if (body !== undefined) headers['Content-Type'] = 'application/json';
  const r = await fetch(path, {
    method, headers, cache: 'no-store', credentials: 'omit',
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (r.status === 401 && !(extra && extra.noSignout)) { signOut('the key was refused (401)'); }
  if (!r.ok) {
    let msg = r.status + ' ' + r.statusText;
    try { const j = await r.json(); if (j && j.message) msg = r.status + ': ' + j.message; } catch (e) { /* not JSON */ }
    throw new ApiError(r.status, msg);
  }
  if (extra && extra.raw) return r;
  return r.status === 204 ? null : r.json();
}

// One formatter for every time shown: toLocaleString() builds a new one
// per call, which a page of 50 rows polled every 3 s can feel.
const DTF = new Intl.DateTimeFormat(undefined, { dateStyle: 'short', timeStyle: 'medium' });
function fmtTime(s) {
  if (!s) return '';
  const d = new Date(s);
  return isNaN(d) ? String(s) : DTF.format(d);
}

function fmtBytes(n) {
  if (typeof n !== 'number') return '';
  const u = ['B', 'KiB', 'MiB', 'GiB'];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + ' ' + u[i];
}

// ---- views and routing (the hash: #/ or #/sb/ID) ----
let timers = [];
function stopTimers() { timers.forEach(clearInterval); timers = []; viewGen++; }
function every(ms, fn) { fn(); timers.push(setInterval(fn, ms)); }

function show(id) {
  for (const s of ['signin', 'list', 'sandbox', 'templates', 'snapshots', 'bench']) $(s).hidden = s !== id;
}

function route() {
  stopTimers();
  termClose();
  if (!key()) { show('signin'); $('key').focus(); $('signout').hidden = true; return; }
  $('signout').hidden = false;
  const m = /^#\/sb\/([a-z0-9-]{1,64})$/.exec(location.hash);
  if (m) openSandbox(m[1]);
  else if (location.hash === '#/templates') openTemplates();
  else if (location.hash === '#/snapshots') openSnapshots();
  else if (location.hash === '#/bench') show('bench');
  else openList();
}

function signOut(why) {
  sessionStorage.removeItem(KEY);
  // Nothing the last key saw stays in the page for the next one.
  stopTimers();
  termClose();
  for (const id of ['sbrows', 'jrows', 'erows', 'tree', 'trows', 'snrows', 'brows', 'sb-info']) $(id).replaceChildren();
  for (const id of ['view', 'view-path', 'term', 'tlog', 'chain', 'act-msg', 'list-count', 'ov-running', 'ov-paused', 'ov-creates', 'ov-denied', 'ov-first']) $(id).textContent = '';
  if (hourChart) { hourChart.destroy(); hourChart = null; }
  $('nrows').replaceChildren();
  $('ov-nodes').hidden = true;
  clusterless = false;
  $('prows').replaceChildren();
  termDispose();
  chartsDispose();
  Object.assign(sb, { id: null, info: null, samples: [] });
  Object.assign(list, { tokens: [''], page: 0, sig: '' });
  ring.length = 0;
  delete document.body.dataset.listReadyMs;
  $('signin-err').textContent = why || '';
  location.hash = '#/';
  route();
}

// ---- sign in ----
async function signIn(ev) {
  ev.preventDefault();
  const k = $('key').value.trim();
  $('key').value = '';
  if (!k) return;
  sessionStorage.setItem(KEY, k);
  try {
    await api('GET', '/v2/sandboxes?limit=1', undefined, { noSignout: true });
    $('signin-err').textContent = '';
    location.hash = '#/';
    route();
  } catch (e) {
    sessionStorage.removeItem(KEY);
    $('signin-err').textContent = e.status === 401 ? 'coved refused this key.' : 'Could not reach coved: ' + e.message;
  }
}

// ---- the list: one page at a time (X-Next-Token), polled ----
const list = { tokens: [''], page: 0, sig: '' };

async function loadList() {
  const state = $('filter').value;
  const tok = list.tokens[list.page];
  const q = '/v2/sandboxes?limit=' + PAGE + '&state=' + encodeURIComponent(state) + listFilters() +
    (tok ? '&nextToken=' + encodeURIComponent(tok) : '');
  try {
    const r = await api('GET', q, undefined, { raw: true });
    const rows = await r.json();
    const next = r.headers.get('X-Next-Token');
    list.tokens.length = list.page + 1;
    if (next) list.tokens.push(next);
    renderList(rows, !!next);
    $('list-err').textContent = '';
  } catch (e) {
    $('list-err').textContent = 'Listing failed: ' + e.message;
  }
}

// The template and metadata filters, applied by coved: template=NAME and,
// as E2B's SDK sends it, metadata=<each key and value encodeURIComponent'd,
// the pairs form-encoded, the whole encoded again>.
// "k=v" pairs are split at ';' (or ',').
function listFilters() {
  const t = $('f-template').value.trim(), m = $('f-meta').value.trim();
  let q = t ? '&template=' + encodeURIComponent(t) : '';
  if (m) {
    const pairs = new URLSearchParams();
    for (const p of m.split(/[;,]/).map((x) => x.trim()).filter(Boolean)) {
      const i = p.indexOf('=');
      pairs.append(encodeURIComponent(i < 0 ? p : p.slice(0, i)), encodeURIComponent(i < 0 ? '' : p.slice(i + 1)));
    }
    q += '&metadata=' + encodeURIComponent(pairs.toString());
  }
  return q;
}

function renderList(rows, more) {
  // Unchanged rows stay as they are: a poll must not take the keyboard
  // focus (or a click) away from a link.
  const sig = JSON.stringify([list.page, more, rows]);
  if (sig === list.sig) return;
  list.sig = sig;
  const body = $('sbrows');
  const frag = document.createDocumentFragment();
  for (const s of rows) {
    const meta = Object.entries(s.metadata || {}).map(([k, v]) => k + '=' + v).join(', ');
    frag.append(el('tr', { 'data-id': s.sandboxID },
      el('td', {}, el('a', { href: '#/sb/' + encodeURIComponent(s.sandboxID) }, s.sandboxID)),
      el('td', {}, s.alias || s.templateID || ''),
      el('td', { class: 'st-' + (s.state || '') }, s.state || ''),
      el('td', {}, fmtTime(s.startedAt)),
      el('td', {}, fmtTime(s.endAt)),
      el('td', {}, (s.cpuCount ?? '') + ' / ' + (s.memoryMB ?? '')),
      el('td', { class: 'meta' }, meta)));
  }
  body.replaceChildren(frag);
  const first = list.page * PAGE;
  $('list-count').textContent = rows.length ? `${first + 1}–${first + rows.length}${more ? ' of more' : ''}` : 'none';
  $('prev').disabled = list.page === 0;
  $('next').disabled = !more;
  // The first page's time since navigation (tests/ui reads it).
  if (!document.body.dataset.listReadyMs) document.body.dataset.listReadyMs = performance.now().toFixed(1);
}

function openList() {
  show('list');
  list.sig = '';
  every(LIST_POLL_MS, loadList);
  // The overview reads whole pages: it starts after the first list is in,
  // so it does not slow that down.
  const gen = ++viewGen;
  waitListed().then(() => {
    if (gen !== viewGen) return;
    every(OVERVIEW_POLL_MS, overview);
    every(OVERVIEW_POLL_MS, overviewHour);
    every(OVERVIEW_POLL_MS, overviewNodes);
  });
}

let viewGen = 0;
function waitListed() {
  return new Promise((res) => {
    const t = setInterval(() => { if (list.sig) { clearInterval(t); res(); } }, 100);
    setTimeout(() => { clearInterval(t); res(); }, 5000);
  });
}

// The overview: the tenant's sandboxes by state (GET /sandboxes/counts),
// the running count kept in a ring of the last 10 minutes for the line.
const OVERVIEW_POLL_MS = 10000;
const ring = [];
async function overview() {
  let n;
  try { n = await api('GET', '/sandboxes/counts'); } catch (e) { return; }
  $('ov-running').textContent = n.running;
  $('ov-paused').textContent = n.paused;
  $('ov-note').textContent = n.dead ? `(${n.dead} dead, ${n.stopped} stopped)` : '';
  ring.push(n.running);
  if (ring.length > 60) ring.shift();
  const max = Math.max(1, ...ring);
  $('ov-line').setAttribute('points', ring.map((v, i) => `${(i * 300 / 59).toFixed(1)},${(58 - v * 56 / max).toFixed(1)}`).join(' '));
}

// In cluster mode, each node's committed against total vCPUs and memory,
// its lease and draining (GET /nodes; 404 when not a cluster: asked once).
let clusterless = false;
async function overviewNodes() {
  if (clusterless) return;
  let a;
  try { a = await api('GET', '/nodes'); } catch (e) { if (e.status === 404) clusterless = true; $('ov-nodes').hidden = true; return; }
  const pct = (c, t) => (t ? ` (${Math.round(c * 100 / t)} %)` : '');
  const f = document.createDocumentFragment();
  for (const n of a) {
    f.append(el('tr', { 'data-node': n.id, class: n.leaseOk ? '' : 'st-dead' }, el('td', {}, n.id), el('td', {}, n.draining ? 'draining' : n.state),
      el('td', {}, n.leaseOk ? 'held' : 'lost'), el('td', {}, `${n.vcpusCommitted} / ${n.vcpus}${pct(n.vcpusCommitted, n.vcpus)}`),
      el('td', {}, `${fmtBytes(n.memoryMiBCommitted * 1048576)} / ${fmtBytes(n.memoryMiB * 1048576)}${pct(n.memoryMiBCommitted, n.memoryMiB)}`)));
  }
  $('nrows').replaceChildren(f);
  $('ov-nodes').hidden = false;
}

// The last hour of the tenant's (GET /sandboxes/hour, kept by this coved):
// creates, create to first command (p50, p99), egress denials; per minute
// on a uPlot chart.
let hourChart = null;
async function overviewHour() {
  let h;
  try { h = await api('GET', '/sandboxes/hour'); } catch (e) { return; }
  const f = h.firstExecMs || {};
  $('ov-creates').textContent = h.creates;
  $('ov-denied').textContent = h.egressDenied;
  $('ov-first').textContent = f.n ? `p50 ${f.p50} ms, p99 ${f.p99} ms (${f.n})` : '(none yet)';
  const div = $('ov-hour');
  if (!hasCharts()) await loadVendor('uplot');
  if (!hasCharts() || $('list').hidden || !Array.isArray(h.minutes)) { div.hidden = !hasCharts(); return; }
  const cols = [h.minutes.map((m) => m.t), h.minutes.map((m) => m.creates), h.minutes.map((m) => m.egressDenied)];
  if (!hourChart || !div.contains(hourChart.root)) {
    if (hourChart) hourChart.destroy();
    const cs = getComputedStyle(document.documentElement);
    const c = (v, d) => cs.getPropertyValue(v).trim() || d;
    const axis = { stroke: c('--muted', '#666'), grid: { stroke: c('--line', '#ddd'), width: 1 }, ticks: { stroke: c('--line', '#ddd'), width: 1 } };
    hourChart = new uPlot({
      width: Math.max(200, Math.min(600, div.clientWidth)), height: 110,
      scales: { x: { time: true }, y: { range: (u, lo, hi) => [0, Math.max(1, hi)] } },
      axes: [axis, Object.assign({ size: 40 }, axis)],
      series: [{}, { label: 'created', stroke: c('--accent', '#1f5fbf'), width: 1.5 }, { label: 'denied', stroke: c('--bad', '#b3261e'), width: 1.5 }],
    }, cols, div);
  } else {
    hourChart.setData(cols);
  }
  div.dataset.points = cols[0].length;
}

// ---- templates and their build logs ----
function openTemplates() {
  show('templates');
  every(5000, loadTemplates);
}

async function loadTemplates() {
  let a;
  try { a = await api('GET', '/templates'); } catch (e) { $('tpl-err').textContent = e.message; return; }
  const f = document.createDocumentFragment();
  for (const t of a) {
    f.append(el('tr', {},
      el('td', {}, t.name || ''), el('td', {}, t.status || ''), el('td', {}, t.build_id || (t.builtin ? 'built in' : '')),
      el('td', { class: 'meta' }, t.from || t.from_template || ''),
      el('td', {}, t.builtin ? '' : el('button', { type: 'button', onclick: () => showBuildLog(t.name) }, 'Build log'))));
  }
  $('trows').replaceChildren(f);
}

async function showBuildLog(name) {
  $('tlog-h').textContent = 'Build log of ' + name;
  try {
    const t = await api('GET', '/templates/' + encodeURIComponent(name));
    $('tlog').textContent = (t.log || []).map((l) => `${String(l.ms).padStart(7)} ${l.level || ''} ${l.line}`).join('\n') || '(empty)';
  } catch (e) { $('tlog').textContent = e.message; }
}

// ---- snapshots ----
function openSnapshots() {
  show('snapshots');
  every(5000, async () => {
    let a;
    try { a = await api('GET', '/snapshots?limit=1000'); } catch (e) { $('snap-err').textContent = e.message; return; }
    const f = document.createDocumentFragment();
    for (const s of a) {
      f.append(el('tr', {}, el('td', {}, s.snapshotID || ''), el('td', {}, (s.names || []).join(', ')),
        el('td', {}, s.sandboxID ? el('a', { href: '#/sb/' + encodeURIComponent(s.sandboxID) }, s.sandboxID) : ''),
        el('td', {}, s.templateID || ''), el('td', {}, fmtTime(s.createdAt))));
    }
    $('snrows').replaceChildren(f);
  });
}

// ---- one sandbox ----
const sb = { id: null, info: null, jnext: 0, egress: 0, cpu: [], tab: 'journal', samples: [], viewPath: '' };

async function openSandbox(id) {
  show('sandbox');
  Object.assign(sb, { id, info: null, jnext: 0, egress: 0, cpu: [], verified: 0, samples: [], viewPath: '' });
  termDispose();
  chartsDispose();
  $('prows').replaceChildren();
  $('procs-msg').textContent = '';
  $('view-dl').disabled = true;
  $('sb-id').textContent = id;
  $('jrows').replaceChildren();
  $('erows').replaceChildren();
  $('tree').replaceChildren();
  $('view').textContent = '';
  $('view-path').textContent = '';
  $('chain').textContent = '';
  $('egress-none').textContent = 'No egress decisions yet.';
  $('cpu-line').setAttribute('points', '');
  selectTab(sb.tab);
  every(SB_POLL_MS, () => pollSandbox(id));
}

async function pollSandbox(id) {
  if (sb.id !== id) return;
  try {
    sb.info = await api('GET', '/sandboxes/' + encodeURIComponent(id));
  } catch (e) {
    $('act-msg').textContent = e.status === 404 ? 'No such sandbox (or not yours).' : e.message;
    $('sb-info').replaceChildren();
    return;
  }
  renderInfo(sb.info);
  await Promise.all([pollJournal(id), pollUsage(id), pollProcs(id)]);
}

function renderInfo(s) {
  const meta = Object.entries(s.metadata || {}).map(([k, v]) => k + '=' + v).join(', ');
  const pairs = [['state', s.state], ['template', s.alias || s.templateID], ['started', fmtTime(s.startedAt)],
    ['ends', fmtTime(s.endAt)], ['CPUs', s.cpuCount], ['memory', s.memoryMB + ' MiB'], ['metadata', meta || '—']];
  if (s.deadReason) pairs.push(['dead', s.deadReason]);
  const frag = document.createDocumentFragment();
  for (const [k, v] of pairs) frag.append(el('dt', {}, k), el('dd', { 'data-k': k }, v ?? ''));
  $('sb-info').replaceChildren(frag);
  $('act-pause').disabled = s.state !== 'running';
  $('act-resume').disabled = s.state !== 'paused';
  $('term-start').disabled = s.state !== 'running' || !!term.pid;
}

// The journal: new lines from jnext on, the chain checked each time.
function journalText(e) {
  switch (e.type) {
  case 'exec': return [e.cmd, ...(e.args || [])].join(' ') + (e.exit_code != null ? '  → exit ' + e.exit_code : '');
  case 'file': return `${e.op} ${e.path} (${e.bytes} bytes)`;
  case 'lifecycle': return (e.event || '') + (e.reason ? ': ' + e.reason : '');
  case 'egress': { const g = e.egress || {}; return `${g.verdict || ''} ${g.proto || ''} ${g.name || g.dst || ''}${g.port != null ? ':' + g.port : ''}`; }
  default: { const { seq, prev, ts, sandbox, type, ...rest } = e; return JSON.stringify(rest); }
  }
}

async function pollJournal(id) {
  let page;
  try {
    page = await api('GET', `/sandboxes/${encodeURIComponent(id)}/logs?offset=${sb.jnext}&limit=500`);
  } catch (e) { $('chain').textContent = 'Journal: ' + e.message; return; }
  if (sb.id !== id) return;
  const jf = document.createDocumentFragment(), ef = document.createDocumentFragment();
  for (const e of page.entries || []) {
    jf.append(el('tr', { class: 'j-' + e.type },
      el('td', {}, e.seq ?? ''), el('td', {}, fmtTime(e.ts)), el('td', {}, e.type || ''), el('td', { class: 'what' }, journalText(e))));
    if (e.type === 'egress' && e.egress && typeof e.egress === 'object') {
      const g = e.egress;
      ef.append(el('tr', { class: 'v-' + (g.verdict || '') },
        el('td', {}, fmtTime(g.time || e.ts)), el('td', {}, g.verdict || ''), el('td', {}, g.proto || ''),
        el('td', {}, (g.dst || '') + (g.port != null ? ':' + g.port : '')), el('td', {}, g.name || ''), el('td', {}, [g.rule, g.via, g.note].filter(Boolean).join(' · '))));
      sb.egress++;
    }
  }
  $('jrows').append(jf);
  $('erows').append(ef);
  if (sb.egress) $('egress-none').textContent = '';
  const grew = typeof page.next === 'number' && page.next !== sb.jnext;
  if (typeof page.next === 'number') sb.jnext = page.next;
  // The chain is checked again only when lines came (or every 30 s).
  if (!grew && sb.verified && Date.now() - sb.verified < 30000) return;
  sb.verified = Date.now();
  try {
    const v = await api('GET', `/sandboxes/${encodeURIComponent(id)}/logs?verify=1`);
    const c = $('chain');
    c.className = v.whole ? 'ok' : 'err';
    c.textContent = v.whole ? `Chain verified: ${v.lines} lines, whole.` : `Chain BROKEN at line ${v.brokenLine}: ${v.reason}`;
  } catch (e) { $('chain').textContent = 'Verify: ' + e.message; }
}

// Usage: the samples of GET /sandboxes/{id}/metrics (one every 2 s, the
// last 30 minutes): the last one's numbers, and CPU, memory, disk and
// network charts (uPlot), or a line of CPU use without uPlot.
async function pollUsage(id) {
  let a;
  try { a = await api('GET', `/sandboxes/${encodeURIComponent(id)}/metrics`); } catch (e) { return; }
  if (sb.id !== id || !Array.isArray(a) || !a.length) return;
  sb.samples = a;
  const last = a[a.length - 1];
  $('cpu-now').textContent = (+last.cpuUsedPct).toFixed(1) + ' %';
  $('mem-now').textContent = fmtBytes(last.memUsed) + ' / ' + fmtBytes(last.memTotal);
  $('cpu-count').textContent = last.cpuCount + ' CPU';
  $('disk-now').textContent = `disk ${fmtBytes(last.diskUsed)} of ${fmtBytes(last.diskTotal)} ·`;
  $('net-now').textContent = `network ${fmtBytes(last.netRxBytes ?? 0)} out, ${fmtBytes(last.netTxBytes ?? 0)} in`;
  const pts = a.slice(-60).map((s, i, arr) => `${(i * 300 / Math.max(1, arr.length - 1)).toFixed(1)},${(60 - Math.min(100, +s.cpuUsedPct || 0) * 0.6).toFixed(1)}`);
  $('cpu-line').setAttribute('points', pts.join(' '));
  drawCharts();
}

// The charts' columns from the samples: time (s), then each series.  The
// network's are rates from the counters' steps (null across a reset).
function usageColumns(a) {
  const t = a.map((s) => { const ms = Date.parse(s.timestamp); return isNaN(ms) ? +s.timestampUnix : ms / 1000; });
  const mib = (v) => (typeof v === 'number' ? v / 1048576 : null);
  const rate = (k) => a.map((s, i) => {
    if (i === 0) return null;
    const dt = t[i] - t[i - 1], d = (s[k] ?? 0) - (a[i - 1][k] ?? 0);
    return dt > 0 && d >= 0 ? d / dt / 1024 : null;
  });
  return {
    cpu: [t, a.map((s) => +s.cpuUsedPct || 0)],
    mem: [t, a.map((s) => mib(s.memUsed))],
    disk: [t, a.map((s) => mib(s.diskUsed))],
    net: [t, rate('netRxBytes'), rate('netTxBytes')],
  };
}

const CHARTS = { cpu: ['CPU %'], mem: ['used'], disk: ['used'], net: ['out', 'in'] };
const charts = {};

function makeChart(name, div) {
  const cs = getComputedStyle(document.documentElement);
  const c = (v, d) => cs.getPropertyValue(v).trim() || d;
  const axis = { stroke: c('--muted', '#666'), grid: { stroke: c('--line', '#ddd'), width: 1 }, ticks: { stroke: c('--line', '#ddd'), width: 1 } };
  const colors = [c('--accent', '#1f5fbf'), c('--ok', '#17703a')];
  return new uPlot({
    width: Math.max(200, div.clientWidth), height: 140,
    legend: { show: CHARTS[name].length > 1 },
    scales: { x: { time: true }, y: { range: name === 'cpu' ? [0, 100] : (u, lo, hi) => [0, Math.max(1, hi * 1.1)] } },
    axes: [axis, Object.assign({ size: 56 }, axis)],
    series: [{}, ...CHARTS[name].map((label, i) => ({ label, stroke: colors[i % 2], width: 1.5 }))],
  }, [[], ...CHARTS[name].map(() => [])], div);
}

// Draws the samples when the Usage tab shows (a hidden div has no width).
function drawCharts() {
  if ($('tab-usage').hidden || !sb.samples.length) return;
  if (!hasCharts()) {
    loadVendor('uplot').then((ok) => { if (ok && hasCharts()) drawCharts(); });
    return;
  }
  const cols = usageColumns(sb.samples);
  for (const name of Object.keys(CHARTS)) {
    const div = $('ch-' + name);
    if (!charts[name]) charts[name] = makeChart(name, div);
    charts[name].setData(cols[name]);
    // How many points it drew (tests/ui reads it).
    div.dataset.points = cols[name][1].filter((v) => v !== null).length;
  }
}

function chartsDispose() {
  for (const k of Object.keys(charts)) { charts[k].destroy(); delete charts[k]; }
  for (const name of Object.keys(CHARTS)) delete $('ch-' + name).dataset.points;
}

// Processes: envd's process.Process/List, what runs that was started
// through envd (commands, terminals), while the tab shows.  Not asked of
// a paused sandbox: a request to it would resume it.
async function pollProcs(id) {
  const s = sb.info;
  if ($('tab-procs').hidden || !s) return;
  if (s.state !== 'running') { $('procs-msg').textContent = 'Not running: no processes.'; return; }
  if (!s.envdAccessToken) { $('procs-msg').textContent = 'This key gets no access token for this sandbox.'; return; }
  let list;
  try {
    const r = await fetch('/process.Process/List', {
      method: 'POST', cache: 'no-store', credentials: 'omit',
      headers: envdHeaders({ 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' }), body: '{}',
    });
    if (!r.ok) throw new Error(r.status + ' ' + (await r.text()).slice(0, 200));
    list = (await r.json()).processes || [];
  } catch (e) { $('procs-msg').textContent = 'Listing failed: ' + e.message; return; }
  if (sb.id !== id) return;
  list.sort((x, y) => x.pid - y.pid);
  const f = document.createDocumentFragment();
  for (const p of list) {
    const cfg = p.config || {};
    f.append(el('tr', { 'data-pid': String(p.pid) }, el('td', {}, p.pid ?? ''),
      el('td', { class: 'what' }, [cfg.cmd, ...(cfg.args || [])].join(' ')), el('td', {}, p.tag || ''), el('td', {}, cfg.cwd || '')));
  }
  $('prows').replaceChildren(f);
  $('procs-msg').textContent = `${list.length} running, started through envd (commands and terminals)`;
}

// The file system diff as a tree; a file's content from envd's /files.
async function loadDiff() {
  const id = sb.id;
  $('diff-msg').textContent = 'Reading the diff…';
  let d;
  try { d = await api('GET', `/sandboxes/${encodeURIComponent(id)}/diff`); } catch (e) { $('diff-msg').textContent = e.message; return; }
  if (sb.id !== id) return;
  const root = { kids: new Map() };
  for (const c of d.changes || []) {
    let n = root;
    const parts = String(c.path).split('/').filter(Boolean);
    parts.forEach((p, i) => {
      if (!n.kids.has(p)) n.kids.set(p, { kids: new Map() });
      n = n.kids.get(p);
      if (i === parts.length - 1) n.change = c;
    });
  }
  const render = (n) => {
    const ul = el('ul', {});
    for (const [name, k] of [...n.kids.entries()].sort()) {
      const c = k.change;
      const label = c ? `${name} (${c.kind}${c.type === 'file' && c.size != null ? ', ' + fmtBytes(c.size) : ''})` : name;
      const li = el('li', { class: c ? 'k-' + c.kind : '' });
      if (c && c.type === 'file' && c.kind !== 'deleted') li.append(el('button', { type: 'button', class: 'link', 'data-path': c.path, onclick: () => viewFile(c.path) }, label));
      else li.append(el('span', {}, label));
      if (k.kids.size) li.append(render(k));
      ul.append(li);
    }
    return ul;
  };
  $('tree').replaceChildren(render(root));
  $('diff-msg').textContent = `${(d.changes || []).length} changes`;
}

async function viewFile(path) {
  const s = sb.info;
  $('view-path').textContent = path;
  sb.viewPath = path;
  $('view-dl').disabled = false;
  $('view').textContent = 'Reading…';
  if (!s || !s.envdAccessToken) { $('view').textContent = 'This key gets no access token for this sandbox.'; return; }
  try {
    const r = await fetch('/files?path=' + encodeURIComponent(path), {
      headers: { 'E2b-Sandbox-Id': s.sandboxID, 'X-Access-Token': s.envdAccessToken }, cache: 'no-store', credentials: 'omit',
    });
    if (!r.ok) throw new Error(r.status + ' ' + (await r.text()).slice(0, 200));
    const buf = new Uint8Array(await r.arrayBuffer());
    const cut = buf.subarray(0, VIEW_MAX);
    const binary = cut.subarray(0, 8192).includes(0);
    $('view').textContent = binary ? `(binary, ${buf.length} bytes)` :
      new TextDecoder('utf-8', { fatal: false }).decode(cut) + (buf.length > VIEW_MAX ? `\n… (${buf.length - VIEW_MAX} more bytes)` : '');
  } catch (e) { $('view').textContent = 'Cannot read it: ' + e.message; }
}

// A file's bytes as a download: read with the access token (which no link
// could carry), handed to the browser as a blob under its base name.
async function downloadFile() {
  const s = sb.info, path = sb.viewPath;
  if (!path) return;
  if (!s || !s.envdAccessToken) { $('diff-msg').textContent = 'This key gets no access token for this sandbox.'; return; }
  $('diff-msg').textContent = 'Downloading ' + path + '…';
  try {
    const r = await fetch('/files?path=' + encodeURIComponent(path), {
      headers: { 'E2b-Sandbox-Id': s.sandboxID, 'X-Access-Token': s.envdAccessToken }, cache: 'no-store', credentials: 'omit',
    });
    if (!r.ok) throw new Error(r.status + ' ' + (await r.text()).slice(0, 200));
    const blob = await r.blob();
    const url = URL.createObjectURL(blob);
    const a = el('a', { href: url, download: path.split('/').pop() || 'file', hidden: '' });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 60000);
    $('diff-msg').textContent = `Downloaded ${path} (${blob.size} bytes)`;
  } catch (e) { $('diff-msg').textContent = 'Download failed: ' + e.message; }
}

// ---- actions ----
async function act(what) {
  const id = sb.id, p = '/sandboxes/' + encodeURIComponent(id);
  $('act-msg').textContent = what + '…';
  try {
    if (what === 'pause') await api('POST', p + '/pause', {});
    else if (what === 'resume') await api('POST', '/v2/sandboxes/' + encodeURIComponent(id) + '/connect', { timeout: +$('extend-s').value || 300 });
    else if (what === 'extend') await api('POST', p + '/timeout', { timeout: +$('extend-s').value });
    else if (what === 'kill') {
      if (!confirm('Kill sandbox ' + id + '?')) { $('act-msg').textContent = ''; return; }
      await api('DELETE', p);
      $('act-msg').textContent = 'killed';
      location.hash = '#/';
      return;
    }
    $('act-msg').textContent = what + ': done';
    pollSandbox(id);
  } catch (e) { $('act-msg').textContent = what + ' failed: ' + e.message; }
}

// ---- tabs ----
function selectTab(name) {
  sb.tab = name;
  for (const b of document.querySelectorAll('[role=tab]')) {
    const on = b.dataset.tab === name;
    b.setAttribute('aria-selected', String(on));
    b.tabIndex = on ? 0 : -1;
    $('tab-' + b.dataset.tab).hidden = !on;
  }
  if (name === 'files' && sb.id && !$('tree').childNodes.length) loadDiff();
  if (name === 'usage') drawCharts();
  if (name === 'procs' && sb.id) pollProcs(sb.id);
}

// ---- terminal: a pty process over envd's Connect stream ----
// Shown by xterm.js (term.x) when coved has it, else as plain text.
const term = { pid: 0, abort: null, text: '', x: null };
const enc = new TextEncoder();

function envelope(obj) {
  const j = enc.encode(JSON.stringify(obj));
  const b = new Uint8Array(5 + j.length);
  new DataView(b.buffer).setUint32(1, j.length);
  b.set(j, 5);
  return b;
}

function b64(bytes) { let s = ''; for (const x of bytes) s += String.fromCharCode(x); return btoa(s); }
function unb64(s) { const t = atob(s); const b = new Uint8Array(t.length); for (let i = 0; i < t.length; i++) b[i] = t.charCodeAt(i); return b; }

// Output as plain text: escape sequences dropped, \r\n kept as newlines,
// a backspace takes back one character.
const termDec = new TextDecoder();
function termWrite(bytes) {
  if (term.x) { term.x.write(bytes); return; }
  const s = termDec.decode(bytes, { stream: true })
    .replace(/\x1b\][^\x07\x1b]*(\x07|\x1b\\)/g, '')
    .replace(/\x1b\[[0-9;?]*[ -/]*[@-~]/g, '')
    .replace(/\x1b[()][0-9A-Za-z]|\x1b[=>78]/g, '')
    .replace(/\r\n/g, '\n').replace(/\r/g, '');
  let t = term.text;
  for (const ch of s) {
    if (ch === '\b') t = t.slice(0, -1);
    else if (ch === '\x07') continue;
    else t += ch;
  }
  term.text = t.length > TERM_MAX ? t.slice(-TERM_MAX) : t;
  const p = $('term');
  p.textContent = term.text;
  p.scrollTop = p.scrollHeight;
}

function envdHeaders(extra) {
  const s = sb.info;
  return Object.assign({ 'E2b-Sandbox-Id': s.sandboxID, 'X-Access-Token': s.envdAccessToken }, extra);
}

async function termStart() {
  const s = sb.info;
  if (!s || !s.envdAccessToken) { $('term-msg').textContent = 'This key may not run commands in this sandbox.'; return; }
  term.text = '';
  $('term').textContent = '';
  const x = await termView();
  term.abort = new AbortController();
  $('term-start').disabled = true;
  $('term-stop').disabled = false;
  $('term-msg').textContent = 'starting…';
  let r;
  try {
    r = await fetch('/process.Process/Start', {
      method: 'POST', signal: term.abort.signal, cache: 'no-store', credentials: 'omit',
      headers: envdHeaders({ 'Content-Type': 'application/connect+json', 'Connect-Protocol-Version': '1' }),
      body: envelope({
        process: { cmd: '/bin/sh', args: ['-i'], envs: { TERM: x ? 'xterm' : 'dumb', PS1: '$ ' } },
        pty: { size: { cols: x ? x.cols : 100, rows: x ? x.rows : 30 } }, stdin: true,
      }),
    });
    if (!r.ok) throw new Error(r.status + ' ' + (await r.text()).slice(0, 200));
  } catch (e) { $('term-msg').textContent = 'Cannot start a shell: ' + e.message; termClose(); return; }
  const rd = r.body.getReader();
  let buf = new Uint8Array(0);
  try {
    for (;;) {
      const { value, done } = await rd.read();
      if (done) break;
      const nb = new Uint8Array(buf.length + value.length);
      nb.set(buf); nb.set(value, buf.length); buf = nb;
      while (buf.length >= 5) {
        const len = new DataView(buf.buffer, buf.byteOffset).getUint32(1);
        if (len > 4 << 20) throw new Error('a frame over 4 MiB');
        if (buf.length < 5 + len) break;
        const flag = buf[0], msg = JSON.parse(termDec.decode(buf.subarray(5, 5 + len)));
        buf = buf.slice(5 + len);
        if (flag & 2) { $('term-msg').textContent = msg.error ? 'ended: ' + msg.error.message : 'ended'; continue; }
        const ev = msg.event || {};
        if (ev.start) { term.pid = ev.start.pid; $('term-msg').textContent = 'shell ' + term.pid; if (term.x) term.x.focus(); else $('term').focus(); }
        if (ev.data) { const d = ev.data.pty || ev.data.stdout || ev.data.stderr; if (d) termWrite(unb64(d)); }
        if (ev.end) $('term-msg').textContent = 'shell exited (' + (ev.end.status || ev.end.exitCode) + ')';
      }
    }
  } catch (e) { if (e.name !== 'AbortError') $('term-msg').textContent = 'stream: ' + e.message; }
  term.pid = 0;
  $('term-start').disabled = false;
  $('term-stop').disabled = true;
}

async function termSend(bytes) {
  if (!term.pid || !bytes.length) return;
  try {
    const r = await fetch('/process.Process/SendInput', {
      method: 'POST', cache: 'no-store', credentials: 'omit',
      headers: envdHeaders({ 'Content-Type': 'application/json', 'Connect-Protocol-Version': '1' }),
      body: JSON.stringify({ process: { pid: term.pid }, input: { pty: b64(bytes) } }),
    });
    if (!r.ok) $('term-msg').textContent = 'input: ' + r.status;
  } catch (e) { $('term-msg').textContent = 'input: ' + e.message; }
}

// Input goes out in order, one SendInput at a time; keys typed while one
// is on its way go together in the next.
let termPending = [], termSending = false;
async function termInput(bytes) {
  termPending.push(...bytes);
  if (termSending) return;
  termSending = true;
  while (termPending.length) {
    const chunk = Uint8Array.from(termPending.splice(0, 4096));
    await termSend(chunk);
  }
  termSending = false;
}

// Keys to bytes; Tab and Escape are left to the page (keyboard users
// must be able to leave the terminal).
function termKey(ev) {
  if (!term.pid || ev.metaKey || ev.altKey) return;
  const seq = { Enter: '\r', Backspace: '\x7f', ArrowUp: '\x1b[A', ArrowDown: '\x1b[B', ArrowRight: '\x1b[C', ArrowLeft: '\x1b[D', Home: '\x1b[H', End: '\x1b[F', Delete: '\x1b[3~' };
  let s = null;
  if (ev.ctrlKey && ev.key.length === 1 && /[a-z]/i.test(ev.key)) s = String.fromCharCode(ev.key.toUpperCase().charCodeAt(0) - 64);
  else if (seq[ev.key]) s = seq[ev.key];
  else if (ev.key.length === 1 && !ev.ctrlKey) s = ev.key;
  if (s === null) return;
  ev.preventDefault();
  termInput(enc.encode(s));
}

// The xterm.js terminal, made on the first shell of a sandbox view (and
// reset for the next); keys go to the shell as xterm encodes them, but Tab
// and Escape stay with the page (keyboard users must be able to leave).
async function termView() {
  if (!hasXterm() && await loadVendor('xterm')) adoptStyleElements();
  if (!hasXterm()) return null;
  $('term').hidden = true;
  $('xterm').hidden = false;
  if (term.x) { term.x.reset(); return term.x; }
  const cs = getComputedStyle(document.documentElement);
  const c = (v, d) => cs.getPropertyValue(v).trim() || d;
  const x = new Terminal({
    cols: 100, rows: 30, scrollback: 2000, fontSize: 13, fontFamily: 'ui-monospace, monospace',
    theme: { background: c('--code', '#f2f2f0'), foreground: c('--fg', '#1d1f21'), cursor: c('--accent', '#1f5fbf'), selectionBackground: c('--line', '#ddd') },
  });
  x.attachCustomKeyEventHandler((ev) => ev.key !== 'Tab' && ev.key !== 'Escape');
  x.onData((d) => termInput(enc.encode(d)));
  x.open($('xterm'));
  term.x = x;
  return x;
}

function termDispose() {
  termClose();
  if (term.x) { term.x.dispose(); term.x = null; }
  $('xterm').replaceChildren();
  $('xterm').hidden = true;
  $('term').hidden = false;
  if (document.adoptedStyleSheets) document.adoptedStyleSheets = [];
}

function termClose() {
  if (term.abort) term.abort.abort();
  if (term.pid && sb.info) {
    fetch('/process.Process/SendSignal', {
      method: 'POST', credentials: 'omit', headers: envdHeaders({ 'Content-Type': 'application/json' }),
      body: JSON.stringify({ process: { pid: term.pid }, signal: 'SIGNAL_SIGKILL' }),
    }).catch(() => {});
  }
  term.pid = 0;
  term.abort = null;
  termPending = [];
}

// ---- benchmarks: a `cove bench --json` file, read locally ----
function pct(sorted, p) {
  const i = Math.ceil(p / 100 * sorted.length) - 1;
  return sorted[Math.min(sorted.length - 1, Math.max(0, i))];
}

async function openBench(ev) {
  const f = ev.target.files[0];
  if (!f) return;
  let doc;
  try { doc = JSON.parse(await f.text()); } catch (e) { $('bench-what').textContent = 'Not JSON: ' + e.message; return; }
  const samples = Array.isArray(doc.samples) ? doc.samples : [];
  $('bench-what').textContent = `${doc.benchmark || '?'}: ${samples.length} samples, ${doc.cpus ?? '?'} CPU, ${doc.memory_mib ?? '?'} MiB`;
  const cols = new Map(); // "phase\0system" -> values
  for (const s of samples) {
    for (const [ph, v] of Object.entries((s && s.phases) || {})) {
      if (typeof v !== 'number' || !isFinite(v)) continue;
      const k = ph + '\0' + (s.system || 'cove');
      if (!cols.has(k)) cols.set(k, []);
      cols.get(k).push(v);
    }
  }
  const frag = document.createDocumentFragment();
  for (const [k, v] of cols) {
    const [ph, sys] = k.split('\0');
    v.sort((a, b) => a - b);
    frag.append(el('tr', {}, el('th', {}, ph), el('td', {}, sys), el('td', {}, v.length),
      ...[0, 50, 90, 99, 100].map((p) => el('td', {}, pct(v, p).toFixed(1)))));
  }
  $('brows').replaceChildren(frag);
}

// ---- wiring ----
document.addEventListener('DOMContentLoaded', () => {
  vendorCheck();
  $('view-dl').addEventListener('click', downloadFile);
  window.addEventListener('resize', () => {
    for (const [name, ch] of Object.entries(charts)) ch.setSize({ width: Math.max(200, $('ch-' + name).clientWidth), height: 140 });
  });
  $('signin-form').addEventListener('submit', signIn);
  $('signout').addEventListener('click', () => signOut(''));
  const refilter = () => { list.tokens = ['']; list.page = 0; loadList(); };
  $('filter').addEventListener('change', refilter);
  $('f-template').addEventListener('change', refilter);
  $('f-meta').addEventListener('change', refilter);
  $('prev').addEventListener('click', () => { if (list.page > 0) { list.page--; loadList(); } });
  $('next').addEventListener('click', () => { if (list.tokens[list.page + 1]) { list.page++; loadList(); } });
  for (const a of ['pause', 'resume', 'extend', 'kill']) $('act-' + a).addEventListener('click', () => act(a));
  const tabs = [...document.querySelectorAll('[role=tab]')];
  tabs.forEach((b, i) => {
    b.addEventListener('click', () => selectTab(b.dataset.tab));
    b.addEventListener('keydown', (ev) => {
      const d = ev.key === 'ArrowRight' ? 1 : ev.key === 'ArrowLeft' ? -1 : 0;
      if (!d) return;
      const t = tabs[(i + d + tabs.length) % tabs.length];
      selectTab(t.dataset.tab);
      t.focus();
    });
  });
  $('diff-reload').addEventListener('click', loadDiff);
  $('bench-file').addEventListener('change', openBench);
  $('term-start').addEventListener('click', termStart);
  $('term-stop').addEventListener('click', termClose);
  $('term').addEventListener('keydown', termKey);
  $('term').addEventListener('paste', (ev) => { ev.preventDefault(); termInput(enc.encode(ev.clipboardData.getData('text'))); });
  window.addEventListener('hashchange', route);
  route();
});
