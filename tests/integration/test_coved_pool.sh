#!/usr/bin/env bash
# coved's pool of pre-spawned VMMs (pool_size): members come up before any
# create; a create (cold boot) and a fork of two (a snapshot, then two
# restores at once) are served by members (coved_pool_hits_total), the
# pool refills, no member serves twice (every sandbox's cove-vmm is a pid
# that was a ready member, each a different one), the restored members
# run commands, and coved's exit leaves no member process or directory.
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
coved_env
coved_start '"pool_size": 2, "pool_cpus": 1, "memory_mib": 64' || { not_ok "coved starts"; finish; }
# The pids of cove-vmm --pool processes still waiting: started with
# --pool and still in a member's cgroup (.pool-XXXXXX; a taken one is in
# its sandbox's).
members() {
	local p
	for p in /proc/[0-9]*; do
		{ tr '\0' ' ' <"$p/cmdline"; } 2>/dev/null | grep -q '^[^ ]*cove-vmm --pool ' &&
			grep -q '/\.pool-[^/]*$' "$p/cgroup" 2>/dev/null && echo "${p#/proc/}"
	done | sort -n
}
nice_of() { awk '{ print $19 }' "/proc/$1/stat"; }
vmm_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["pid"])' "$COVE_RUNTIME_DIR/$1/meta.json"; }
t0=$(date +%s)
seen=$WORK/seen-members
: >"$seen"
note_members() { members >>"$seen"; }

# What the pool did, for a failure's message.
pool_state() {
	echo "ready=$(metric coved_pool_ready) spawned=$(metric coved_pool_spawned_total)" \
		"failed=$(metric coved_pool_failed_total) members: $(members | tr '\n' ' ')"
}
# Members come up at nice 19, behind everything else the host runs: the
# waits are generous (a loaded emulated host takes tens of seconds).
until_true 120 '[ "$(metric coved_pool_ready)" = 2 ]' && ok "two members ready before any create" ||
	{ not_ok "pool never filled: $(pool_state)"; tail -n 5 "$WORK/coved.log"; finish; }
echo "# $(( $(date +%s) - t0 )) s: pool full"
note_members
[ "$(members | wc -l)" = 2 ] && ok "two cove-vmm --pool processes wait" || not_ok "members: $(pool_state)"
for p in $(members); do [ "$(nice_of "$p")" = 19 ] || not_ok "member $p has nice $(nice_of "$p")"; done
capf() { awk -v k="$1:" '$1 == k { print $2 }' "/proc/$2/status"; }
# The jail's bounding set is emptied ahead (it needs nothing of the
# sandbox); the capabilities held go at the claim.
p=$(members | head -n 1)
[ "$(capf CapBnd "$p")" = 0000000000000000 ] && [ "$(capf CapEff "$p")" != 0000000000000000 ] &&
	ok "a waiting member's bounding set is empty already (CapEff $(capf CapEff "$p") until its claim)" ||
	not_ok "member $p: CapBnd $(capf CapBnd "$p") CapEff $(capf CapEff "$p")"
[ -z "$(ls "$COVE_RUNTIME_DIR")" ] && ok "members are not sandboxes (cove ls sees none)" || not_ok "runtime dir: $(ls "$COVE_RUNTIME_DIR")"

out=$(api POST /v2/sandboxes '{"templateID":"base","timeout":600}')
[ "$(code)" = 201 ] || { not_ok "create: $out"; finish; }
a=$(jget "$out" 'o["sandboxID"]')
[ "$(metric coved_pool_hits_total)" = 1 ] && ok "the create was served by a member" || not_ok "hits=$(metric coved_pool_hits_total) misses=$(metric coved_pool_misses_total)"
pa=$(vmm_of "$a")
seen_list=$(tr '\n' ' ' <"$seen")
grep -qx "$pa" "$seen" && ok "its cove-vmm, pid $pa, was a ready member" || not_ok "pid $pa was no member: $seen_list"
o=$(gx "$a" 'echo hi > /root/p; cat /root/p')
[ "$o" = hi ] && ok "commands run in it" || not_ok "exec in $a: $o"
grep -q 'confinement: namespaces' "$COVE_RUNTIME_DIR/$a/vmm.log" && grep -q 'cove-vmm: jail:' "$COVE_RUNTIME_DIR/$a/vmm.log" &&
	ok "it is jailed as a spawned one is" || not_ok "vmm.log: $(cat "$COVE_RUNTIME_DIR/$a/vmm.log")"
