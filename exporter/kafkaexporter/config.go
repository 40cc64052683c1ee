// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter"

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"go.opentelemetry.io/collector/config/configopaque"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configretry"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/exporter/exporterhelper"
)

// Values of logs::encoding.
const (
	EncodingJSON      = "json"
	EncodingOTLPProto = "otlp_proto"
)

// Values of producer::compression.
const (
	CompressionNone   = "none"
	CompressionGzip   = "gzip"
	CompressionSnappy = "snappy"
	CompressionLZ4    = "lz4"
	CompressionZstd   = "zstd"
)

// Values of auth::sasl::mechanism.
const (
	MechanismPlain       = "PLAIN"
	MechanismScramSHA256 = "SCRAM-SHA-256"
	MechanismScramSHA512 = "SCRAM-SHA-512"
)

// franz-go refuses a batch limit outside [512, 1 GiB].
const (
	minMaxMessageBytes = 512
	maxMaxMessageBytes = 1 << 30
)

// Config of the kafka exporter. Keys follow the contrib kafka exporter where the meaning is the same.
type Config struct {
	// Brokers are the bootstrap brokers, host:port.
	Brokers []string `mapstructure:"brokers"`
	// ClientID is sent with every request; brokers use it in logs and quotas.
	ClientID string         `mapstructure:"client_id"`
	Logs     LogsConfig     `mapstructure:"logs"`
	Producer ProducerConfig `mapstructure:"producer"`
	Auth     AuthConfig     `mapstructure:"auth"`

	// RecordKeyAttribute names the log record attribute whose value is the Kafka record key of results and records
	// of other events. Summaries and decisions are keyed by their own identity attribute
	// (policyresult.IdentityAttribute) instead, so that one compacted topic holds every kind.
	RecordKeyAttribute string `mapstructure:"record_key_attribute"`
	// TopicFromAttribute names a resource or record attribute (the record's wins) whose value is the topic; records
	// without it go to logs::topic.
	TopicFromAttribute string `mapstructure:"topic_from_attribute"`
	// TopicAllowlist lists, by exact name, the topics TopicFromAttribute may name; a record naming another one
	// goes to logs::topic, and is counted. The attribute comes from the data, so without the list any record
	// could pick any topic, and have the brokers create it.
	TopicAllowlist []string `mapstructure:"topic_allowlist"`

	TimeoutConfig exporterhelper.TimeoutConfig                             `mapstructure:",squash"`
	QueueConfig   configoptional.Optional[exporterhelper.QueueBatchConfig] `mapstructure:"sending_queue"`
	RetryConfig   configretry.BackOffConfig                                `mapstructure:"retry_on_failure"`
}

// LogsConfig says where and how log records are written.
type LogsConfig struct {
	Topic    string `mapstructure:"topic"`
	Encoding string `mapstructure:"encoding"`
}

// ProducerConfig tunes the franz-go producer.
type ProducerConfig struct {
	// RequiredAcks is 0 (none), 1 (leader) or -1 (all in-sync replicas, also spelled "all"). Only -1 keeps the
	// producer idempotent.
	RequiredAcks RequiredAcks `mapstructure:"required_acks"`
	Compression  string       `mapstructure:"compression"`
	// MaxMessageBytes bounds one record batch before compression, as the broker's max.message.bytes does; a
	// single record larger than it is dropped as a permanent error.
	MaxMessageBytes int `mapstructure:"max_message_bytes"`
	// AllowAutoTopicCreation asks the brokers to create a topic that does not exist when its metadata is looked
	// up; brokers do so only with auto.create.topics.enable (Kafka's default). Records for a topic that does not
	// exist are retried either way.
	AllowAutoTopicCreation bool `mapstructure:"allow_auto_topic_creation"`
}

// RequiredAcks is the producer's acks setting. It accepts the YAML numbers 0, 1 and -1, and the string "all".
type RequiredAcks int

// UnmarshalText accepts "all" besides the numbers, as Kafka's own acks setting does.
func (a *RequiredAcks) UnmarshalText(text []byte) error {
	s := strings.TrimSpace(string(text))
	if strings.EqualFold(s, "all") {
		*a = -1
		return nil
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return fmt.Errorf("required_acks must be 0, 1, -1 or all, got %q", s)
	}
	*a = RequiredAcks(n)
	return nil
}

// AuthConfig secures the connections to the brokers.
type AuthConfig struct {
	TLS  configoptional.Optional[configtls.ClientConfig] `mapstructure:"tls"`
	SASL configoptional.Optional[SASLConfig]             `mapstructure:"sasl"`
}

// SASLConfig authenticates the client.
type SASLConfig struct {
	Mechanism string              `mapstructure:"mechanism"`
	Username  string              `mapstructure:"username"`
	Password  configopaque.String `mapstructure:"password"`
	// InsecurePlaintext accepts SASL on connections without TLS (see Config.Validate); it is refused with TLS.
	InsecurePlaintext bool `mapstructure:"insecure_plaintext"`
}

