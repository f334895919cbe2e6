'use strict';
// Cove's JavaScript kernel for the code interpreter (kernel_js.py): one node
// process per context.  Requests come as JSON lines on stdin,
//   {"id": N, "code": "...", "env": {"K": "V"}}
// and every message goes out as a JSON line on the file descriptor given as
// the first argument (its own pipe, so nothing else writes there):
//   {"type": "ready"}
//   {"id": N, "type": "stdout"|"stderr", "text": "..."}
//   {"id": N, "type": "result", "text": "..."}           (util.inspect of the value)
//   {"id": N, "type": "error", "name", "value", "traceback"}
//   {"id": N, "type": "done", "execution_count": K}
// Cells run as scripts in this process's own context, so declarations
// (let and const too) stay for later cells, and a cell's value is its last
// expression's.  A cell with a top-level await runs as an async function:
// a single expression keeps its value, anything else has none and its
// declarations stay inside it.  SIGINT stops the running cell.
const fs = require('fs');
const path = require('path');
const util = require('util');
const vm = require('vm');
const { createRequire } = require('module');

const outFd = Number(process.argv[2]);
if (!Number.isInteger(outFd) || outFd < 3) {
  process.stderr.write('usage: node jskernel.js FD\n');
  process.exit(2);
}

function send(msg) {
  const buf = Buffer.from(JSON.stringify(msg) + '\n');
  let off = 0;
  while (off < buf.length) off += fs.writeSync(outFd, buf, off, buf.length - off);
}

// What the cells print goes to the execution running (or the last one).
let current = 0;
let count = 0;
for (const name of ['stdout', 'stderr']) {
  const stream = process[name];
  stream.write = (chunk, encoding, cb) => {
    if (typeof encoding === 'function') cb = encoding;
    const text = typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    if (current) send({ id: current, type: name, text });
    if (typeof cb === 'function') process.nextTick(cb);
    return true;
  };
}

globalThis.require = createRequire(path.join(process.cwd(), 'cell.js'));

process.on('uncaughtException', (e) => {
  process.stderr.write('Uncaught ' + (e && e.stack ? e.stack : String(e)) + '\n');
});
process.on('unhandledRejection', (e) => {
  process.stderr.write('Unhandled rejection: ' + (e && e.stack ? e.stack : String(e)) + '\n');
});

// SIGINT outside a running script (vm's breakOnSigint covers that) ends
// an awaited promise.
let interruptWait = null;
process.on('SIGINT', () => {
  if (interruptWait) interruptWait();
});

function compile(code, n) {
  const filename = `<cell ${n}>`;
  try {
    return new vm.Script(code, { filename });
  } catch (e) {
    if (!(e instanceof SyntaxError) || !/await is only valid/.test(e.message)) throw e;
  }
  try {
    return new vm.Script(`(async () => (\n${code}\n))()`, { filename });
  } catch (e) {
    return new vm.Script(`(async () => {\n${code}\n})()`, { filename });
  }
}

// A stack without this kernel's own frames (those under the cell's).
function traceOf(stack) {
  const lines = String(stack || '').split('\n');
  const cut = lines.findIndex((l) => /^\s+at .*(node:vm|jskernel\.js)/.test(l));
  return (cut >= 0 ? lines.slice(0, cut) : lines).join('\n');
}

function errorOf(e) {
  if (e instanceof Error || (e && typeof e === 'object' && 'message' in e)) {
    return { name: String(e.name || 'Error'), value: String(e.message), traceback: traceOf(e.stack) };
  }
  return { name: 'Error', value: util.inspect(e), traceback: '' };
}

function setEnv(env) {
  const saved = {};
  for (const [k, v] of Object.entries(env || {})) {
    saved[k] = Object.prototype.hasOwnProperty.call(process.env, k) ? process.env[k] : undefined;
    process.env[k] = String(v);
  }
  return saved;
}

function restoreEnv(saved) {
  for (const [k, v] of Object.entries(saved)) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
}

async function run(req) {
  current = req.id;
  const saved = setEnv(req.env);
  try {
    let value = compile(String(req.code), count + 1).runInThisContext({ breakOnSigint: true });
    if (value && typeof value.then === 'function') {
      value = await new Promise((resolve, reject) => {
        interruptWait = () => reject(Object.assign(new Error('interrupted'), { name: 'Interrupted' }));
        value.then(resolve, reject);
      });
    }
    if (value !== undefined) send({ id: req.id, type: 'result', text: util.inspect(value, { depth: 4 }) });
  } catch (e) {
    send({ id: req.id, type: 'error', ...errorOf(e) });
  } finally {
    interruptWait = null;
    restoreEnv(saved);
    count += 1;
    send({ id: req.id, type: 'done', execution_count: count });
  }
}

// One request at a time, in order.
let chain = Promise.resolve();
let pending = '';
process.stdin.setEncoding('utf8');
process.stdin.on('data', (data) => {
  pending += data;
  let nl;
  while ((nl = pending.indexOf('\n')) >= 0) {
    const line = pending.slice(0, nl);
    pending = pending.slice(nl + 1);
    let req;
    try {
      req = JSON.parse(line);
    } catch (e) {
      continue;
    }
    if (!req || !Number.isInteger(req.id) || req.id <= 0) continue;
    chain = chain.then(() => run(req));
  }
});
process.stdin.on('end', () => process.exit(0));
send({ type: 'ready' });
