#!/usr/bin/env bash
# Templates: `cove template build` with --run and --put streams the steps'
# output and makes a template that `cove run --template` restores (the
# files the steps wrote are there); a failing step fails the build with its
# status and leaves nothing; ls and rm; a changed --put file rebuilds the
# template (said on stderr); `cove run` restores from the base template
# (two concurrent first runs build it once) and `--cold` boots.  A restored
# guest has /run/cove/sandbox-id (the restore notice wrote it); a booted one
# does not.  A template restore maps its memory from the template memory
# cache (a tmpfs with huge pages), which rm empties.
source tests/integration/lib.sh
cove_env
export COVE_TEMPLATE_DIR=$WORK/templates
T=$COVE_TEMPLATE_DIR
restored='test -e /run/cove/sandbox-id && echo restored || echo booted'

echo hello-put >"$WORK/put.txt"
out=$($cove template build web --run 'echo step-one; echo made >/root/made' \
	--put "$WORK/put.txt:/etc/put.txt" --run 'cat /etc/put.txt; echo to-err >&2' 2>"$WORK/err")
rc=$?
sed 's/^/  build: /' "$WORK/err"
if [ $rc = 0 ] && [[ $out == *step-one*hello-put* ]] && grep -q to-err "$WORK/err" &&
	[[ $out == *"$T/web"* ]] && [ -f "$T/web/template.json" ]; then
	ok "build with --run and --put: output streamed, template in the store"
else not_ok "build: status $rc, out '$out'"; fi

out=$($cove run --template web -- sh -c "cat /root/made /etc/put.txt; $restored" 2>"$WORK/err")
if [ "$out" = "$(printf 'made\nhello-put\nrestored')" ] && ! grep -q building "$WORK/err"; then
	ok "cove run --template restores it: the steps' files are there"
else not_ok "run --template: '$out', stderr $(cat "$WORK/err")"; fi

