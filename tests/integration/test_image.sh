#!/usr/bin/env bash
# Templates from container images (`cove template build NAME --from IMAGE`),
# the images made by images_lib.sh:
# - three layers (oci:): the tree as the layers leave it (a whiteout, an
#   opaque directory, a setuid file, a hard link, a symlink, a file of uid
#   1000), and the image's User (app = 1000), WorkingDir and Env are every
#   exec's defaults; `--user root` runs as 0;
# - busybox only, as oci: and as docker-archive: a command runs;
# - the Debian rootfs (oci-archive:): python3 sees WorkingDir and Env;
# - hostile layers (../ names, an absolute name, symlink-then-write, a hard
#   link to /etc/shadow, a million files, a 10 GiB sparse file on a 1G
#   disk): the build fails with one line naming the entry, leaves no
#   template and writes nothing outside its own files;
# - the same image again: nothing is built (inputs hash and files unchanged).
# Template names start with img- (the suite's store is shared); removed at
# the end.
source tests/integration/lib.sh
source tests/integration/images_lib.sh
cove_env
T=$COVE_TEMPLATE_DIR
$cove template build --help 2>&1 | grep -q -- --from ||
	{ echo "skip: cove template build has no --from"; exit 77; }

# inputs_hash NAME: the template's inputs hash (template.json).
inputs_hash() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["inputs_hash"])' "$T/$1/template.json"
}

# build NAME ARGS...: cove template build NAME ARGS, stdout and stderr in
# $WORK/out and $WORK/err (printed indented); returns its status.
build() {
	local name=$1 rc
	shift
	timeout -k 5 540 $cove template build "$name" "$@" >"$WORK/out" 2>"$WORK/err"
	rc=$?
	sed "s/^/  $name: /" "$WORK/out" "$WORK/err" | tail -n 20
	return $rc
}

# expect_lines FILE NAME WANT...: FILE's lines, one assertion each.
expect_lines() {
	local file=$1 name=$2 i=1 got
	shift 2
	for want in "$@"; do
		got=$(sed -n "${i}p" "$file")
		[ "$got" = "$want" ] && ok "$name: line $i '$want'" || not_ok "$name: line $i '$got' (want '$want')"
		i=$((i + 1))
	done
}

three=$(img_three) && bb=$(img_busybox) && bbd=$(img_busybox_docker) && deb=$(img_debian) ||
	{ not_ok "making the test images"; finish; }

# 1. Three layers.
if build img-three --from "$three"; then ok "built from the three-layer image"; else
	not_ok "build from $three: status $?, $(tail -n 3 "$WORK/err")"
	finish
fi
$cove template inspect img-three >"$WORK/inspect" && python3 -m json.tool "$WORK/inspect" >/dev/null &&
	ok "template inspect prints JSON" || not_ok "template inspect: $(head -c 300 "$WORK/inspect")"
# One line per check, whatever fails (so a failure does not shift the rest).
timeout -k 5 180 $cove run --template img-three -- sh -c '
	one() { out=$("$@" 2>&1); echo ${out:-"(nothing from $*)"}; }
	one id -u; one pwd; one echo "$IMG_VAR"
	for p in /usr/local/bin/suid /home/app/owned /data/link /data/hard1 /home/app; do
		one stat -c "%u %g %a %F" $p
	done
	one readlink /data/link
	[ "$(stat -c %i /data/hard1)" = "$(stat -c %i /data/hard2)" ] && echo same-inode || echo other-inodes
	one stat -c %h /data/hard2
	test -e /data/gone && echo gone-is-there || echo gone-removed
	one ls -A /opq
	for p in /data/keep /etc/motd /home/app/owned; do one cat $p; done' >"$WORK/three" 2>"$WORK/err"
sed 's/^/  three: /' "$WORK/three" "$WORK/err"
expect_lines "$WORK/three" "three layers" 1000 /home/app three \
	"0 0 4755 regular file" "1000 1000 640 regular file" "0 0 777 symbolic link" \
	"0 0 644 regular file" "1000 1000 755 directory" hard1 same-inode 2 gone-removed upper \
	keep "three layers" owned
check "the image user app by name" 0 app $cove run --template img-three -- id -un
check "--user root runs as uid 0" 0 0 $cove run --template img-three --user root -- id -u

