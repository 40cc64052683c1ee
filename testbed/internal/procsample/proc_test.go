// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package procsample

import (
	"os"
	"syscall"
	"testing"
)

func TestResetPeak(t *testing.T) {
	// 128 MB resident and released again, outside the Go heap, so that the runtime keeps none of it: the peak
	// is then at least 128 MB above what is resident.
	const size = 128 << 20
	b, err := syscall.Mmap(-1, 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(b); i += os.Getpagesize() {
		b[i] = 1
	}
	if err := syscall.Munmap(b); err != nil {
		t.Fatal(err)
	}
	before, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if before.HWM < before.RSS+120 {
		t.Fatalf("peak %.0f MB, resident %.0f MB: the released 128 MB are not in the peak", before.HWM, before.RSS)
	}
	if err := ResetPeak(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	after, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after.HWM > after.RSS+16 {
		t.Fatalf("peak %.0f MB after the reset, resident %.0f MB: the peak was not reset", after.HWM, after.RSS)
	}
}