# The template memory cache (root): the restore maps a copy of the
# template's memory on a tmpfs with huge pages, and the host maps what the
# guest reads of it in 2 MiB pages (ShmemPmdMapped in the VMM's smaps).
$cove run --template web -- sleep 8 >/dev/null 2>"$WORK/err" &
runp=$!
pmd="" held=""
for _ in $(seq 60); do
	vpid=$(pgrep -f -- '--restore-memory /run/cove-memcache/m-' | head -n 1)
	if [ -n "$vpid" ] && [ -r "/proc/$vpid/smaps" ]; then
		# It holds a shared flock on its copy (no eviction takes a copy in use).
		copy=$(tr '\0' '\n' <"/proc/$vpid/cmdline" | grep -A1 -x -- --restore-memory | tail -n 1)
		ino=$(stat -c %i "$copy" 2>/dev/null)
		[ -n "$ino" ] && awk -v p="$vpid" -v i=":$ino" '$2 == "FLOCK" && $4 == "READ" && $5 == p &&
			substr($6, length($6) - length(i) + 1) == i { f = 1 } END { exit !f }' /proc/locks && held=yes
		# (the jailed VMM's smaps names the copy from the cache's root)
		pmd=$(awk '/\/m-[0-9a-f]+-[0-9a-f]+-[0-9a-f]+-/ { on = 1; next } /^[0-9a-f]+-/ { on = 0 }
			on && /^(Shmem|File)PmdMapped:/ { s += $2 } END { print s + 0 }' "/proc/$vpid/smaps")
		[ "${pmd:-0}" -gt 0 ] && break
	fi
	sleep 0.5
done
wait $runp
# Copies of this test's templates (other tests' may be there too).
ours() { grep -l "^$(realpath "$T")/" /run/cove-memcache/*.src 2>/dev/null | wc -l; }
copies=$(ours)
if [ "${pmd:-0}" -gt 0 ] && [ "$copies" = 1 ]; then
	ok "a template restore maps the cached copy in 2 MiB pages: ShmemPmdMapped ${pmd} kB"
else not_ok "memory cache: ShmemPmdMapped '${pmd}' kB, $copies copies, $(cat "$WORK/err")"; fi
[ "$held" = yes ] && ok "the VMM holds a shared flock on its copy while it runs" ||
	not_ok "no shared flock on the copy in /proc/locks: $(cat /proc/locks)"

hash=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["inputs_hash"])' "$T/web/template.json")
out=$($cove template build web --run 'echo step-one; echo made >/root/made' \
	--put "$WORK/put.txt:/etc/put.txt" --run 'cat /etc/put.txt; echo to-err >&2' 2>"$WORK/err")
if [ $? = 0 ] && ! grep -q step-one <<<"$out" && ! grep -q building "$WORK/err"; then
	ok "the same inputs again: not built again"
else not_ok "rebuild of unchanged inputs: '$out' $(cat "$WORK/err")"; fi

out=$($cove template ls)
echo "$out" | sed 's/^/  ls: /'
[[ $out == *web*"${hash:0:16}"* ]] && ok "ls shows the template and its inputs hash" || not_ok "ls: $out"
$cove template ls --json | python3 -c '
import json, sys
v = json.load(sys.stdin)
assert [t["name"] for t in v] == ["web"], v
assert v[0]["bytes"] > 0 and v[0]["created"] > 0, v' && ok "ls --json" || not_ok "ls --json"

# An input changed: the template is rebuilt where it is used.
echo changed-put >"$WORK/put.txt"
out=$($cove run --template web -- cat /etc/put.txt 2>"$WORK/err")
if [ "$out" = changed-put ] && grep -q "inputs changed, rebuilding" "$WORK/err"; then
	ok "a changed --put file rebuilds it: $(grep -m1 'inputs changed' "$WORK/err")"
else not_ok "changed input: '$out', stderr $(cat "$WORK/err")"; fi
hash2=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["inputs_hash"])' "$T/web/template.json")
[ "$hash2" != "$hash" ] && ok "its inputs hash changed" || not_ok "hash unchanged $hash2"

# A failing step: its status, nothing left.
out=$($cove template build bad --run 'echo before' --run 'exit 7' --run 'echo never' 2>&1)
rc=$?
if [ $rc = 7 ] && [[ $out == *before* ]] && [[ $out != *never* ]] && [[ $out == *"status 7"* ]]; then
	ok "a failing step fails the build with its status 7"
else not_ok "failing step: status $rc, '$out'"; fi
# The step cache keeps what finished ("echo before"), never a half-made one.
left=$(ls -A "$T" | grep -v -e '^web$' -e '^\.lock$' -e '^\.hash$' -e '^\.steps$'
	ls -A "$T/.steps" 2>/dev/null | grep -v -E '^[0-9a-f]{64}$')
[ -z "$left" ] && ok "nothing half-written left" || not_ok "left: $left"
out=$($cove template build bad2 --put "$WORK/nonexistent:/x" 2>&1)
[ $? = 2 ] && [[ $out == *nonexistent* ]] && ok "a missing --put file: $out" || not_ok "missing put: $out"

$cove template rm web && [ ! -e "$T/web" ] && ok "rm removes it" || not_ok "rm"
[ "$(ours)" = 0 ] && ok "and its cached memory copy" ||
	not_ok "left in the memory cache: $(ls /run/cove-memcache)"
out=$($cove run --template web -- true 2>&1)
[ $? = 125 ] && [[ $out == *"no template 'web'"* ]] && ok "a removed template: $out" || not_ok "run of removed: $out"
[ -z "$($cove template ls | tail -n +2)" ] && ok "ls is empty" || not_ok "ls after rm"

# cove run: two concurrent first runs build the base template once.
$cove run -- sh -c "$restored" >"$WORK/r1" 2>"$WORK/e1" &
p1=$!
$cove run -- sh -c "$restored" >"$WORK/r2" 2>"$WORK/e2" &
p2=$!
wait $p1
rc1=$?
wait $p2
rc2=$?
cat "$WORK/e1" "$WORK/e2" | sed 's/^/  run: /'
builds=$(cat "$WORK/e1" "$WORK/e2" | grep -c 'building it')
if [ $rc1 = 0 ] && [ $rc2 = 0 ] && [ "$(cat "$WORK/r1")" = restored ] &&
	[ "$(cat "$WORK/r2")" = restored ] && [ "$builds" = 1 ]; then
	ok "two concurrent first cove runs: one built the base template, both restored it"
else not_ok "concurrent: $rc1/$rc2 '$(cat "$WORK/r1")' '$(cat "$WORK/r2")', $builds builds"; fi
n=$(ls "$T" | grep -c '^base-minimal-1x256-')
[ "$n" = 1 ] && ok "one base template: $(ls "$T" | grep base-)" || not_ok "$n base templates"
out=$($cove run -- sh -c "$restored" 2>"$WORK/err")
[ "$out" = restored ] && [ ! -s "$WORK/err" ] && ok "the next cove run restores it silently" ||
	not_ok "second run: '$out' $(cat "$WORK/err")"
out=$($cove run --cold -- sh -c "$restored" 2>&1)
[ "$out" = booted ] && ok "--cold boots" || not_ok "--cold: '$out'"
out=$($cove run --template web --cold -- true 2>&1)
[ $? = 2 ] && ok "--template with --cold is refused: $out" || not_ok "--template --cold: $out"
finish
