// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap"

	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"
)

// Formats of NDJSON streams.
const (
	FormatAuto       = "auto"
	FormatOPA        = "opa"
	FormatGatekeeper = "gatekeeper"
	FormatGeneric    = "generic"
)

// GenericMapping names, as dot-separated paths into each JSON object, where the decision fields are; the
// generic decoder it configures lives with the other decoders.
type GenericMapping = decode.GenericMapping

// Config of the decision_logs receiver.
type Config struct {
	// NDJSON lists stream listeners: one JSON event per line over a Unix socket or TCP.
	NDJSON []NDJSONConfig `mapstructure:"ndjson"`
	// OPA is the HTTP endpoint OPA's decision_logs plugin uploads to.
	OPA configoptional.Optional[OPAConfig] `mapstructure:"opa"`
	// Generic maps the fields of listeners with format "generic".
	Generic GenericMapping `mapstructure:"generic"`
	// GatekeeperExport reads the files of Gatekeeper's disk export driver.
	GatekeeperExport configoptional.Optional[GatekeeperExportConfig] `mapstructure:"gatekeeper_export"`
	// Storage is the storage extension in which gatekeeper_export remembers what the pipeline accepted, so that
	// a restarted collector neither loses nor re-sends export files.
	Storage *component.ID `mapstructure:"storage"`

	// ClusterName becomes the resource attribute k8s.cluster.name.
	ClusterName string `mapstructure:"cluster_name"`
	// IncludeInput puts the event's input (the AdmissionReview or query input) in the record body. It is
	// large and may hold secrets, so it is off by default.
	IncludeInput bool `mapstructure:"include_input"`
	// MaxInputBytes drops inputs larger than this from records that include inputs.
	MaxInputBytes int `mapstructure:"max_input_bytes"`
	// MaxBatchRecords bounds the records of one ConsumeLogs call.
	MaxBatchRecords int `mapstructure:"max_batch_records"`
	// MaxBatchBytes bounds the estimated memory of the records of one ConsumeLogs call (and, on streams, of the
	// lines they hold); an event that alone would exceed it is rejected.
	MaxBatchBytes int `mapstructure:"max_batch_bytes"`
	// MaxConcurrentBatches bounds the batches built and handed to the pipeline at once, over all listeners.
	MaxConcurrentBatches int `mapstructure:"max_concurrent_batches"`
	// MaxObjectMembers bounds the members of any object in a record's body: building a map takes time
	// quadratic in its members.
	MaxObjectMembers int `mapstructure:"max_object_members"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// NDJSONConfig is one stream listener.
type NDJSONConfig struct {
	// Transport is unix or tcp.
	Transport string `mapstructure:"transport"`
	// Endpoint is a socket path (unix) or host:port (tcp).
	Endpoint string `mapstructure:"endpoint"`
	// SocketMode is the octal file mode of a Unix socket, so that only the intended peers can connect.
	SocketMode string `mapstructure:"socket_mode"`
	// Format of the events: auto, opa, gatekeeper or generic.
	Format string `mapstructure:"format"`
	// MaxLineBytes bounds one line; longer lines are skipped and counted.
	MaxLineBytes int `mapstructure:"max_line_bytes"`
	// MaxConnections bounds the open connections; more are closed as they come.
	MaxConnections int `mapstructure:"max_connections"`
	// LineTimeout bounds the time from a line's first byte to its newline.
	LineTimeout time.Duration `mapstructure:"line_timeout"`
	// IdleTimeout closes a connection that sent nothing for this long between lines.
	IdleTimeout time.Duration `mapstructure:"idle_timeout"`
	// HandshakeTimeout bounds the TLS handshake of a tcp listener with tls.
	HandshakeTimeout time.Duration `mapstructure:"handshake_timeout"`
	// FirstLineTimeout closes a connection that has not sent a complete line this long after it was accepted.
	FirstLineTimeout time.Duration `mapstructure:"first_line_timeout"`
	// MaxSilentConnectionsPerSource bounds the connections of one remote IP (tcp) that have not sent a complete
	// line yet; one more takes the place of that IP's oldest.
	MaxSilentConnectionsPerSource int `mapstructure:"max_silent_connections_per_source"`
	// TLS secures a tcp listener.
	TLS configoptional.Optional[configtls.ServerConfig] `mapstructure:"tls"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// GatekeeperExportConfig reads the directory of a Gatekeeper Connection with driver disk.
type GatekeeperExportConfig struct {
	// Path is the Connection's spec.config.path; every channel directory below it is read.
	Path string `mapstructure:"path"`
	// PollInterval is how often the directories are listed for completed files.
	PollInterval time.Duration `mapstructure:"poll_interval"`
	// AuditChanges emits, of each audit run, only the violations that are new or changed since the previous
	// run, and a resolved record for each that disappeared.
	AuditChanges bool `mapstructure:"audit_changes"`
	// MaxLineBytes bounds one line; longer lines are skipped and counted.
	MaxLineBytes int `mapstructure:"max_line_bytes"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// OPAConfig is the HTTP endpoint for OPA's decision_logs plugin.
type OPAConfig struct {
	ServerConfig confighttp.ServerConfig `mapstructure:",squash"`
	// Path is where OPA posts; OPA's default resource is /logs.
	Path string `mapstructure:"path"`
	// MaxEventsPerRequest bounds the events of one upload.
	MaxEventsPerRequest int `mapstructure:"max_events_per_request"`
	// MaxConcurrentRequests bounds the memory of the upload bodies read and decoded at once to this many bodies of
	// max_request_body_size.
	MaxConcurrentRequests int `mapstructure:"max_concurrent_requests"`
	// MaxConnections bounds the connections held at once, idle keep-alive ones included. One more takes the place
	// of a silent one (no request through to the endpoint yet, authenticated when auth is set) if there is one,
	// else it is closed as it comes.
	MaxConnections int `mapstructure:"max_connections"`
	// FirstRequestTimeout closes a connection that has not had a request through to the endpoint this long after
	// it was accepted.
	FirstRequestTimeout time.Duration `mapstructure:"first_request_timeout"`
	// MaxSilentConnectionsPerSource bounds the silent connections of one remote IP; one more takes the place of
	// that IP's oldest.
	MaxSilentConnectionsPerSource int `mapstructure:"max_silent_connections_per_source"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Unmarshal fills each listener's unset keys with their defaults, since list entries get none of their own.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	if err := conf.Unmarshal(c); err != nil {
		return err
	}
	for i := range c.NDJSON {
		c.NDJSON[i].setDefaults()
	}
	return nil
}

