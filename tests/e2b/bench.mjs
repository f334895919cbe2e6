// Create -> first exec through the SDK, N times (argv[2], default 3):
// prints one JSON line {"sdk_create_first_exec_ms": [...]}; each sandbox is
// killed after its exec (outside the timed part).
import { Sandbox } from 'e2b';

const n = Number(process.argv[2] || 3);
const ms = [];
for (let i = 0; i < n; i++) {
	const t0 = performance.now();
	const sbx = await Sandbox.create('base', { timeoutMs: 120_000 });
	await sbx.commands.run('true');
	ms.push(Math.round(performance.now() - t0));
	await sbx.kill();
}
console.log(JSON.stringify({ sdk_create_first_exec_ms: ms }));
