package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// describeMachine says what loopbench runs on; fields it cannot read
// (not Linux) stay empty.
func describeMachine() Machine {
	m := Machine{
		NumCPU:     runtime.NumCPU(),
		GoVersion:  runtime.Version(),
		Load1Start: load1(),
	}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
		f.Close()
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = string(bytes.TrimSpace(b))
	}
	return m
}

// load1 is the 1-minute load average from /proc/loadavg, 0 if unreadable.
func load1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	f, _ := strconv.ParseFloat(strings.Fields(string(b) + " 0")[0], 64)
	return f
}

// userHZ is the unit of /proc/stat's CPU times: ticks per second (USER_HZ,
// 100 on every Linux architecture Go supports).
const userHZ = 100

// machineBusy is the CPU time every CPU of the machine has spent busy since
// boot, from the "cpu" line of /proc/stat: user, nice, system, irq, softirq
// and steal (guest time is already inside user). 10 ms resolution.
func machineBusy() (time.Duration, error) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	if len(f) < 9 || f[0] != "cpu" {
		return 0, fmt.Errorf("/proc/stat: unexpected first line %q", line)
	}
	var ticks int64
	for _, i := range []int{1, 2, 3, 6, 7, 8} { // user nice system irq softirq steal
		v, err := strconv.ParseInt(f[i], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/stat: %w", err)
		}
		ticks += v
	}
	return time.Duration(ticks) * time.Second / userHZ, nil
}
