// An exec that outlives coved: `node restart.mjs start` creates a sandbox,
// starts a background command and prints "ID PID" (the client then goes
// away); after coved restarts, `node restart.mjs attach ID PID` re-attaches
// through Sandbox.connect and commands.connect and prints the command's
// stdout and exit code as JSON.  tests/integration/test_e2b_sdk.sh drives it.
import { Sandbox, CommandExitError } from 'e2b';

const [mode, id, pid] = process.argv.slice(2);
if (mode === 'start') {
	const sbx = await Sandbox.create('base', { timeoutMs: 600_000 });
	const h = await sbx.commands.run('echo before; while [ ! -e /tmp/go ]; do sleep 0.2; done; echo after; exit 7',
		{ background: true, timeoutMs: 0 }); // no lifetime: it must outlive the restart
	await h.disconnect();
	console.log(`${sbx.sandboxId} ${h.pid}`);
	process.exit(0);
} else if (mode === 'attach') {
	const sbx = await Sandbox.connect(id);
	const h = await sbx.commands.connect(Number(pid), { timeoutMs: 0 });
	await sbx.commands.run('touch /tmp/go');
	let res;
	try {
		res = await h.wait();
	} catch (e) {
		if (!(e instanceof CommandExitError)) throw e;
		res = e.result;
	}
	console.log(JSON.stringify({ stdout: res.stdout, exitCode: res.exitCode }));
	await sbx.kill();
} else {
	console.error('usage: restart.mjs start | attach ID PID');
	process.exit(2);
}