// Validate checks the configuration before the collector starts.
func (c *Config) Validate() error {
	var errs []error
	if len(c.Brokers) == 0 {
		errs = append(errs, errors.New("brokers must list at least one broker"))
	}
	for i, b := range c.Brokers {
		if strings.TrimSpace(b) == "" {
			errs = append(errs, fmt.Errorf("brokers[%d] is empty", i))
		}
	}
	if c.Logs.Topic == "" {
		errs = append(errs, errors.New("logs::topic must be set"))
	}
	switch c.Logs.Encoding {
	case EncodingJSON, EncodingOTLPProto:
	default:
		errs = append(errs, fmt.Errorf("logs::encoding must be %s or %s, got %q", EncodingJSON, EncodingOTLPProto, c.Logs.Encoding))
	}
	switch c.Producer.RequiredAcks {
	case 0, 1, -1:
	default:
		errs = append(errs, fmt.Errorf("producer::required_acks must be 0, 1, -1 or all, got %d", c.Producer.RequiredAcks))
	}
	switch c.Producer.Compression {
	case CompressionNone, CompressionGzip, CompressionSnappy, CompressionLZ4, CompressionZstd:
	default:
		errs = append(errs, fmt.Errorf("producer::compression must be one of none, gzip, snappy, lz4, zstd, got %q", c.Producer.Compression))
	}
	if m := c.Producer.MaxMessageBytes; m < minMaxMessageBytes || m > maxMaxMessageBytes {
		errs = append(errs, fmt.Errorf("producer::max_message_bytes must be between %d and %d, got %d", minMaxMessageBytes, maxMaxMessageBytes, m))
	}
	if c.RecordKeyAttribute == "" {
		errs = append(errs, errors.New("record_key_attribute must be set"))
	}
	if s := c.Auth.SASL.Get(); s != nil {
		switch s.Mechanism {
		case MechanismPlain, MechanismScramSHA256, MechanismScramSHA512:
		default:
			errs = append(errs, fmt.Errorf("auth::sasl::mechanism must be one of %s, %s, %s, got %q", MechanismPlain, MechanismScramSHA256, MechanismScramSHA512, s.Mechanism))
		}
		if s.Username == "" {
			errs = append(errs, errors.New("auth::sasl::username must be set"))
		}
		if s.Password == "" {
			errs = append(errs, errors.New("auth::sasl::password must be set"))
		}
		if err := c.validatePlaintextSASL(s); err != nil {
			errs = append(errs, err)
		}
	}
	if err := c.validateTopicAllowlist(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// validatePlaintextSASL refuses SASL on connections without TLS unless auth::sasl::insecure_plaintext
// acknowledges it. PLAIN sends the password in clear text. SCRAM does not send it, but an eavesdropper who
// records the exchange can guess the password offline at the speed of its hash, and without TLS the records
// and the authenticated connection are open to reading and tampering on the network path: both need the
// acknowledgement.
func (c *Config) validatePlaintextSASL(s *SASLConfig) error {
	tc := c.Auth.TLS.Get()
	// configtls's insecure, without a CA, turns TLS off.
	plaintext := tc == nil || (tc.Insecure && tc.CAFile == "" && tc.CAPem == "")
	switch {
	case s.Mechanism != MechanismPlain && s.Mechanism != MechanismScramSHA256 && s.Mechanism != MechanismScramSHA512:
		return nil // refused on its own
	case plaintext && !s.InsecurePlaintext && s.Mechanism == MechanismPlain:
		return errors.New("auth::sasl with mechanism PLAIN and without auth::tls sends the password in clear text to anyone " +
			"on the network path: configure auth::tls, or set auth::sasl::insecure_plaintext: true to accept it")
	case plaintext && !s.InsecurePlaintext:
		return fmt.Errorf("auth::sasl with mechanism %s and without auth::tls exposes the password to offline guessing by "+
			"anyone who records the exchange, and the records to reading and tampering: configure auth::tls, or set "+
			"auth::sasl::insecure_plaintext: true to accept it", s.Mechanism)
	case !plaintext && s.InsecurePlaintext:
		return errors.New("auth::sasl::insecure_plaintext applies only without auth::tls: remove it")
	}
	return nil
}

// maxTopicNameLen is Kafka's longest topic name.
const maxTopicNameLen = 249

func (c *Config) validateTopicAllowlist() error {
	switch {
	case c.TopicFromAttribute != "" && len(c.TopicAllowlist) == 0:
		return errors.New("topic_allowlist must list the topics topic_from_attribute may name: the attribute comes from " +
			"the data, and without the list any record could pick any topic, and have the brokers create it")
	case c.TopicFromAttribute == "" && len(c.TopicAllowlist) > 0:
		return errors.New("topic_allowlist is used only with topic_from_attribute")
	}
	var errs []error
	for i, t := range c.TopicAllowlist {
		if !validTopicName(t) {
			errs = append(errs, fmt.Errorf("topic_allowlist[%d] %q is not a Kafka topic name (1 to %d of a-z A-Z 0-9 . _ -, not \".\" or \"..\")",
				i, t, maxTopicNameLen))
		}
	}
	return errors.Join(errs...)
}

// validTopicName follows Kafka's rules for topic names.
func validTopicName(t string) bool {
	if t == "" || len(t) > maxTopicNameLen || t == "." || t == ".." {
		return false
	}
	for _, c := range []byte(t) {
		if (c < 'a' || c > 'z') && (c < 'A' || c > 'Z') && (c < '0' || c > '9') && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}
