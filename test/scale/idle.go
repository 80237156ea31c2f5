package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100 on
// every architecture Linux runs Go on (`getconf CLK_TCK`).
const userHZ = 100

// idle measures what the agent costs once nothing changes (issue #27: at most
// 1% of a core over an hour, full resyncs included): after the quiet rounds,
// the CPU time (user and system, /proc/<pid>/stat) it spends during IdleWindow,
// scaled to an hour. Run with a --full-resync-period shorter than the window,
// the figure includes several full resyncs, and is an upper bound of the
// default period's (more resyncs per hour).
func (b *bench) idle(ctx context.Context) error {
	start, err := b.e.cpuSeconds()
	if err != nil {
		return err
	}
	began := time.Now()
	if err := sleep(ctx, b.o.IdleWindow); err != nil {
		return err
	}
	end, err := b.e.cpuSeconds()
	if err != nil {
		return err
	}
	window := time.Since(began).Seconds()
	r := b.res
	r.IdleWindowSeconds, r.IdleCPUSeconds = window, end-start
	r.IdleCPUSecondsPerHour = r.IdleCPUSeconds / window * 3600
	return nil
}

// cpuSeconds returns the CPU time the agent has used so far, user and system.
func (e *env) cpuSeconds() (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", e.agent.PID()))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: the fields follow its last ')'.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/<pid>/stat of the agent: no command name in %q", data)
	}
	fields := strings.Fields(string(data[i+1:]))
	// utime and stime are fields 14 and 15 of the line, 12 and 13 after the command name.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/<pid>/stat of the agent: %d fields after the command name, want at least 13", len(fields))
	}
	var ticks float64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/<pid>/stat of the agent: CPU time %q: %w", f, err)
		}
		ticks += float64(n)
	}
	return ticks / userHZ, nil
}
