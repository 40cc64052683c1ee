// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// unixSocket is a listener's claim on its socket path. Another collector on the same path must neither take
// the socket over while this one serves it nor lose its own to this one's shutdown, while the socket a
// crashed collector left behind must not stop the next one from starting:
//   - the claim is a lock (flock) on path+".lock", which the kernel releases when its holder dies, so two
//     collectors started at once cannot both believe the path is free;
//   - a socket at the path that still accepts connections belongs to a process that does not take the lock
//     (another program, or an older collector): it is not replaced either;
//   - the socket is removed at shutdown only if the path still names the file this listener created.
type unixSocket struct {
	path string
	lock *os.File
	// file identifies the socket this listener created.
	file os.FileInfo
}

// listenUnix claims cfg's path and listens there with socket_mode.
func listenUnix(cfg *NDJSONConfig) (net.Listener, *unixSocket, error) {
	mode, err := cfg.socketMode()
	if err != nil {
		return nil, nil, err
	}
	path := cfg.Endpoint
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, nil, err
	}
	s := &unixSocket{path: path}
	if s.lock, err = lockSocketPath(path); err != nil {
		return nil, nil, err
	}
	ln, err := s.listen(mode)
	if err != nil {
		s.release()
		return nil, nil, err
	}
	return ln, s, nil
}

func (s *unixSocket) listen(mode os.FileMode) (net.Listener, error) {
	if st, err := os.Lstat(s.path); err == nil {
		if st.Mode()&os.ModeSocket == 0 {
			return nil, fmt.Errorf("%s exists and is not a socket", s.path)
		}
		if err := probeSocket(s.path); err != nil {
			return nil, err
		}
	}
	// The socket is bound in a directory of mode 0700 next to the path, given socket_mode there, and then
	// renamed onto the path: it never exists where others can reach it with the mode bind gives it (from the
	// process-wide umask, which cannot be changed safely while other goroutines create files). The rename
	// also replaces a stale socket in one step.
	dir, err := os.MkdirTemp(filepath.Dir(s.path), ".sock")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	tmp := filepath.Join(dir, "s")
	ln, err := net.Listen("unix", tmp)
	if err != nil {
		return nil, fmt.Errorf("%w (the socket is created as %s first: a shorter path may be needed)", err, tmp)
	}
	ul := ln.(*net.UnixListener)
	// The listener must not unlink by the temporary name, nor, later, a path that may not be its own anymore.
	ul.SetUnlinkOnClose(false)
	if err = os.Chmod(tmp, mode); err == nil {
		if s.file, err = os.Lstat(tmp); err == nil {
			err = os.Rename(tmp, s.path)
		}
	}
	if err != nil {
		ln.Close()
		return nil, err
	}
	return ln, nil
}

// probeSocket answers nil when nobody accepts connections on the socket at path: it is stale.
func probeSocket(path string) error {
	c, err := net.DialTimeout("unix", path, time.Second)
	switch {
	case err == nil:
		c.Close()
		return fmt.Errorf("a live listener answers on %s: another process serves it", path)
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, os.ErrNotExist):
		return nil
	}
	return fmt.Errorf("cannot tell whether another process serves %s: %w", path, err)
}

// release removes the socket if the path still names it, and gives up the claim.
func (s *unixSocket) release() {
	if s.file != nil {
		if st, err := os.Lstat(s.path); err == nil && os.SameFile(st, s.file) {
			_ = os.Remove(s.path)
		}
	}
	unlockPath(s.lock)
}

// lockSocketPath creates and locks the lock file of the socket at sock, or says who holds it.
func lockSocketPath(sock string) (*os.File, error) {
	path := sock + ".lock"
	for range 10 {
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600) //nolint:gosec // G304: next to the configured socket
		if err != nil {
			return nil, err
		}
		if err := flock(f); err != nil {
			f.Close()
			if errors.Is(err, errLocked) {
				return nil, fmt.Errorf("%s is in use: another collector holds %s", sock, path)
			}
			return nil, fmt.Errorf("locking %s: %w", path, err)
		}
		// The previous holder removes the file before it unlocks it: a lock taken on a file no longer at the
		// path is no claim, and is tried again on the file there now.
		fst, err1 := f.Stat()
		pst, err2 := os.Stat(path)
		if err1 == nil && err2 == nil && os.SameFile(fst, pst) {
			return f, nil
		}
		f.Close()
	}
	return nil, fmt.Errorf("locking %s: the file keeps being replaced", path)
}

// unlockPath removes the lock file and then unlocks it (see lockSocketPath).
func unlockPath(f *os.File) {
	if f == nil {
		return
	}
	if fst, err := f.Stat(); err == nil {
		if pst, err := os.Stat(f.Name()); err == nil && os.SameFile(fst, pst) {
			_ = os.Remove(f.Name())
		}
	}
	f.Close()
}
