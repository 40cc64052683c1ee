// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package durablefileexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/durablefileexporter"

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Config of the durable_file exporter.
type Config struct {
	// Path of the file written; its directory is created when missing.
	Path string `mapstructure:"path"`
	// FilePermissions are the octal permissions of files this exporter creates. Policy results name workloads
	// and findings, so the default keeps them from other users.
	FilePermissions string `mapstructure:"file_permissions"`
	// Sync calls fsync after every batch before acknowledging it. Without it a power loss can lose batches the
	// queue already removed; a process crash cannot.
	Sync bool `mapstructure:"sync"`
	// Rotation bounds the disk used: the file is rotated past MaxMegabytes, and only MaxBackups rotated files
	// are kept. MaxMegabytes 0 disables rotation.
	Rotation RotationConfig `mapstructure:"rotation"`

	TimeoutConfig exporterhelper.TimeoutConfig                             `mapstructure:",squash"`
	QueueConfig   configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	RetryConfig   configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
}

// RotationConfig bounds the files an exporter keeps.
type RotationConfig struct {
	MaxMegabytes int `mapstructure:"max_megabytes"`
	MaxBackups   int `mapstructure:"max_backups"`
}

// Validate checks the configuration before the collector starts.
func (c *Config) Validate() error {
	var errs []error
	if c.Path == "" {
		errs = append(errs, errors.New("path must be set"))
	}
	if _, err := c.fileMode(); err != nil {
		errs = append(errs, err)
	}
	if c.Rotation.MaxMegabytes < 0 {
		errs = append(errs, fmt.Errorf("rotation::max_megabytes must not be negative, got %d", c.Rotation.MaxMegabytes))
	}
	if c.Rotation.MaxBackups < 0 {
		errs = append(errs, fmt.Errorf("rotation::max_backups must not be negative, got %d", c.Rotation.MaxBackups))
	}
	return errors.Join(errs...)
}

func (c *Config) fileMode() (os.FileMode, error) {
	m, err := strconv.ParseUint(c.FilePermissions, 8, 32)
	if err != nil || m&^uint64(os.ModePerm) != 0 {
		return 0, fmt.Errorf("file_permissions must be octal permission bits such as \"0640\", got %q", c.FilePermissions)
	}
	return os.FileMode(m), nil
}
