package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"errors"
	"fmt"
	"os"
	"strconv"

	"go.opentelemetry.io/collector/config/confighttp"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap"
)

// Formats of NDJSON streams.
const (
	FormatAuto       = "auto"
	FormatOPA        = "opa"
	FormatGatekeeper = "gatekeeper"
	FormatGeneric    = "generic"
)

// Config of the decision_logs receiver.
type Config struct {
	// NDJSON lists stream listeners: one JSON event per line over a Unix socket or TCP.
	NDJSON []NDJSONConfig `mapstructure:"ndjson"`
	// OPA is the HTTP endpoint OPA's decision_logs plugin uploads to.
	OPA configoptional.Optional[OPAConfig] `mapstructure:"opa"`
	// Generic maps the fields of listeners with format "generic".
	Generic GenericMapping `mapstructure:"generic"`

	// ClusterName becomes the resource attribute k8s.cluster.name.
	ClusterName string `mapstructure:"cluster_name"`
	// IncludeInput puts the event's input (the AdmissionReview or query input) in the record body. It is
	// large and may hold secrets, so it is off by default.
	IncludeInput bool `mapstructure:"include_input"`
	// MaxInputBytes drops inputs larger than this from records that include inputs.
	MaxInputBytes int `mapstructure:"max_input_bytes"`
	// MaxBatchRecords bounds the records of one ConsumeLogs call from a stream.
	MaxBatchRecords int `mapstructure:"max_batch_records"`

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
	// TLS secures a tcp listener.
	TLS configoptional.Optional[configtls.ServerConfig] `mapstructure:"tls"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// OPAConfig is the HTTP endpoint for OPA's decision_logs plugin.
type OPAConfig struct {
	ServerConfig confighttp.ServerConfig `mapstructure:",squash"`
	// Path is where OPA posts; OPA's default resource is /logs.
	Path string `mapstructure:"path"`

	// prevent unkeyed literal initialization
	_ struct{}
}

// Unmarshal fills each listener's unset keys with their defaults, since list entries get none of their own.
func (c *Config) Unmarshal(conf *confmap.Conf) error {
	if err := conf.Unmarshal(c); err != nil {
		return err
	}
	d := defaultNDJSON()
	for i := range c.NDJSON {
		l := &c.NDJSON[i]
		if l.Transport == "" {
			l.Transport = d.Transport
		}
		if l.SocketMode == "" {
			l.SocketMode = d.SocketMode
		}
		if l.Format == "" {
			l.Format = d.Format
		}
		if l.MaxLineBytes == 0 {
			l.MaxLineBytes = d.MaxLineBytes
		}
	}
	return nil
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
	if len(c.NDJSON) == 0 && !c.OPA.HasValue() {
		errs = append(errs, errors.New("configure at least one ndjson listener or the opa endpoint"))
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
	}
	if generic {
		if c.Generic == (GenericMapping{}) {
			errs = append(errs, errors.New("generic: a listener has format generic but no field is mapped"))
		} else if err := c.Generic.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("generic: %w", err))
		}
	}
	if opa := c.OPA.Get(); opa != nil && (opa.Path == "" || opa.Path[0] != '/') {
		errs = append(errs, fmt.Errorf("opa::path must start with /, got %q", opa.Path))
	}
	if c.MaxInputBytes < 0 {
		errs = append(errs, fmt.Errorf("max_input_bytes must not be negative, got %d", c.MaxInputBytes))
	}
	if c.MaxBatchRecords <= 0 {
		errs = append(errs, fmt.Errorf("max_batch_records must be positive, got %d", c.MaxBatchRecords))
	}
	return errors.Join(errs...)
}
