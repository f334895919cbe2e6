#!/usr/bin/env bash
# E2B's Template.build with the unmodified e2b SDK against coved
# (tests/e2b/template.mjs): test_dockerfile.sh's template in the SDK's
# words, from the Debian image exported as an OCI archive
# (tests/integration/images_lib.sh): setEnvs (its ARG and ENV), setWorkdir,
# copy (the app folder uploaded through coved's upload link, with a mode),
# runCmd (a venv, then the last RUN) and setStartCmd with waitForURL, built
# by coved's E2B template routes; then Sandbox.create(name) and one command
# that sees what each step left and the server already answering.  Another
# tenant's key sees no such template.
source tests/integration/lib.sh
source tests/integration/coved_lib.sh
source tests/integration/images_lib.sh
NODE=${NODE:-/usr/bin/node}
[ -x "$NODE" ] || { echo "skip: no $NODE"; exit 77; }
[ -d tests/e2b/node_modules/e2b ] || { echo "skip: tests/e2b/node_modules is missing"; exit 77; }
coved_env
KEYB=coved-test-key-b-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf 'alice:%s\nbob:%s\n' "$KEY" "$KEYB" >"$WORK/keys"
ref=$(img_debian) || { not_ok "the Debian image: $ref"; finish; }
PORT=$((20000 + RANDOM % 20000))
coved_start "\"tcp\": \"127.0.0.1:$PORT\"" || { not_ok "coved starts"; finish; }
export E2B_API_URL=http://127.0.0.1:$PORT E2B_SANDBOX_URL=http://127.0.0.1:$PORT
export E2B_API_KEY=$KEY E2B_API_KEY_B=$KEYB
t0=$(date +%s%N)
if out=$(cd tests/e2b && timeout 1200 "$NODE" template.mjs "$ref" e2b-app 2>&1); then
	ok "Template.build and Sandbox.create through the SDK in $((($(date +%s%N) - t0) / 1000000)) ms"
else
	not_ok "template.mjs failed"
fi
sed 's/^/    /' <<<"$out" | tail -n 45
for check in "ok build" "ok Template.exists" "ok sandbox from the template" "ok another tenant"; do
	grep -q "^$check" <<<"$out" && ok "$check" || not_ok "missing: $check"
done
finish