// withDefaults is the configuration the receiver runs: every limit left unset (zero), as in configurations
// built in code, has its default, so that no listener runs without one.
func (c *Config) withDefaults() *Config {
	cp := *c
	cp.NDJSON = slices.Clone(c.NDJSON)
	for i := range cp.NDJSON {
		cp.NDJSON[i].setDefaults()
	}
	if o := c.OPA.Get(); o != nil {
		oc := *o
		oc.setDefaults()
		cp.OPA = configoptional.Some(oc)
	}
	if g := c.GatekeeperExport.Get(); g != nil {
		gc := *g
		d := defaultGatekeeperExport()
		setDefault(&gc.PollInterval, d.PollInterval)
		setDefault(&gc.MaxLineBytes, d.MaxLineBytes)
		cp.GatekeeperExport = configoptional.Some(gc)
	}
	d := createDefaultConfig().(*Config)
	setDefault(&cp.MaxBatchBytes, d.MaxBatchBytes)
	setDefault(&cp.MaxConcurrentBatches, d.MaxConcurrentBatches)
	setDefault(&cp.MaxObjectMembers, d.MaxObjectMembers)
	return &cp
}

func (c *NDJSONConfig) setDefaults() {
	d := defaultNDJSON()
	setDefault(&c.Transport, d.Transport)
	setDefault(&c.SocketMode, d.SocketMode)
	setDefault(&c.Format, d.Format)
	setDefault(&c.MaxLineBytes, d.MaxLineBytes)
	setDefault(&c.MaxConnections, d.MaxConnections)
	setDefault(&c.LineTimeout, d.LineTimeout)
	setDefault(&c.IdleTimeout, d.IdleTimeout)
	setDefault(&c.HandshakeTimeout, d.HandshakeTimeout)
	setDefault(&c.FirstLineTimeout, d.FirstLineTimeout)
	setDefault(&c.MaxSilentConnectionsPerSource, d.MaxSilentConnectionsPerSource)
}

