// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bufio"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
)

// machine is what RESULTS.md says about where the numbers were measured: they mean little without it.
type machine struct {
	Cores     int     `json:"cores"` // CPUs this process may use, which the benchmarks' GOMAXPROCS follows
	MemoryGiB float64 `json:"memory_gib"`
	CPU       string  `json:"cpu"`
	Kernel    string  `json:"kernel"`
	OS        string  `json:"os"`
	Go        string  `json:"go"`   // of the toolchain that builds and runs the tests
	Load      string  `json:"load"` // /proc/loadavg when the suite started: how idle the machine was
}

func describeMachine() machine {
	m := machine{Cores: runtime.NumCPU(), OS: runtime.GOOS + "/" + runtime.GOARCH}
	m.MemoryGiB = memTotalGiB()
	m.CPU = cpuModel()
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		f := strings.Fields(string(b))
		if len(f) >= 3 {
			m.Load = strings.Join(f[:3], " ")
		}
	}
	if out, err := exec.Command("go", "env", "GOVERSION").Output(); err == nil {
		m.Go = strings.TrimSpace(string(out))
	} else {
		m.Go = runtime.Version()
	}
	return m
}

func memTotalGiB() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
			return float64(int(kb/1024/1024*10+0.5)) / 10
		}
	}
	return 0
}

func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
