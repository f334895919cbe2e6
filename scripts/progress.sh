# progress.sh: sourced by long build steps (scripts/build-kernel,
# rootfs/build-debian) so a person sees them move.
#
# progress_run LOG STATUS_FN CMD...: runs CMD with its output appended to
# LOG, and every PROGRESS_SECS seconds (default 20) prints what STATUS_FN
# (a shell function, called with LOG) says, prefixed with $prog and the
# seconds so far.  Returns CMD's status.
progress_run() {
	local log=$1 status_fn=$2 pid t0=$SECONDS i
	shift 2
	"$@" >>"$log" 2>&1 &
	pid=$!
	while kill -0 "$pid" 2>/dev/null; do
		for ((i = 0; i < ${PROGRESS_SECS:-20} * 2; i++)); do
			kill -0 "$pid" 2>/dev/null || break 2
			sleep 0.5
		done
		echo "${prog:-build}: $("$status_fn" "$log"), $((SECONDS - t0)) s"
	done
	wait "$pid"
}
