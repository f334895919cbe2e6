// The SDK's half of tests/integration/test_console.sh (the unmodified e2b
// SDK against coved; E2B_API_URL, E2B_SANDBOX_URL, E2B_API_KEY set).
//   node console.mjs setup  -> one JSON line: {a, b} (the two sandboxes' ids)
//   node console.mjs state ID -> the sandbox's state as the SDK lists it
// setup: sandbox a runs commands (one prints a <script>, one asks for a
// connection its network policy denies), writes a file and files with
// hostile names; its metadata holds markup too.
import { Sandbox } from 'e2b';

const HOSTILE = ['<img src=x onerror=alert(1)>', '"><script>alert(2)</script>'];

async function setup() {
  const net = { allowOut: ['198.51.100.90/32:9000'] };
  const a = await Sandbox.create('base', {
    timeoutMs: 600_000,
    metadata: { owner: 'console-test', note: '<img src=x onerror=alert(3)>' },
    network: net,
  });
  const b = await Sandbox.create('base', { timeoutMs: 600_000, metadata: { owner: 'console-test-b' } });
  await a.commands.run('echo ui-test-one');
  await a.commands.run("printf '<script>alert(4)</script>\\n'");
  await a.files.write('/root/console-note.txt', 'hello from the console test\n');
  for (const h of HOSTILE) await a.files.write('/root/' + h, 'hostile name\n');
  // A refused connection: cove-egress denies it and logs it.
  await a.commands.run('nc -w 3 198.51.100.91 9000 </dev/null; true');
  await a.commands.run('sync');
  console.log(JSON.stringify({ a: a.sandboxId, b: b.sandboxId }));
}

async function state(id) {
  const info = await Sandbox.getInfo(id);
  console.log(info.state);
}

const [mode, arg] = process.argv.slice(2);
if (mode === 'setup') await setup();
else if (mode === 'state') await state(arg);
else { console.error('usage: console.mjs setup | state ID'); process.exit(2); }
