#!/usr/bin/env bash
# Templates from a Dockerfile (`cove template build NAME -f DOCKERFILE
# CONTEXT`), FROM the Debian rootfs as an oci-archive (images_lib.sh):
# - ARG (a default overridden by --build-arg), ENV, WORKDIR, COPY of a small
#   app (.dockerignore honoured), RUN (a venv), CMD: the files are there,
#   and ENV, WORKDIR and the image's own Env are the execs' defaults;
# - only the last RUN edited: the steps before it say "(cached)" and only
#   it runs again;
# - --start 'python3 /srv/app/server.py' --ready-port 8000: the template's
#   snapshot has the server listening, so a fresh sandbox's first request
#   to 127.0.0.1:8000 is answered (one try, no retries).
# Template names start with img-df (the suite's store is shared); removed
# at the end.
source tests/integration/lib.sh
source tests/integration/images_lib.sh
cove_env
$cove template build --help 2>&1 | grep -q -- --build-arg ||
	{ echo "skip: cove template build has no -f/--build-arg"; exit 77; }
deb=$(img_debian) || { not_ok "making the Debian oci-archive"; finish; }

ctx=$WORK/ctx
mkdir -p "$ctx/app"
cp tests/integration/app/server.py "$ctx/app/"
echo "not for the image" >"$ctx/app/secret.txt"
echo "app/secret.txt" >"$ctx/.dockerignore"
mkdir -p "$WORK/assets/css" && echo "body{}" >"$WORK/assets/css/site.css"
tar -czf "$ctx/assets.tar.gz" -C "$WORK/assets" css
# dockerfile LAST: the Dockerfile, its last RUN writing LAST.
dockerfile() {
	cat >"$ctx/Dockerfile" <<EOF
FROM $deb
ARG APP_MSG=default
ENV APP_NAME=cove-app
WORKDIR /srv/app
COPY app/ /srv/app/
ADD assets.tar.gz /srv/assets/
RUN echo "\$APP_MSG" >/srv/app/msg && python3 -m venv --without-pip /srv/venv && echo venv-made
RUN echo $1 >/srv/app/last && echo ran-$1
CMD ["python3", "/srv/app/server.py"]
EOF
}

# build NAME ARGS...: cove template build NAME -f Dockerfile CONTEXT ARGS;
# stdout and stderr in $WORK/out, $WORK/err (printed); its status.
build() {
	local name=$1 rc
	shift
	timeout -k 5 540 $cove template build "$name" -f "$ctx/Dockerfile" "$ctx" "$@" \
		>"$WORK/out" 2>"$WORK/err"
	rc=$?
	sed "s/^/  $name: /" "$WORK/out" "$WORK/err" | tail -n 30
	return $rc
}

dockerfile last-v1
if build img-df --build-arg APP_MSG=from-build-arg && grep -q venv-made "$WORK/out" &&
	grep -q ran-last-v1 "$WORK/out"; then
	ok "built from the Dockerfile: every RUN ran"
else
	not_ok "Dockerfile build: $(tail -n 3 "$WORK/err")"
	finish
fi
out=$($cove run --template img-df -- sh -c 'pwd; echo "$APP_NAME $GREETING"; cat msg last;
	test -x /srv/venv/bin/python3 && echo venv; test -e secret.txt && echo secret || echo no-secret
	cat /srv/assets/css/site.css' 2>&1)
want=$(printf '/srv/app\ncove-app hello\nfrom-build-arg\nlast-v1\nvenv\nno-secret\nbody{}')
[ "$out" = "$want" ] && ok "WORKDIR, ENV, the image's Env, ARG from --build-arg, COPY, ADD of a .tar.gz (unpacked), RUN, .dockerignore" ||
	not_ok "sandbox from the Dockerfile: '$out' (want '$want')"

# Only the last RUN changed: the steps before it come from the cache.
dockerfile last-v2
if build img-df --build-arg APP_MSG=from-build-arg; then
	copy=$(grep -E 'step [0-9]+/[0-9]+: COPY' "$WORK/err" | tail -n 1)
	venv=$(grep -E 'step [0-9]+/[0-9]+: RUN .*venv' "$WORK/err" | tail -n 1)
	last=$(grep -E 'step [0-9]+/[0-9]+: RUN .*last-v2' "$WORK/err" | tail -n 1)
	if [[ $copy == *"(cached)"* ]] && [[ $venv == *"(cached)"* ]] && [ -n "$last" ] &&
		[[ $last != *"(cached)"* ]] && ! grep -q venv-made "$WORK/out" && grep -q ran-last-v2 "$WORK/out"; then
		ok "last RUN edited: COPY and the first RUN cached, only the last ran ($last)"
	else not_ok "rebuild: copy '$copy', venv '$venv', last '$last', out $(tr '\n' ' ' <"$WORK/out")"; fi
	check "the rebuilt template has the new last step" 0 last-v2 $cove run --template img-df -- cat /srv/app/last
else not_ok "rebuild after the last RUN changed: $(tail -n 3 "$WORK/err")"; fi

# A start command and its ready port: listening in the snapshot.
if build img-df-web --build-arg APP_MSG=from-build-arg --start 'python3 /srv/app/server.py' \
	--ready-port 8000; then
	ok "built with --start and --ready-port 8000"
	check "a fresh sandbox's first request to 127.0.0.1:8000 is answered" 0 \
		"hello from cove-app in /srv/app" \
		$cove run --template img-df-web -- curl -sS --max-time 20 http://127.0.0.1:8000/
else not_ok "build with --start: $(tail -n 3 "$WORK/err")"; fi

for name in img-df img-df-web; do $cove template rm "$name" >/dev/null 2>&1; done
# The removed templates' step snapshots go; other tests' templates keep theirs.
out=$($cove template prune 2>&1)
[[ $out =~ ^removed\ ([0-9]+)\ step ]] && [ "${BASH_REMATCH[1]}" -ge 5 ] &&
	ok "cove template prune after rm: $out" || not_ok "prune: '$out'"

# A RUN past --step-timeout is killed: the build fails in one line.
out=$(timeout -k 5 300 $cove template build img-df-slow --step-timeout 3 --run 'sleep 60' 2>&1)
rc=$?
line=$(printf '%s\n' "$out" | grep 'timed out after 3 s')
[ "$rc" -ne 0 ] && [ -n "$line" ] && ok "a RUN past --step-timeout 3 is killed: $line" ||
	not_ok "step timeout: status $rc, $(printf '%s' "$out" | tail -n 3)"

# Fourteen RUNs: each step's snapshot copies the disk's overlay (no layer
# on the last one), so a long template restores, and its rebuild with the
# last RUN edited starts from the 13th.
runs=()
for i in $(seq 1 13); do runs+=(--run "echo $i >>/root/steps"); done
deep() { timeout -k 5 400 $cove template build img-df-deep --memory 128 "${runs[@]}" --run "$1" 2>&1; }
if out=$(deep 'echo 14 >>/root/steps') && out=$(deep 'echo fourteen >>/root/steps') &&
	cached=$(printf '%s\n' "$out" | grep -m1 'steps 1-13: cached'); then
	ok "14 RUN steps build, and rebuild from the 13th: $cached"
	check "a sandbox from the 14-step template sees every step" 0 "$(seq 1 13 | tr '\n' ' ')fourteen " \
		sh -c "$cove run --template img-df-deep -- cat /root/steps | tr '\n' ' '"
else not_ok "14 RUN steps: $(printf '%s' "$out" | tail -n 3)"; fi
$cove template rm img-df-deep >/dev/null 2>&1
$cove template prune >/dev/null 2>&1
finish