[ "$(stat -c %u "/proc/$pa")" != 0 ] && [ "$(capf CapEff "$pa")" = 0000000000000000 ] &&
	[ "$(capf CapBnd "$pa")" = 0000000000000000 ] &&
	ok "it runs under a jail uid ($(stat -c %u "/proc/$pa")) with no capability" ||
	not_ok "uid $(stat -c %u "/proc/$pa"), CapEff $(capf CapEff "$pa"), CapBnd $(capf CapBnd "$pa")"
grep -q "/$a\$" "/proc/$pa/cgroup" && ok "in the sandbox's own cgroup" || not_ok "cgroup: $(cat "/proc/$pa/cgroup")"
[ "$(nice_of "$pa")" = 0 ] && ok "at priority 0 again (members wait at nice 19)" || not_ok "nice $(nice_of "$pa")"

echo "# $(( $(date +%s) - t0 )) s: created"
until_true 120 '[ "$(metric coved_pool_ready)" = 2 ]' && ok "refilled to two" || not_ok "no refill: $(pool_state)"
note_members
members | grep -qx "$pa" && not_ok "the taken VMM is still a member" || ok "the taken VMM is no member any more"

out=$(api POST "/sandboxes/$a/fork" '{"count":2}')
[ "$(code)" = 201 ] || { not_ok "fork: $out"; finish; }
f1=$(jget "$out" 'o[0]["sandbox"]["sandboxID"]' 2>/dev/null)
f2=$(jget "$out" 'o[1]["sandbox"]["sandboxID"]' 2>/dev/null)
[ -n "$f1" ] && [ -n "$f2" ] || not_ok "a fork failed: $out"
[ "$(metric coved_pool_hits_total)" = 3 ] && ok "both forks (restores of its snapshot) were served by members" || not_ok "hits=$(metric coved_pool_hits_total) misses=$(metric coved_pool_misses_total)"
o1=$(gx "$f1" 'cat /root/p; echo one > /root/q; cat /root/q')
o2=$(gx "$f2" 'cat /root/p; cat /root/q 2>&1 | grep -c "No such"')
[ "$o1" = "hi
one" ] && [ "$o2" = "hi
1" ] && ok "both restored members run commands, each its own disk" ||
	not_ok "forks: $f1 said '$o1', $f2 said '$o2'"
pids="$pa $(vmm_of "$f1") $(vmm_of "$f2")"
[ "$(echo $pids | tr ' ' '\n' | sort -u | wc -l)" = 3 ] && ok "three sandboxes, three different VMMs: none served twice" || not_ok "pids: $pids"
for p in $pids; do grep -qx "$p" "$seen" || not_ok "pid $p was no member"; done
echo "# $(( $(date +%s) - t0 )) s so far"

# The three deletes at once (each waits for its guest to stop).
dels=()
for s in "$a" "$f1" "$f2"; do
	curl -s --max-time 120 --unix-socket "$SOCK" -X DELETE -H "X-API-KEY: $KEY" -o /dev/null "http://coved/sandboxes/$s" &
	dels+=($!)
done
wait "${dels[@]}"
left=$(members)
coved_stop
gone=yes
for p in $left; do [ -d "/proc/$p" ] && gone="no: $p"; done
[ "$gone" = yes ] && [ -z "$(members)" ] && ok "coved's exit ends every member" || not_ok "members left: $(members)"
[ -z "$(ls -A "$COVE_RUNTIME_DIR" | grep '^\.pool-')" ] && ok "no member directory left" || not_ok "left: $(ls -A "$COVE_RUNTIME_DIR")"
finish
