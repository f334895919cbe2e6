// The unmodified e2b JS SDK against coved: named snapshots, listSnapshots
// and deleteSnapshot (issue 30).  Run by tests/integration/test_e2b_watch.sh,
// which also sets E2B_API_KEY2, a key of another tenant.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { Sandbox } from 'e2b';

for (const v of ['E2B_API_URL', 'E2B_SANDBOX_URL', 'E2B_API_KEY', 'E2B_API_KEY2']) {
	if (!process.env[v]) throw new Error(`${v} is not set`);
}

const made = [];
after(async () => {
	for (const s of made) await s.kill().catch(() => {});
});

const ids = (list) => list.map((s) => s.snapshotId);

test('named snapshots: listed, started from by name, deleted once nothing stands on them', async () => {
	const sbx = await Sandbox.create('base', { timeoutMs: 300_000 });
	made.push(sbx);
	await sbx.files.write('/tmp/before.txt', 'written before the snapshot');
	const name = `named-${Date.now()}`;
	const s1 = await sbx.createSnapshot({ name });
	assert.match(s1.snapshotId, /^snap-[a-z0-9]+$/);
	assert.deepEqual(s1.names, [name]);
	const s2 = await Sandbox.createSnapshot(sbx.sandboxId);
	assert.deepEqual(s2.names, [s2.snapshotId], 'an unnamed one is named by its id');

	// Listed by sandbox (newest first, one a page) and by name.
	const pages = Sandbox.listSnapshots({ sandboxId: sbx.sandboxId, limit: 1 });
	assert.deepEqual(ids(await pages.nextItems()), [s2.snapshotId]);
	assert.equal(pages.hasNext, true);
	const second = await pages.nextItems();
	assert.deepEqual(ids(second), [s1.snapshotId]);
	assert.deepEqual(second[0].names, [name]);
	assert.equal(pages.hasNext, false);
	assert.deepEqual(ids(await Sandbox.listSnapshots({ name }).nextItems()), [s1.snapshotId]);
	assert.deepEqual(ids(await sbx.listSnapshots().nextItems()), [s2.snapshotId, s1.snapshotId]);

	// Started from by name: the file is there.
	const child = await Sandbox.create(name, { timeoutMs: 120_000 });
	made.push(child);
	assert.equal(await child.files.read('/tmp/before.txt'), 'written before the snapshot');

	// Another tenant sees none of it.
	const other = { apiKey: process.env.E2B_API_KEY2 };
	assert.deepEqual(await Sandbox.listSnapshots(other).nextItems(), []);
	assert.deepEqual(await Sandbox.listSnapshots({ ...other, name }).nextItems(), []);
	assert.equal(await Sandbox.deleteSnapshot(s1.snapshotId, other), false);
	await assert.rejects(Sandbox.create(name, { ...other, timeoutMs: 60_000 }), /not found/);

	// Refused while a sandbox (the child, the source) or a snapshot stands on it.
	await assert.rejects(Sandbox.deleteSnapshot(s1.snapshotId), /in use: (sandbox|snapshot) /);
	await child.kill();
	await sbx.kill();
	await assert.rejects(Sandbox.deleteSnapshot(s1.snapshotId), new RegExp(`snapshot ${s2.snapshotId} stands on it`));
	assert.equal(await Sandbox.deleteSnapshot(s2.snapshotId), true);
	assert.equal(await Sandbox.deleteSnapshot(s1.snapshotId), true);
	assert.equal(await Sandbox.deleteSnapshot(s1.snapshotId), false, 'a second time: not found');
	assert.deepEqual(await Sandbox.listSnapshots({ name }).nextItems(), []);
	await assert.rejects(Sandbox.create(name, { timeoutMs: 60_000 }), /not found/);
});