func (o *OPAConfig) setDefaults() {
	d := defaultOPA()
	setDefault(&o.MaxEventsPerRequest, d.MaxEventsPerRequest)
	setDefault(&o.MaxConcurrentRequests, d.MaxConcurrentRequests)
	setDefault(&o.MaxConnections, d.MaxConnections)
	setDefault(&o.FirstRequestTimeout, d.FirstRequestTimeout)
	setDefault(&o.MaxSilentConnectionsPerSource, d.MaxSilentConnectionsPerSource)
	setDefault(&o.ServerConfig.MaxRequestBodySize, d.ServerConfig.MaxRequestBodySize)
	setDefault(&o.ServerConfig.ReadTimeout, d.ServerConfig.ReadTimeout)
}

// setDefault gives *v the default d when it is unset.
func setDefault[T comparable](v *T, d T) {
	var zero T
	if *v == zero {
		*v = d
	}
}

func (c *NDJSONConfig) name() string { return c.Transport + ":" + c.Endpoint }

func (c *NDJSONConfig) socketMode() (os.FileMode, error) {
	m, err := strconv.ParseUint(c.SocketMode, 8, 32)
	if err != nil || m&^uint64(os.ModePerm) != 0 {
		return 0, fmt.Errorf("socket_mode must be octal permission bits such as \"0660\", got %q", c.SocketMode)
	}
	return os.FileMode(m), nil
}

