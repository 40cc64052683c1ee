package procsample

import (
	"os"
	"runtime"
	"runtime/debug"
	"testing"
)

func TestResetPeak(t *testing.T) {
	buf := make([]byte, 128<<20)
	for i := range buf {
		buf[i] = 1
	}
	before, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(buf)
	buf = nil
	runtime.GC()
	debug.FreeOSMemory()
	if err := ResetPeak(os.Getpid()); err != nil {
		t.Fatal(err)
	}
	after, err := ReadMemory(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if after.HWM > before.HWM-64 {
		t.Fatalf("peak %.0f MB after the reset, %.0f MB before: the 128 MB buffer is still counted", after.HWM, before.HWM)
	}
}
