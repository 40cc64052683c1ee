// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

//go:build unix

package gatekeeperexport // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/gatekeeperexport"

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// OpenFile opens a file of the export directory for reading. The directory is shared with Gatekeeper and
// whatever else may write there, and a name listed as a regular file may since have been replaced: a symlink
// is refused (O_NOFOLLOW), and so is anything but a regular file, found by fstat on the descriptor opened, so
// that no rename can come between the check and the read. O_NONBLOCK keeps the open of a FIFO from waiting for
// a writer forever; it is cleared once the file is known to be regular.
func OpenFile(path string) (*os.File, error) {
	var fd int
	var err error
	for {
		fd, err = syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	switch {
	case errors.Is(err, syscall.ELOOP):
		return nil, fmt.Errorf("%s: %w: a symbolic link", path, ErrNotRegular)
	case err != nil:
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		_ = syscall.Close(fd)
		return nil, &fs.PathError{Op: "fstat", Path: path, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		_ = syscall.Close(fd)
		return nil, fmt.Errorf("%s: %w: %s", path, ErrNotRegular, fileType(st.Mode))
	}
	if err := syscall.SetNonblock(fd, false); err != nil {
		_ = syscall.Close(fd)
		return nil, &fs.PathError{Op: "fcntl", Path: path, Err: err}
	}
	return os.NewFile(uintptr(fd), path), nil
}

// fileType names a file type of stat(2); its mode is uint16 on some systems, uint32 on others.
func fileType[M uint16 | uint32](mode M) string {
	switch mode & syscall.S_IFMT {
	case syscall.S_IFIFO:
		return "a FIFO"
	case syscall.S_IFDIR:
		return "a directory"
	case syscall.S_IFCHR:
		return "a character device"
	case syscall.S_IFBLK:
		return "a block device"
	case syscall.S_IFSOCK:
		return "a socket"
	}
	return fmt.Sprintf("file type %#o", mode&syscall.S_IFMT)
}

// Inode tells a file from another one of the same name and size.
func Inode(fi os.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Ino
	}
	return 0
}
