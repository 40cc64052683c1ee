// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package durablefileexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/durablefileexporter"

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"
)

// lineFile appends whole lines to a file. A failed write is cut back off the file, so that a retry of the same
// batch never leaves a torn line in front of the complete one.
type lineFile struct {
	path     string
	mode     os.FileMode
	sync     bool
	rotation RotationConfig
	logger   *zap.Logger

	mu sync.Mutex
	f  *os.File
	// info identifies the open file, to notice when its path no longer leads to it.
	info os.FileInfo
	// regular is false for devices such as /dev/null, which are never synced, truncated or rotated.
	regular bool
	size    int64
}

func openLineFile(path string, mode os.FileMode, sync bool, rotation RotationConfig, logger *zap.Logger) (*lineFile, error) {
	lf := &lineFile{path: path, mode: mode, sync: sync, rotation: rotation, logger: logger}
	if err := lf.open(); err != nil {
		return nil, err
	}
	return lf, nil
}

// open opens the path for appending, creating it and its directory when missing.
func (lf *lineFile) open() error {
	if err := os.MkdirAll(filepath.Dir(lf.path), 0o750); err != nil {
		return fmt.Errorf("creating the directory of %s: %w", lf.path, err)
	}
	f, err := os.OpenFile(lf.path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, lf.mode)
	if err != nil {
		return fmt.Errorf("opening %s: %w", lf.path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("stat %s: %w", lf.path, err)
	}
	lf.f, lf.info, lf.regular, lf.size = f, st, st.Mode().IsRegular(), st.Size()
	return nil
}

// gone says the path no longer leads to the open file: someone removed or renamed the file or its directory,
// or the path cannot be followed at all. Writes to the open file would still succeed, into a file no one reads
// any more (or one that is deleted once closed), and acknowledge batches that are then lost. Reopening either
// finds the path again or fails with an error the batch is retried on.
func (lf *lineFile) gone() bool {
	st, err := os.Stat(lf.path)
	return err != nil || !os.SameFile(st, lf.info)
}

func (lf *lineFile) writeLine(line []byte) error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.f != nil && lf.regular && lf.gone() {
		lf.logger.Warn("The output file was removed, replaced or cannot be reached; writing to a new one at its path", zap.String("path", lf.path))
		_ = lf.f.Close() // what it holds is no longer reachable under the path
		lf.f = nil
	}
	if lf.f == nil {
		// A previous rotation failed to reopen the file, or the file is gone: try again rather than failing forever.
		if err := lf.open(); err != nil {
			return err
		}
	}
	n, err := lf.f.Write(append(line, '\n'))
	if err == nil && lf.sync && lf.regular {
		err = lf.f.Sync()
	}
	if err != nil {
		if lf.regular && n > 0 {
			if terr := lf.f.Truncate(lf.size); terr != nil {
				err = errors.Join(err, fmt.Errorf("cutting the torn line off %s: %w", lf.path, terr))
			}
		}
		return fmt.Errorf("writing %s: %w", lf.path, err)
	}
	lf.size += int64(n)
	if lf.regular && lf.rotation.MaxMegabytes > 0 && lf.size >= int64(lf.rotation.MaxMegabytes)<<20 {
		// The batch is on disk: a failed rotation is logged, not returned, or the batch would be written twice.
		if err := lf.rotate(); err != nil {
			lf.logger.Error("Rotating the output file failed", zap.String("path", lf.path), zap.Error(err))
		}
	}
	return nil
}

// rotate renames the full file to <name>-<UTC time><ext> and removes the oldest rotated files beyond MaxBackups.
func (lf *lineFile) rotate() error {
	if err := lf.f.Close(); err != nil {
		return err
	}
	lf.f = nil
	ext := filepath.Ext(lf.path)
	base := strings.TrimSuffix(lf.path, ext)
	rotated := base + "-" + time.Now().UTC().Format("20060102T150405.000000000") + ext
	if err := os.Rename(lf.path, rotated); err != nil {
		return err
	}
	if err := lf.open(); err != nil {
		return err
	}
	if lf.rotation.MaxBackups == 0 {
		return nil
	}
	backups, err := filepath.Glob(globEscape(base) + "-*" + globEscape(ext))
	if err != nil {
		return err
	}
	// The timestamp format sorts lexically in time order.
	slices.Sort(backups)
	var errs []error
	for len(backups) > lf.rotation.MaxBackups {
		errs = append(errs, os.Remove(backups[0]))
		backups = backups[1:]
	}
	return errors.Join(errs...)
}

func globEscape(s string) string {
	return strings.NewReplacer(`*`, `\*`, `?`, `\?`, `[`, `\[`, `\`, `\\`).Replace(s)
}

func (lf *lineFile) close() error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.f == nil {
		return nil
	}
	err := lf.f.Close()
	lf.f = nil
	return err
}
