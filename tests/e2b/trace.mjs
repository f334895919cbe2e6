// A traced agent (tests/integration/test_trace.sh): OpenTelemetry's Node
// SDK exports its spans to OTLP_URL (the test's receiver, which coved
// exports to as well); inside its span "agent.task" it drives the
// unmodified e2b SDK, passing the span's traceparent as a request header
// on every call: create (with a network policy), a command that succeeds
// and one that fails, a file written, read and listed, a connection the
// policy denies, pause, resume (connect), kill.  Prints one JSON line:
// {traceId, spanId, sandboxId, exitCodes}.
//
// The header goes on through undici's diagnostics channel, as
// @opentelemetry/instrumentation-undici does it: the SDK's `headers`
// option reaches its control-plane calls but not its envd calls
// (commands, files), which e2b 2.51 sends with headers of its own only.
import diagnostics_channel from 'node:diagnostics_channel';
import { trace } from '@opentelemetry/api';
import { NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { Sandbox, CommandExitError } from 'e2b';

for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY', 'OTLP_URL', 'DENIED_HOST']) {
	if (!process.env[v]) throw new Error(`${v} is not set`);
}
const provider = new NodeTracerProvider({
	spanProcessors: [new SimpleSpanProcessor(new OTLPTraceExporter({ url: `${process.env.OTLP_URL}/v1/traces` }))],
});
provider.register();
const tracer = trace.getTracer('cove-trace-test');
let traceHeaders = null; // while the agent's span is open
diagnostics_channel.subscribe('undici:request:create', ({ request }) => {
	for (const [k, v] of Object.entries(traceHeaders ?? {})) request.addHeader(k, v);
});

const out = await tracer.startActiveSpan('agent.task', async (span) => {
	const sc = span.spanContext();
	const traceparent = `00-${sc.traceId}-${sc.spanId}-01`;
	traceHeaders = { traceparent, tracestate: 'agent=test' };
	const sbx = await Sandbox.create('base', {
		timeoutMs: 300_000,
		network: { allowOut: ['198.51.100.90/32:9000'] },
	});
	const codes = [];
	codes.push((await sbx.commands.run('echo hello')).exitCode);
	try {
		await sbx.commands.run('echo oops >&2; exit 3');
		codes.push(0);
	} catch (e) {
		if (!(e instanceof CommandExitError)) throw e;
		codes.push(e.exitCode);
	}
	await sbx.files.write('/root/traced.txt', 'traced bytes');
	const back = await sbx.files.read('/root/traced.txt');
	if (back !== 'traced bytes') throw new Error(`read back ${back}`);
	const listed = await sbx.files.list('/root');
	if (!listed.some((e) => e.name === 'traced.txt')) throw new Error(`list: ${JSON.stringify(listed)}`);
	await sbx.files.remove('/root/traced.txt');
	await sbx.commands.run(`nc -w 3 ${process.env.DENIED_HOST} 9000 </dev/null; sleep 1; true`);
	await sbx.betaPause();
	const again = await Sandbox.connect(sbx.sandboxId);
	codes.push((await again.commands.run('echo resumed')).exitCode);
	await again.kill();
	traceHeaders = null;
	span.end();
	return { traceId: sc.traceId, spanId: sc.spanId, sandboxId: sbx.sandboxId, exitCodes: codes };
});
await provider.forceFlush();
await provider.shutdown();
console.log(JSON.stringify(out));