# 2. Busybox only, from an OCI layout and from a docker-archive.
for pair in "img-bb $bb" "img-bbd $bbd"; do
	name=${pair%% *} ref=${pair#* }
	if build "$name" --from "$ref"; then
		check "$name (${ref%%:*}): a command runs" 0 from-busybox \
			$cove run --template "$name" -- /bin/sh -c 'echo from-busybox'
	else not_ok "build from $ref: $(tail -n 3 "$WORK/err")"; fi
done

# 3. The Debian rootfs as an oci-archive: WorkingDir and Env.
if build img-deb --from "$deb"; then
	check "Debian from oci-archive: WorkingDir and Env" 0 "/srv/app hello" \
		$cove run --template img-deb -- python3 -c 'import os; print(os.getcwd(), os.environ["GREETING"])'
else not_ok "build from $deb: $(tail -n 3 "$WORK/err")"; fi

# 4. Hostile layers: one line naming the entry, no template, nothing outside.
# What is in /, /var/tmp, the store (but our templates) and Cove's in /tmp.
snapshot() {
	ls -A / /var/tmp "$T" 2>/dev/null | grep -v '^img-'
	ls -A /tmp | grep -i cove
}
snapshot >"$WORK/before"
shadow_links=$(stat -c %h /etc/shadow)
for spec in "escape|'../../cove-escape'" "abs|'/cove-abs'" "symlink|'cove-lnk/cove-owned'" \
	"hardlink|'cove-shadow'" "many|'m/[0-9]{7}'" "sparse|'cove-huge'"; do
	kind=${spec%%|*} entry=${spec#*|}
	ref=$(img_hostile "$kind") || { not_ok "making hostile image $kind"; continue; }
	extra=()
	[ "$kind" = sparse ] && extra=(--disk-size 1G)
	if build "img-h-$kind" --from "$ref" "${extra[@]}"; then
		not_ok "hostile $kind: the build succeeded"
	else
		n=$(grep -cE -- "$entry" "$WORK/err")
		[ "$n" = 1 ] && ok "hostile $kind refused: $(grep -E -- "$entry" "$WORK/err")" ||
			not_ok "hostile $kind: $n lines name $entry in: $(head -c 300 "$WORK/err")"
	fi
	[ ! -e "$T/img-h-$kind" ] && ! $cove template ls | grep -q "img-h-$kind" &&
		ok "hostile $kind: no template left" || not_ok "hostile $kind: a template is left"
done
stray=$(find /tmp /var/tmp "$T" -xdev \( -name cove-escape -o -name cove-abs -o -name cove-owned \
	-o -name cove-shadow -o -name cove-huge \) 2>/dev/null)
if [ -z "$stray" ] && [ ! -e /cove-abs ] && [ ! -e /cove-escape ] && [ ! -e /tmp/cove-owned ] &&
	[ "$(stat -c %h /etc/shadow)" = "$shadow_links" ]; then
	ok "no hostile entry was written outside an image (and /etc/shadow has $shadow_links link)"
else not_ok "hostile entries outside: '$stray', /etc/shadow links $(stat -c %h /etc/shadow)"; fi
snapshot >"$WORK/after"
diff "$WORK/before" "$WORK/after" >"$WORK/diff" && ok "/, /var/tmp, the store and /tmp/cove* as before" ||
	not_ok "left behind: $(tr '\n' ' ' <"$WORK/diff")"

# 5. The same image again: nothing built, nothing rewritten.
hash=$(inputs_hash img-three)
files() { find "$T/img-three" -type f -printf '%p %s %T@\n' | sort; }
files >"$WORK/files1"
start=$(date +%s.%N)
if build img-three --from "$three"; then
	secs=$(echo "$(date +%s.%N) - $start" | bc)
	files >"$WORK/files2"
	if [ "$(inputs_hash img-three)" = "$hash" ] && cmp -s "$WORK/files1" "$WORK/files2" &&
		! grep -qi building "$WORK/err"; then
		ok "the same image again: not built (inputs hash ${hash:0:16}, files untouched, $secs s; stderr: $(tr '\n' ' ' <"$WORK/err"))"
	else not_ok "rebuild of the same image: hash $(inputs_hash img-three) (was $hash), $(diff "$WORK/files1" "$WORK/files2" | head -n 4)"; fi
else not_ok "rebuild of the same image failed: $(tail -n 3 "$WORK/err")"; fi

for name in img-three img-bb img-bbd img-deb; do $cove template rm "$name" >/dev/null 2>&1; done
finish
