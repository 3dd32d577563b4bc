# hogs.sh: busy loops beside a loss benchmark, sourced by demo_loss.sh,
# loaded_loss.sh and echo_loss.sh: `hogs_start N` runs N of them until the
# script exits.
hogs_pids=()
hogs_stop() { for p in "${hogs_pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
hogs_start() {
	trap hogs_stop EXIT
	for ((i = 0; i < $1; i++)); do
		(while :; do :; done) &
		hogs_pids+=($!)
	done
}
