# Container images for the image tests (sourced, or run: see the end), made
# here from nothing downloaded: tests/integration/mkimage.py writes the
# layers and layouts, build/itest/ext4_tar exports the Debian rootfs.  Each
# function prints an image reference for `cove template build --from`.
#
# Made once and cached by the hash of their inputs (this file, mkimage.py,
# busybox, the Debian image's recipe) under
# ${COVE_CACHE:-~/.cache/cove}/test-images/KIND-HASH.  The emulated KVM host
# sees that cache read-only (its / is the host's): scripts/integration makes
# the images there first (`bash tests/integration/images_lib.sh all`), and a
# test there finds them; missing ones are made in $COVE_ITEST_STAGE (one
# suite) or $WORK, which cost the emulated CPU much more.
#
#   img_three     oci:        three layers: busybox, users root and app
#                             (1000:1000); a setuid file, a hard link, a
#                             symlink, a file of uid 1000; a whiteout and an
#                             opaque directory; User app, WorkingDir
#                             /home/app, Env IMG_VAR=three (mkimage.py)
#   img_busybox   oci:        /bin/busybox and /bin/sh only
#   img_busybox_docker        docker-archive: of the same
#   img_debian    oci-archive: build/images/debian.ext4's tree as one plain
#                             tar layer, /srv/app on top, Env GREETING=hello,
#                             WorkingDir /srv/app
#   img_hostile KIND          oci: one layer with one hostile entry; KIND is
#                             escape, abs, symlink, hardlink, many or sparse
set -u

IMAGES_LIB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
IMAGES_BUSYBOX=${BUSYBOX:-/bin/busybox}

# img_roots: the cache roots, the shared one first.
img_roots() {
	echo "${COVE_CACHE:-$HOME/.cache/cove}/test-images"
	[ -z "${COVE_ITEST_STAGE:-}" ] || echo "$COVE_ITEST_STAGE/test-images"
	[ -z "${WORK:-}" ] || echo "$WORK/test-images"
}

# img_key WORDS...: the hash of the makers and the given inputs.
img_key() {
	{
		echo "cove-test-images-v1 $*"
		sha256sum "$IMAGES_LIB_DIR/images_lib.sh" "$IMAGES_LIB_DIR/mkimage.py" | cut -d' ' -f1
	} | sha256sum | cut -c1-16
}

# img_make NAME FILE -- CMD...: the cached entry NAME's FILE (an image
# directory or archive), made by CMD (run with $OUT set to where FILE
# goes) when no root has it yet.  Prints the path; 1 when it cannot.
img_make() {
	local name=$1 file=$2 root tmp
	shift 3
	while read -r root; do
		[ -e "$root/$name/$file" ] && { echo "$root/$name/$file"; return 0; }
	done < <(img_roots)
	while read -r root; do
		mkdir -p "$root" 2>/dev/null || continue
		tmp=$(mktemp -d "$root/.make.XXXXXX" 2>/dev/null) || continue
		mkdir "$tmp/entry"
		if ! OUT=$tmp/entry/$file "$@" >&2; then
			rm -rf "$tmp"
			echo "images_lib: making $name failed" >&2
			return 1
		fi
		# A racing maker may have won: its entry is the same.
		mv -T "$tmp/entry" "$root/$name" 2>/dev/null
		rm -rf "$tmp"
		echo "$root/$name/$file"
		return 0
	done < <(img_roots)
	echo "images_lib: no writable cache for $name (COVE_CACHE, COVE_ITEST_STAGE, WORK)" >&2
	return 1
}

# img_py KIND [ARGS]: mkimage.py KIND $OUT ARGS.
img_py() {
	local kind=$1
	shift
	python3 "$IMAGES_LIB_DIR/mkimage.py" "$kind" "$OUT" "$@"
}

# img_py_debian EXT4 EXPORTER: the rootfs exported, then the archive.
img_py_debian() {
	local rc
	"$2" "$1" "$OUT.rootfs" && img_py debian "$OUT.rootfs"
	rc=$?
	rm -f "$OUT.rootfs"
	return $rc
}

img_busybox_key() {
	[ -x "$IMAGES_BUSYBOX" ] || { echo "images_lib: no $IMAGES_BUSYBOX (busybox-static)" >&2; return 1; }
	img_key "$1" "$(sha256sum <"$IMAGES_BUSYBOX" | cut -d' ' -f1)"
}

img_three() {
	local k p
	k=$(img_busybox_key three) || return 1
	p=$(img_make "three-$k" oci -- img_py three "$IMAGES_BUSYBOX") && echo "oci:$p:latest"
}

img_busybox() {
	local k p
	k=$(img_busybox_key busybox) || return 1
	p=$(img_make "busybox-$k" oci -- img_py busybox "$IMAGES_BUSYBOX") && echo "oci:$p:latest"
}

img_busybox_docker() {
	local k p
	k=$(img_busybox_key docker-busybox) || return 1
	p=$(img_make "docker-busybox-$k" image.tar -- img_py docker-busybox "$IMAGES_BUSYBOX") &&
		echo "docker-archive:$p"
}

# img_debian [EXT4]: the Debian rootfs (build/images/debian.ext4) as an
# oci-archive; needs build/itest/ext4_tar (make bins).
img_debian() {
	local ext4=${1:-build/images/debian.ext4} exporter=${ITEST_BIN:-build/itest}/ext4_tar k p recipe
	[ -f "$ext4" ] || { echo "images_lib: $ext4 is not built (make images)" >&2; return 1; }
	[ -x "$exporter" ] || exporter=build/itest/ext4_tar
	[ -x "$exporter" ] || { echo "images_lib: $exporter is not built (make bins)" >&2; return 1; }
	# The recipe names the image's contents; without one, its size and time.
	recipe=$(cat "$ext4.recipe" 2>/dev/null || stat -c '%s %Y' "$ext4")
	k=$(img_key debian "$recipe" "$(sha256sum <"$IMAGES_LIB_DIR/ext4_tar.c" | cut -d' ' -f1)")
	p=$(img_make "debian-$k" image.tar -- img_py_debian "$ext4" "$exporter") && echo "oci-archive:$p"
}

# img_hostile KIND: escape, abs, symlink, hardlink, many, sparse.
img_hostile() {
	local kind=$1 k p
	case $kind in
	escape | abs | symlink | hardlink | many | sparse) ;;
	*) echo "images_lib: no hostile image '$kind'" >&2; return 1 ;;
	esac
	k=$(img_key "hostile-$kind")
	p=$(img_make "hostile-$kind-$k" oci -- img_py "hostile-$kind") && echo "oci:$p:latest"
}

# img_all: every image above (on the host, before the emulated one boots).
img_all() {
	local f rc=0
	for f in img_three img_busybox img_busybox_docker img_debian "img_hostile escape" \
		"img_hostile abs" "img_hostile symlink" "img_hostile hardlink" "img_hostile many" \
		"img_hostile sparse"; do
		$f || rc=1
	done
	return $rc
}

# Run as a script: `images_lib.sh all` (or one function's name and args).
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
	[ $# -gt 0 ] || { echo "usage: images_lib.sh all | img_NAME [ARGS]" >&2; exit 2; }
	if [ "$1" = all ]; then img_all; else "$@"; fi
fi
