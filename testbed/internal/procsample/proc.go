// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package procsample

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Memory is what /proc/<pid>/status says about a process's resident memory, in MB (MiB, as the kernel's kB
// are KiB).
type Memory struct {
	RSS float64 // VmRSS: resident now
	HWM float64 // VmHWM: the process's peak resident memory, which the kernel tracks between our samples
}

// ReadMemory reads them; it fails when the process is gone (its /proc entry no longer exists).
func ReadMemory(pid int) (Memory, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return Memory{}, err
	}
	defer f.Close()
	var m Memory
	var seen int
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok || (k != "VmRSS" && k != "VmHWM") {
			continue
		}
		kb, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		if err != nil {
			return Memory{}, fmt.Errorf("/proc/%d/status: %s: %w", pid, k, err)
		}
		if k == "VmRSS" {
			m.RSS = kb / 1024
		} else {
			m.HWM = kb / 1024
		}
		seen++
	}
	if err := sc.Err(); err != nil {
		return Memory{}, err
	}
	if seen < 2 {
		// A zombie has no memory lines any more: it is as good as gone.
		return Memory{}, fmt.Errorf("/proc/%d/status has no VmRSS/VmHWM", pid)
	}
	return m, nil
}

// ResetPeak starts a new peak: the kernel sets VmHWM back to the current resident memory (clear_refs value 5),
// so that one process can be measured attack by attack.
func ResetPeak(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}
