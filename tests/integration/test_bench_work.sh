#!/usr/bin/env bash
# cove bench restore|fork --work: exact counts of each operation's work
# (tracefs, as root) in the JSON: system calls by process and name, KVM
# exits by reason, faults, bytes copied, CPU.  Checks that the counts add
# up, that cove-vmm's start -> first KVM_RUN is part of its total, and that
# the working-set record saves exits; a sample with lost events would fail.
source tests/integration/lib.sh
cove_env
export TMPDIR=$WORK
[ "$(id -u)" = 0 ] || { echo "skip: --work needs root"; exit 77; }

if $cove bench restore -n 2 --prefetch ab --work --json "$WORK/r.json" >"$WORK/r.out" 2>&1 &&
	python3 - "$WORK/r.json" <<'PY'; then
import json, sys
d = json.load(open(sys.argv[1]))
s = d["samples"]
assert len(s) == 2, len(s)
for x in s:
    w = x["work"]
    sc = w["syscalls"]
    for name in ("cove-vmm", "cove"):
        assert sc[name]["total"] > 0, (name, sc)
        assert sum(sc[name]["by_name"].values()) == sc[name]["total"], name
    assert sc["cove-vmm"]["by_name"]["ioctl"] > 0
    vmm = [e for e in w["syscalls_each"] if e["name"] == "cove-vmm"]
    assert len(vmm) == 1 and 0 < vmm[0]["to_first_kvm_run"] < vmm[0]["total"], vmm
    assert w["vmm_syscalls_to_first_kvm_run"] == vmm[0]["to_first_kvm_run"]
    ex = w["kvm_exits_traced"]
    assert ex["total"] > 0 and sum(ex["by_reason"].values()) == ex["total"], ex
    # The virtio devices' registers: MMIO accesses, each an exit (npf on
    # AMD, EPT_MISCONFIG on Intel), so no more of them than such exits.
    mmio_exits = ex["by_reason"].get("npf", 0) + ex["by_reason"].get("EPT_MISCONFIG", 0)
    assert 0 < ex["mmio_accesses"] <= mmio_exits, ex
    # KVM's own counter runs on to the stats read after the window.
    assert ex["total"] <= w["exits"] <= ex["total"] * 1.2 + 50, (ex["total"], w["exits"])
    assert w["faults"]["cove-vmm"]["minor"] > 0
    assert w["bytes_copied"]["cove-vmm"]["total"] > 0 and w["bytes_copied"]["cove"]["total"] > 0
    assert w["cpu_ms"]["cove-vmm"]["on_cpu"] > 0 and w["cpu_ms"]["cove"]["on_cpu"] > 0
    assert w["trace"]["lost"] == 0 and w["trace"]["clock"] == "mono"
on, off = s[0]["work"], s[1]["work"]
assert on["prefetch_used"] and not off["prefetch_used"]
assert on["kvm_exits_traced"]["total"] < off["kvm_exits_traced"]["total"], \
    (on["kvm_exits_traced"]["total"], off["kvm_exits_traced"]["total"])
print("restore: cove-vmm syscalls %d (start->KVM_RUN %d), exits %d with the record, %d without" % (
    on["syscalls"]["cove-vmm"]["total"], on["vmm_syscalls_to_first_kvm_run"],
    on["kvm_exits_traced"]["total"], off["kvm_exits_traced"]["total"]))
PY
	ok "bench restore --work: counts add up"
else
	not_ok "bench restore --work"; tail -n 40 "$WORK/r.out"
fi
if grep -q '^syscalls cove-vmm ' "$WORK/r.out" && grep -q '^cove-vmm start->KVM_RUN ' "$WORK/r.out" &&
	grep -q '^KVM exits (traced) ' "$WORK/r.out"; then
	ok "the table has the work rows"; else not_ok "work rows: $(cat "$WORK/r.out")"; fi
sed -n '/^work,/,$p' "$WORK/r.out"

if $cove bench fork --count 2 --work --json "$WORK/f.json" >"$WORK/f.out" 2>&1 &&
	python3 - "$WORK/f.json" <<'PY'; then
import json, sys
w = json.load(open(sys.argv[1]))["samples"][0]["work"]
vmm = [e for e in w["syscalls_each"] if e["name"] == "cove-vmm"]
assert len(vmm) == 2 and w["syscalls"]["cove-vmm"]["processes"] == 2, w["syscalls_each"]
assert all(0 < e["to_first_kvm_run"] < e["total"] for e in vmm), vmm
assert w["vmm_syscalls_to_first_kvm_run"] == sum(e["to_first_kvm_run"] for e in vmm)
assert w["syscalls"]["cove-vmm"]["total"] == sum(e["total"] for e in vmm)
ex = w["kvm_exits_traced"]
assert ex["total"] > 0 and sum(ex["by_reason"].values()) == ex["total"], ex
PY
	ok "bench fork --count 2 --work: two VMMs counted apart"
else
	not_ok "bench fork --work"; tail -n 30 "$WORK/f.out"
fi

out=$($cove bench exec --work 2>&1); rc=$?
if [ $rc = 2 ] && [[ $out == *"--work counts restore and fork"* ]]; then
	ok "--work refused for exec"; else not_ok "bench exec --work: $rc $out"; fi
out=$(setpriv --reuid=65534 --regid=65534 --clear-groups $cove bench restore --work 2>&1); rc=$?
if [ $rc = 1 ] && [ "$(echo "$out" | wc -l)" = 1 ] && [[ $out == *"--work needs root"* ]]; then
	ok "--work without root: one line, $out"; else not_ok "unprivileged --work: $rc $out"; fi
if ! ls /sys/kernel/tracing/instances 2>/dev/null | grep -q cove-work; then
	ok "no tracefs instance left behind"; else not_ok "left: $(ls /sys/kernel/tracing/instances)"; fi
finish
