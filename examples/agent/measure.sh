#!/bin/sh
# measure.sh — how big the agent is and how much memory it uses.
#
#   examples/agent/measure.sh [agent flags…]      (from anywhere in the repo)
#
# 1. Sizes: cross-builds the agent (CGO_ENABLED=0, GOOS=linux) for arm (GOARM=7),
#    arm64, mipsle and amd64, with and without -ldflags='-s -w', and prints the
#    binaries' sizes in bytes.
# 2. Memory: builds agent and monitor for this machine, makes throwaway TLS
#    credentials (examples/certgen), starts the monitor on 127.0.0.1:$PORT, runs the agent for $DUR seconds sending updates at $HZ Hz
#    and an endless random upload as fast as loopback takes it, and samples the
#    agent's /proc/PID/status every 0.2 s: the largest VmRSS seen and VmHWM
#    (the kernel's peak RSS) at the last sample. Extra arguments go to the
#    agent, e.g. -send-buffer 262144 or -cc cubic.
#
# Environment: DUR (default 10), HZ (200), PORT (44330). SIZES=0 skips step 1.
# AGENT and MONITOR name prebuilt binaries to measure instead of building
# them (to compare two versions back to back). Linux only (/proc).
set -eu
DUR=${DUR:-10}
HZ=${HZ:-200}
PORT=${PORT:-44330}
SIZES=${SIZES:-1}
. "$(dirname "$0")/lib.sh"

if [ "$SIZES" != 0 ]; then
echo "agent binary size, bytes (CGO_ENABLED=0 GOOS=linux, $(go version | cut -d' ' -f3)):"
printf '  %-10s %10s %14s\n' GOARCH default "-s -w"
for t in arm:7 arm64: mipsle: amd64:; do
	arch=${t%%:*} arm=${t#*:}
	env CGO_ENABLED=0 GOOS=linux GOARCH="$arch" GOARM="$arm" go build -o "$tmp/a" ./examples/agent
	env CGO_ENABLED=0 GOOS=linux GOARCH="$arch" GOARM="$arm" go build -ldflags='-s -w' -o "$tmp/b" ./examples/agent
	printf '  %-10s %10d %14d\n' "$arch${arm:+ v$arm}" "$(wc -c <"$tmp/a")" "$(wc -c <"$tmp/b")"
done
echo
fi

start_monitor
"$tmp/agent" -server "127.0.0.1:$PORT" -ca "$c/ca.pem" -cert "$c/agent.pem" -key "$c/agent-key.pem" \
	-rate-hz "$HZ" -upload-bytes 1000000000000 -duration "${DUR}s" -stats 0 "$@" >"$tmp/agent.out" 2>&1 &
agent=$!
maxrss=0 hwm=0 n=0
while kill -0 "$agent" 2>/dev/null; do
	st=$(cat "/proc/$agent/status" 2>/dev/null) || break
	rss=$(echo "$st" | awk '/^VmRSS:/ {print $2}')
	h=$(echo "$st" | awk '/^VmHWM:/ {print $2}')
	[ -n "$rss" ] || break
	[ "$rss" -gt "$maxrss" ] && maxrss=$rss
	hwm=$h
	n=$((n + 1))
	sleep 0.2
done
# The 1 TB upload is meant to outlast -duration: the agent then exits 1
# with "upload incomplete", which is this run's normal end.
wait "$agent" || grep -q "upload incomplete" "$tmp/agent.out" || { echo "agent failed:"; cat "$tmp/agent.out"; exit 1; }
echo "agent memory over ${DUR}s (updates at $HZ Hz + upload through a local monitor${*:+, flags: $*}):"
echo "  largest VmRSS sampled: $maxrss kB ($n samples); VmHWM: $hwm kB"
echo "  $(tail -n 1 "$tmp/agent.out")"
