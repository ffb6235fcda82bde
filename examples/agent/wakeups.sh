#!/bin/sh
# wakeups.sh — how often the agent wakes up at a low reading rate, beside
# the floor a Go process reaches for the same job.
#
#   examples/agent/wakeups.sh [agent flags…]      (from anywhere in the repo)
#
# Builds the agent, the monitor and examples/internal/udpbaseline (one
# small UDP datagram per reading, echoed back in the same process: a Go
# runtime, a ticker and two blocking reads), makes throwaway TLS
# credentials, starts the monitor on 127.0.0.1:$PORT and runs the agent at
# $HZ readings a second with no upload. After $WARM s it sums the context
# switches of all the agent's threads (voluntary and involuntary, from
# /proc/PID/task/*/status), again $DUR s later, and prints the difference
# per second: each is a thread that went to sleep or was preempted, so it
# counts the process's wake-ups. The baseline is measured the same way
# right after. On a battery-powered device wake-ups are what keep the CPU
# out of its idle states. Run it on a quiet machine: other load adds
# involuntary switches to both.
#
# Environment: HZ (default 1), DUR (20), WARM (3), PORT (44331), RUNS (2).
# AGENT and MONITOR name prebuilt binaries to measure instead (to compare
# two versions back to back). Linux only (/proc).
set -eu
HZ=${HZ:-1}
DUR=${DUR:-20}
WARM=${WARM:-3}
PORT=${PORT:-44331}
RUNS=${RUNS:-2}
. "$(dirname "$0")/lib.sh"
go build -o "$tmp/baseline" ./examples/internal/udpbaseline
start_monitor

# switches PID: context switches of all of PID's threads so far.
switches() {
	cat /proc/"$1"/task/*/status 2>/dev/null |
		awk '/^(non)?voluntary_ctxt_switches:/ {n += $2} END {print n + 0}'
}

# measure PID NAME OUT: switches per second over DUR s after WARM s; OUT
# is the process's output, shown if it ends first.
measure() {
	sleep "$WARM"
	kill -0 "$1" 2>/dev/null || { echo "$2 exited during the warm-up:"; cat "$3"; exit 1; }
	a=$(switches "$1")
	sleep "$DUR"
	b=$(switches "$1")
	kill -0 "$1" 2>/dev/null || { echo "$2 exited before the measurement ended:"; cat "$3"; exit 1; }
	awk -v a="$a" -v b="$b" -v d="$DUR" -v n="$2" -v t="$(ls /proc/"$1"/task | wc -l)" \
		'BEGIN {printf "  %-9s %6.1f wake-ups/s (%d context switches in %d s, %d threads)\n", n, (b - a) / d, b - a, d, t}'
}

total=$((WARM + DUR + 2))
echo "wake-ups at $HZ reading(s)/s over ${DUR}s (all threads' context switches)${*:+, agent flags: $*}:"
i=1
while [ "$i" -le "$RUNS" ]; do
	"$tmp/agent" -server "127.0.0.1:$PORT" -ca "$c/ca.pem" -cert "$c/agent.pem" -key "$c/agent-key.pem" \
		-rate-hz "$HZ" -duration "${total}s" -stats 0 "$@" >"$tmp/agent.out" 2>&1 &
	agent=$!
	measure "$agent" agent "$tmp/agent.out"
	wait "$agent" || { echo "agent failed:"; cat "$tmp/agent.out"; exit 1; }
	"$tmp/baseline" -rate-hz "$HZ" -duration "${total}s" >"$tmp/baseline.out" 2>&1 &
	base=$!
	measure "$base" baseline "$tmp/baseline.out"
	wait "$base" || { echo "baseline failed:"; cat "$tmp/baseline.out"; exit 1; }
	i=$((i + 1))
done
