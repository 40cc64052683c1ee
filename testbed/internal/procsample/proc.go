package procsample

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// memory is what /proc/<pid>/status says about a process's resident memory, in MB (MiB, as the kernel's kB
// are KiB).
type memory struct {
	RSS float64 // VmRSS: resident now
	HWM float64 // VmHWM: the process's peak resident memory, which the kernel tracks between our samples
}

// readMemory fails when the process is gone (its /proc entry no longer exists).
func readMemory(pid int) (memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	defer f.Close()
	var m memory
	var seen int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			return memory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, k, err)
		}
		if k == "VmRSS" {
			m.RSS = kb / 1024
		} else {
			m.HWM = kb / 1024
		}
		seen++
	}
	if err := sc.Err(); err != nil {
		return memory{}, err
	}
	if seen < 2 {
		// A zombie has no memory lines any more: it is as good as gone.
		return memory{}, fmt.Errorf("/proc/%d/status has no VmRSS/VmHWM", pid)
	}
	return m, nil
}