// Validate checks the configuration before the collector starts.
func (c *Config) Validate() error {
	var errs []error
	if len(c.NDJSON) == 0 && !c.OPA.HasValue() && !c.GatekeeperExport.HasValue() {
		errs = append(errs, errors.New("configure at least one input: an ndjson listener, the opa endpoint or gatekeeper_export"))
	}
	generic := false
	for i := range c.NDJSON {
		l := &c.NDJSON[i]
		prefix := fmt.Sprintf("ndjson[%d] (%s): ", i, l.name())
		switch l.Transport {
		case "unix":
			if _, err := l.socketMode(); err != nil {
				errs = append(errs, errors.New(prefix+err.Error()))
			}
			if l.TLS.HasValue() {
				errs = append(errs, errors.New(prefix+"tls applies to tcp listeners only"))
			}
		case "tcp":
		default:
			errs = append(errs, fmt.Errorf("%stransport must be unix or tcp, got %q", prefix, l.Transport))
		}
		if l.Endpoint == "" {
			errs = append(errs, errors.New(prefix+"endpoint must be set"))
		}
		switch l.Format {
		case FormatAuto, FormatOPA, FormatGatekeeper:
		case FormatGeneric:
			generic = true
		default:
			errs = append(errs, fmt.Errorf("%sformat must be auto, opa, gatekeeper or generic, got %q", prefix, l.Format))
		}
		if l.MaxLineBytes < 1024 {
			errs = append(errs, fmt.Errorf("%smax_line_bytes must be at least 1024, got %d", prefix, l.MaxLineBytes))
		}
		errs = appendNegative(errs, prefix+"max_connections", l.MaxConnections)
		errs = appendNegative(errs, prefix+"line_timeout", l.LineTimeout)
		errs = appendNegative(errs, prefix+"idle_timeout", l.IdleTimeout)
		errs = appendNegative(errs, prefix+"handshake_timeout", l.HandshakeTimeout)
		errs = appendNegative(errs, prefix+"first_line_timeout", l.FirstLineTimeout)
		errs = appendNegative(errs, prefix+"max_silent_connections_per_source", l.MaxSilentConnectionsPerSource)
	}
	if generic {
		if c.Generic == (GenericMapping{}) {
			errs = append(errs, errors.New("generic: a listener has format generic but no field is mapped"))
		} else if err := c.Generic.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("generic: %w", err))
		}
	}
	if opa := c.OPA.Get(); opa != nil {
		errs = append(errs, opa.validate()...)
	}
	if g := c.GatekeeperExport.Get(); g != nil {
		errs = append(errs, g.validate()...)
	} else if c.Storage != nil {
		errs = append(errs, errors.New("storage is used by gatekeeper_export only, which is not configured"))
	}
	if c.MaxInputBytes < 0 {
		errs = append(errs, fmt.Errorf("max_input_bytes must not be negative, got %d", c.MaxInputBytes))
	}
	if c.MaxBatchRecords <= 0 {
		errs = append(errs, fmt.Errorf("max_batch_records must be positive, got %d", c.MaxBatchRecords))
	}
	// Below this, an ordinary decision (a few KiB as a record) could hardly be delivered.
	if c.MaxBatchBytes != 0 && c.MaxBatchBytes < minBatchBytes {
		errs = append(errs, fmt.Errorf("max_batch_bytes must be at least %d, got %d", minBatchBytes, c.MaxBatchBytes))
	}
	errs = appendNegative(errs, "max_concurrent_batches", c.MaxConcurrentBatches)
	errs = appendNegative(errs, "max_object_members", c.MaxObjectMembers)
	return errors.Join(errs...)
}

const minBatchBytes = 64 << 10

// appendNegative checks a limit for which 0 means its default; there is no value that means "no limit".
func appendNegative[T int | int64 | time.Duration](errs []error, key string, v T) []error {
	if v < 0 {
		return append(errs, fmt.Errorf("%s must not be negative, got %v", key, v))
	}
	return errs
}

func (g *GatekeeperExportConfig) validate() []error {
	var errs []error
	if g.Path == "" {
		errs = append(errs, errors.New("gatekeeper_export::path must be set"))
	}
	errs = appendNegative(errs, "gatekeeper_export::poll_interval", g.PollInterval)
	if g.MaxLineBytes != 0 && g.MaxLineBytes < 1024 {
		errs = append(errs, fmt.Errorf("gatekeeper_export::max_line_bytes must be at least 1024, got %d", g.MaxLineBytes))
	}
	return errs
}

func (o *OPAConfig) validate() []error {
	var errs []error
	if o.Path == "" || o.Path[0] != '/' {
		errs = append(errs, fmt.Errorf("opa::path must start with /, got %q", o.Path))
	}
	errs = appendNegative(errs, "opa::max_events_per_request", o.MaxEventsPerRequest)
	errs = appendNegative(errs, "opa::max_concurrent_requests", o.MaxConcurrentRequests)
	errs = appendNegative(errs, "opa::max_connections", o.MaxConnections)
	errs = appendNegative(errs, "opa::first_request_timeout", o.FirstRequestTimeout)
	errs = appendNegative(errs, "opa::max_silent_connections_per_source", o.MaxSilentConnectionsPerSource)
	// confighttp reads 0 as "no limit" for these; here 0 is the default, since no limit would let a trickled
	// body hold its turn forever, or an upload decompress to confighttp's 20 MiB.
	errs = appendNegative(errs, "opa::read_timeout", o.ServerConfig.ReadTimeout)
	errs = appendNegative(errs, "opa::max_request_body_size", o.ServerConfig.MaxRequestBodySize)
	return errs
}
