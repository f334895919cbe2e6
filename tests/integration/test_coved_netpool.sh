#!/usr/bin/env bash
# coved's network pool (net_pool_size), with the VMM pool (pool_size) on: networks made ahead of time (a
# namespace, tap0, the veth and a cove-egress denying everything) serve
# creates with a network; the taken one enforces the create's own policy,
# carries the sandbox's name in its claims and files, and is refilled; a
# sandbox without a network takes none; deleting the sandbox ends its
# cove-egress; a coved killed with slots ready leaves them to the next
# coved, which removes them; a coved that stops removes its own.
source tests/integration/lib.sh
source tests/integration/netlib.sh
source tests/integration/coved_lib.sh
net_env
coved_env
RT=$COVE_RUNTIME_DIR

slots() { find "$RT" -maxdepth 1 -name '.np-*' | wc -l; }
egresses() { pgrep -x cove-egress | wc -l; }

egress0=$(egresses)
coved_start '"network": true, "net_pool_size": 2, "pool_size": 1' || { not_ok "coved starts"; finish; }
if until_metric coved_net_pool_ready 2 120; then ok "2 networks ready ahead of any create"; else
	not_ok "pool not ready: $(api GET /metrics | grep net_pool) $(tail -n 3 "$WORK/coved.log")"; finish; fi
[ "$(slots)" = 2 ] && [ "$(($(egresses) - egress0))" = 2 ] && ok "2 slots, 2 cove-egress processes" ||
	not_ok "slots $(slots), cove-egress $(($(egresses) - egress0))"

out=$(api POST /v2/sandboxes '{"templateID":"base","timeout":600,"network":{"allowOut":["198.51.100.90/32:9000"]}}')
[ "$(code)" = 201 ] || { not_ok "create with a network: $out"; finish; }
id=$(jget "$out" 'o["sandboxID"]')
[ "$(metric coved_net_pool_hits_total)" = 1 ] && ok "the create took a network from the pool" ||
	not_ok "hits $(metric coved_net_pool_hits_total), misses $(metric coved_net_pool_misses_total)"
works "$id" "the create's allow rule holds (198.51.100.90:9000)" 'echo hi | nc -w 10 198.51.100.90 9000' 'banner pin'
fast_fail "$id" "and nothing else (198.51.100.80:80)" 'timeout 30 wget -q -O- http://198.51.100.80/'
claim=$(grep -lx "$id" "$RT"/.net/* 2>/dev/null | head -n 1)
[ -n "$claim" ] && [ -S "$RT/$id/egress.sock" ] && [ -s "$RT/$id/egress.log" ] &&
	ok "its index claim names $id; egress.sock and the decision log are in its entry" ||
	not_ok "claim '$claim', entry: $(ls "$RT/$id")"
if until_metric coved_net_pool_ready 2 120; then ok "refilled to 2"; else
	not_ok "not refilled: ready $(metric coved_net_pool_ready)"; fi

out=$(api POST /v2/sandboxes '{"templateID":"base","timeout":600,"allow_internet_access":false}')
[ "$(code)" = 201 ] || { not_ok "create: $out"; finish; }
id2=$(jget "$out" 'o["sandboxID"]')
[ "$(metric coved_net_pool_hits_total)" = 2 ] && ok "a deny-all create takes one too" ||
	not_ok "hits $(metric coved_net_pool_hits_total)"
fast_fail "$id2" "its policy denies everything" 'nc -w 10 198.51.100.90 9000 </dev/null | grep banner'

h=$(metric coved_pool_hits_total)
[ "${h:-0}" -ge 1 ] && ok "the VMM pool served $h of them too (their TAP sent with the start request)" ||
	not_ok "VMM pool hits: '$h'"
api DELETE "/sandboxes/$id" >/dev/null
api DELETE "/sandboxes/$id2" >/dev/null
[ "$(code)" = 204 ] || not_ok "delete: $(code)"
until_metric coved_net_pool_ready 2 120 || true
n=$(($(egresses) - egress0))
[ "$n" = 2 ] && ok "deleting the sandboxes ended their cove-egress (2 left: the pool's)" ||
	not_ok "$n cove-egress processes beyond the test's start"

# A coved killed with slots ready: the next one removes them.
kill -9 "$COVED_PID"
wait "$COVED_PID" 2>/dev/null
COVED_PID=
old=$(find "$RT" -maxdepth 1 -name '.np-*' -printf '%f\n' | sort)
coved_start '"network": true, "net_pool_size": 1' || { not_ok "coved starts again"; finish; }
until_metric coved_net_pool_ready 1 120 || not_ok "second pool not ready"
left=$(for s in $old; do [ -e "$RT/$s" ] && echo "$s"; done)
[ -z "$left" ] && [ "$(slots)" = 1 ] && [ "$(($(egresses) - egress0))" = 1 ] &&
	ok "the dead coved's 2 slots were removed, 1 new one is ready" ||
	not_ok "left: $left; slots $(slots); cove-egress $(($(egresses) - egress0))"
coved_stop
sleep 1
[ "$(slots)" = 0 ] && [ "$(egresses)" = "$egress0" ] && ok "a stopping coved removes its pool" ||
	not_ok "after stop: slots $(slots), cove-egress $(($(egresses) - egress0))"
[ -z "$(ls "$RT/.net" 2>/dev/null)" ] && ok "no index claim left" || not_ok "claims left: $(ls "$RT/.net")"
finish
