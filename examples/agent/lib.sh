# lib.sh — sourced by measure.sh and wakeups.sh, not run: from the
# repository's root, a scratch directory $tmp removed on exit, and
# start_monitor, which builds the agent and the monitor into $tmp (or
# copies the prebuilt $AGENT and $MONITOR), makes throwaway TLS
# credentials in $c, and starts the monitor on 127.0.0.1:$PORT. The agent
# runs as deployed, over TLS with its own certificate (mutual TLS).
cd "$(dirname "$0")/../.."
tmp=$(mktemp -d)
mon=
cleanup() {
	if [ -n "$mon" ]; then kill "$mon" 2>/dev/null || true; wait "$mon" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

start_monitor() {
	if [ -n "${AGENT:-}" ]; then cp "$AGENT" "$tmp/agent"; else go build -o "$tmp/agent" ./examples/agent; fi
	if [ -n "${MONITOR:-}" ]; then cp "$MONITOR" "$tmp/monitor"; else go build -o "$tmp/monitor" ./examples/monitor; fi
	go run ./examples/certgen -dir "$tmp/certs" >/dev/null
	c=$tmp/certs
	"$tmp/monitor" -listen "127.0.0.1:$PORT" -stats 0 -cert "$c/monitor.pem" -key "$c/monitor-key.pem" -ca "$c/ca.pem" >"$tmp/monitor.out" 2>&1 &
	mon=$!
	sleep 0.5
}
