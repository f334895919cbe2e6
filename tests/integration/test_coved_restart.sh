#!/usr/bin/env bash
# A daemon restart mid-life: 5 running sandboxes and 1 paused survive it.
# Stopping coved leaves the cove-vmm processes running; the next coved
# adopts all six from its state dir and libcove's registry (same ids,
# tokens, metadata, states); the running ones still run what they ran, the
# paused one resumes with its data; a sandbox whose cove-vmm died while
# coved was away is reported dead, not hidden.
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
coved_env
coved_start || { not_ok "coved starts"; finish; }

ids=()
for i in 1 2 3 4 5 6 7; do
	out=$(api POST /v2/sandboxes "{\"metadata\":{\"i\":\"$i\"},\"timeout\":3600}")
	[ "$(code)" = 201 ] || { not_ok "create $i: $out"; finish; }
	ids+=("$(jget "$out" 'o["sandboxID"]')")
done
ok "7 sandboxes created"
for i in 0 1 2 3 4 5 6; do gx "${ids[$i]}" "echo data-$i > /root/mark" >/dev/null; done
# A process started before the restart keeps running through it.
gx "${ids[0]}" 'setsid sh -c "i=0; while :; do i=\$((i+1)); echo \$i > /tmp/count; sleep 1; done" >/dev/null 2>&1 </dev/null &' >/dev/null
api POST "/sandboxes/${ids[5]}/pause" '{}' >/dev/null
[ "$(code)" = 204 ] && ok "sandbox 6 paused" || not_ok "pause: $(cat "$WORK/body")"
tokens=$(for s in "${ids[@]}"; do jget "$(api GET "/sandboxes/$s")" 'o["envdAccessToken"]'; done)

coved_stop
ok "coved stopped"
n=$($cove ls 2>/dev/null | grep -c -E "$(IFS='|'; echo "${ids[*]}")")
[ "$n" = 6 ] && ok "6 cove-vmm processes still run without coved (5 + the 7th)" || not_ok "running without coved: $n"
# The 7th dies while coved is away.
pid=$(jget "$(cat "$COVE_RUNTIME_DIR/${ids[6]}/meta.json")" 'o["pid"]')
c1=$(gx "${ids[0]}" 'cat /tmp/count')
kill -9 "$pid"

coved_start || { not_ok "coved restarts"; finish; }
out=$(api GET /v2/sandboxes)
states=$(jget "$out" '" ".join(s["state"] for s in o)')
[ "$states" = "running running running running running paused dead" ] && ok "all 7 listed in order: $states" || not_ok "states after restart: $states"
tokens2=$(for s in "${ids[@]}"; do jget "$(api GET "/sandboxes/$s")" 'o["envdAccessToken"]'; done)
[ "$tokens" = "$tokens2" ] && ok "same tokens after the restart" || not_ok "tokens changed"
[ "$(jget "$(api GET "/sandboxes/${ids[3]}")" 'o["metadata"]["i"]')" = 4 ] && ok "metadata kept" || not_ok "metadata lost"
good=0
for i in 0 1 2 3 4; do [ "$(gx "${ids[$i]}" 'cat /root/mark')" = "data-$i" ] && good=$((good + 1)); done
[ $good = 5 ] && ok "the 5 running sandboxes still run with their data" || not_ok "only $good of 5 answer"
c2=$(gx "${ids[0]}" 'cat /tmp/count')
[ "$c2" -gt "$c1" ] 2>/dev/null && ok "a process started before the restart still runs ($c1 -> $c2)" || not_ok "counter $c1 -> $c2"
[ -n "$(jget "$(api GET "/sandboxes/${ids[6]}")" 'o.get("deadReason","")')" ] && ok "the 7th is dead, with a reason" || not_ok "7th: $(api GET "/sandboxes/${ids[6]}")"
api POST "/v2/sandboxes/${ids[5]}/connect" '{}' >/dev/null
[ "$(code)" = 201 ] && [ "$(gx "${ids[5]}" 'cat /root/mark')" = data-5 ] && ok "the paused one resumes after the restart with its data" || not_ok "resume after restart: $(cat "$WORK/body")"
api POST "/sandboxes/${ids[1]}/pause" '{}' >/dev/null
[ "$(code)" = 204 ] && ok "an adopted sandbox can be paused" || not_ok "pause adopted: $(cat "$WORK/body")"
for s in "${ids[@]}"; do api DELETE "/sandboxes/$s" >/dev/null; [ "$(code)" = 204 ] || not_ok "delete $s: $(code)"; done
[ -z "$($cove ls 2>/dev/null | grep -E "$(IFS='|'; echo "${ids[*]}")")" ] && ok "all deleted, no cove-vmm left" || not_ok "left running"
grep -q '"event":"adopted"' "$STATE/journal/${ids[0]}.jsonl" && ok "the journal records the adoption" || not_ok "no adopted event"
finish
