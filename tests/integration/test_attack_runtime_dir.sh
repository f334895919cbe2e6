#!/usr/bin/env bash
# A runtime directory that another user made first (what anyone can do with
# /tmp/cove-<uid>) is refused in one line naming it, its owner and mode;
# nothing is created in it and no VMM starts.
source tests/integration/lib.sh
cove_env "$WORK/other-rt"
mkdir -m 0700 "$COVE_RUNTIME_DIR"
chown 1234:1234 "$COVE_RUNTIME_DIR"
err=$(timeout 60 $cove run -- true 2>&1 >/dev/null)
rc=$?
if [ $rc != 0 ] && [ "$(echo "$err" | wc -l)" = 1 ] && [[ $err == *"$COVE_RUNTIME_DIR"* ]] &&
	[[ $err == *"uid 1234"* ]] && [[ $err == *"mode 0700"* ]]; then
	ok "refused (status $rc): $err"; else not_ok "status $rc: '$err'"; fi
[ -z "$(ls -A "$COVE_RUNTIME_DIR")" ] && ok "nothing created in it" ||
	not_ok "created: $(ls -A "$COVE_RUNTIME_DIR")"
# The same for a directory of ours that others may write into.
chown 0:0 "$COVE_RUNTIME_DIR"
chmod 0777 "$COVE_RUNTIME_DIR"
err=$(timeout 60 $cove ls 2>&1 >/dev/null)
rc=$?
if [ $rc != 0 ] && [[ $err == *"mode 0777"* ]]; then ok "open to others refused: $err"; else
	not_ok "mode 0777: status $rc, '$err'"; fi
chmod 0700 "$COVE_RUNTIME_DIR"
finish
