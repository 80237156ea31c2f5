package process

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// What the benchmarks read of a process and of the machine in /proc.

// userHZ is the unit of the CPU times in /proc/<pid>/stat: USER_HZ, 100 on
// every architecture Linux runs Go on (`getconf CLK_TCK`).
const userHZ = 100

// PID is the process's ID.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// CPUSeconds returns the CPU time process pid has used so far, user and
// system (/proc/<pid>/stat).
func CPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	// The command name, in parentheses, may hold spaces: the fields follow its last ')'.
	i := strings.LastIndexByte(string(data), ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: no command name in %q", pid, data)
	}
	fields := strings.Fields(string(data[i+1:]))
	// utime and stime are fields 14 and 15 of the line, 12 and 13 after the command name.
	if len(fields) < 13 {
		return 0, fmt.Errorf("/proc/%d/stat: %d fields after the command name, want at least 13", pid, len(fields))
	}
	var ticks float64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc/%d/stat: CPU time %q: %w", pid, f, err)
		}
		ticks += float64(n)
	}
	return ticks / userHZ, nil
}

// Memory returns the resident set size of process pid now and at its peak
// (VmRSS, VmHWM of /proc/<pid>/status), in bytes.
func Memory(pid int) (rss, peak int64, err error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, 0, err
	}
	defer f.Close()
	lines := bufio.NewScanner(f)
	for lines.Scan() {
		name, value, _ := strings.Cut(lines.Text(), ":")
		kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(value), " kB"), 10, 64)
		switch name {
		case "VmRSS":
			rss = kb << 10
		case "VmHWM":
			peak = kb << 10
		}
	}
	if peak == 0 {
		return 0, 0, errors.New("no VmHWM in /proc/<pid>/status")
	}
	return rss, peak, lines.Err()
}

// LoadAverage returns the machine's 1-minute load average (/proc/loadavg).
func LoadAverage() (float64, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	var l float64
	_, err = fmt.Sscan(string(data), &l)
	return l, err
}
