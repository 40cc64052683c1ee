// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/collector/component"
	"go.opentelemetry.io/collector/config/configoptional"
	"go.opentelemetry.io/collector/config/configtls"
	"go.opentelemetry.io/collector/confmap"
	"go.opentelemetry.io/collector/confmap/confmaptest"
	"go.opentelemetry.io/collector/exporter/exporterhelper"

	"github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter/internal/metadata"
	"github.com/otelcol-policy/otelcol-policy/pkg/policyresult"
)

func TestDefaultConfig(t *testing.T) {
	cfg := createDefaultConfig().(*Config)
	assert.Empty(t, cfg.Brokers)
	assert.Equal(t, "otelcol-policy", cfg.ClientID)
	assert.Equal(t, LogsConfig{Topic: "otelcol-policy-results", Encoding: EncodingJSON}, cfg.Logs)
	assert.Equal(t, ProducerConfig{RequiredAcks: -1, Compression: CompressionNone, MaxMessageBytes: 1_000_000,
		AllowAutoTopicCreation: true}, cfg.Producer)
	assert.Equal(t, policyresult.AttrResultKey, cfg.RecordKeyAttribute)
	assert.Empty(t, cfg.TopicFromAttribute)
	assert.False(t, cfg.Auth.TLS.HasValue())
	assert.False(t, cfg.Auth.SASL.HasValue())
	assert.Equal(t, 5*time.Second, cfg.TimeoutConfig.Timeout)
	require.True(t, cfg.QueueConfig.HasValue())
	assert.Equal(t, 1, cfg.QueueConfig.Get().NumConsumers)
	assert.True(t, cfg.RetryConfig.Enabled)
}

func TestLoadConfig(t *testing.T) {
	cm, err := confmaptest.LoadConf(filepath.Join("testdata", "config.yaml"))
	require.NoError(t, err)

	storage := component.MustNewID("file_storage")
	custom := createDefaultConfig().(*Config)
	custom.Brokers = []string{"kafka-0.kafka:9093", "kafka-1.kafka:9093"}
	custom.ClientID = "policy-collector"
	custom.Logs = LogsConfig{Topic: "policy-results", Encoding: EncodingOTLPProto}
	custom.Producer = ProducerConfig{RequiredAcks: 1, Compression: CompressionZstd, MaxMessageBytes: 2_000_000,
		AllowAutoTopicCreation: false}
	tls := configtls.NewDefaultClientConfig()
	tls.CAFile = "/etc/kafka/ca.pem"
	custom.Auth.TLS = configoptional.Some(tls)
	custom.Auth.SASL = configoptional.Some(SASLConfig{Mechanism: MechanismScramSHA512, Username: "collector", Password: "s3cret"})
	custom.RecordKeyAttribute = policyresult.AttrResultID
	custom.TopicFromAttribute = "kafka.topic"
	custom.TopicAllowlist = []string{"policy-decisions", "policy-audit"}
	custom.TimeoutConfig.Timeout = 10 * time.Second
	custom.RetryConfig.InitialInterval = time.Second
	custom.RetryConfig.MaxInterval = 30 * time.Second
	custom.RetryConfig.MaxElapsedTime = 0
	queue := exporterhelper.NewDefaultQueueConfig()
	queue.StorageID = &storage
	queue.QueueSize = 5000
	queue.NumConsumers = 2
	*custom.QueueConfig.Get() = queue

	withBrokers := func(acks RequiredAcks) *Config {
		c := createDefaultConfig().(*Config)
		c.Brokers = []string{"kafka:9092"}
		c.Producer.RequiredAcks = acks
		return c
	}
	defaults := createDefaultConfig().(*Config)
	defaults.Brokers = []string{"kafka-0.kafka:9092"}
	acknowledged := withBrokers(-1)
	acknowledged.Auth.SASL = configoptional.Some(SASLConfig{Mechanism: MechanismPlain, Username: "collector", Password: "s3cret",
		InsecurePlaintext: true})

	for _, tt := range []struct {
		id      component.ID
		want    *Config
		wantErr string
	}{
		{id: component.NewID(metadata.Type), want: defaults},
		{id: component.NewIDWithName(metadata.Type, "custom"), want: custom},
		{id: component.NewIDWithName(metadata.Type, "acks_all"), want: withBrokers(-1)},
		{id: component.NewIDWithName(metadata.Type, "acks_zero"), want: withBrokers(0)},
		{id: component.NewIDWithName(metadata.Type, "no_brokers"), wantErr: "brokers must list at least one broker"},
		{id: component.NewIDWithName(metadata.Type, "bad_enums"), wantErr: "brokers[1] is empty\n" +
			"logs::topic must be set\n" +
			`logs::encoding must be json or otlp_proto, got "otlp_json"` + "\n" +
			"producer::required_acks must be 0, 1, -1 or all, got 2\n" +
			`producer::compression must be one of none, gzip, snappy, lz4, zstd, got "brotli"` + "\n" +
			"producer::max_message_bytes must be between 512 and 1073741824, got 0\n" +
			"record_key_attribute must be set"},
		{id: component.NewIDWithName(metadata.Type, "bad_sasl"), wantErr: `auth::sasl::mechanism must be one of PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, got "GSSAPI"` + "\n" +
			"auth::sasl::username must be set\n" +
			"auth::sasl::password must be set"},
		{id: component.NewIDWithName(metadata.Type, "bad_acks_text"), wantErr: `required_acks must be 0, 1, -1 or all, got "leader"`},
		{id: component.NewIDWithName(metadata.Type, "sasl_plain_without_tls"), wantErr: "auth::sasl with mechanism PLAIN and " +
			"without auth::tls sends the password in clear text to anyone on the network path: configure auth::tls, or set " +
			"auth::sasl::insecure_plaintext: true to accept it"},
		{id: component.NewIDWithName(metadata.Type, "sasl_scram_without_tls"), wantErr: "auth::sasl with mechanism SCRAM-SHA-256 " +
			"and without auth::tls exposes the password to offline guessing by anyone who records the exchange, and the " +
			"records to reading and tampering: configure auth::tls, or set auth::sasl::insecure_plaintext: true to accept it"},
		{id: component.NewIDWithName(metadata.Type, "sasl_tls_insecure"), wantErr: "auth::sasl with mechanism PLAIN and without auth::tls sends"},
		{id: component.NewIDWithName(metadata.Type, "sasl_plaintext_acknowledged"), want: acknowledged},
		{id: component.NewIDWithName(metadata.Type, "insecure_plaintext_with_tls"), wantErr: "auth::sasl::insecure_plaintext applies only without auth::tls: remove it"},
		{id: component.NewIDWithName(metadata.Type, "topic_attribute_without_allowlist"), wantErr: "topic_allowlist must list " +
			"the topics topic_from_attribute may name: the attribute comes from the data, and without the list any record " +
			"could pick any topic, and have the brokers create it"},
		{id: component.NewIDWithName(metadata.Type, "allowlist_without_attribute"), wantErr: "topic_allowlist is used only with topic_from_attribute"},
		{id: component.NewIDWithName(metadata.Type, "bad_allowlist"), wantErr: `topic_allowlist[1] "" is not a Kafka topic name (1 to 249 of a-z A-Z 0-9 . _ -, not "." or "..")` + "\n" +
			`topic_allowlist[2] "a/b" is not a Kafka topic name` + " (1 to 249 of a-z A-Z 0-9 . _ -, not \".\" or \"..\")\n" +
			`topic_allowlist[3] ".." is not a Kafka topic name` + " (1 to 249 of a-z A-Z 0-9 . _ -, not \".\" or \"..\")\n" +
			`topic_allowlist[4] "x with space" is not a Kafka topic name`},
	} {
		t.Run(tt.id.String(), func(t *testing.T) {
			cfg := createDefaultConfig()
			sub, err := cm.Sub(tt.id.String())
			require.NoError(t, err)
			err = sub.Unmarshal(cfg)
			if err == nil {
				err = confmap.Validate(cfg)
			}
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, cfg)
		})
	}
}

// The password is a configopaque.String: printing the configuration never shows it.
func TestPasswordIsOpaque(t *testing.T) {
	s := SASLConfig{Mechanism: MechanismPlain, Username: "u", Password: "hunter2"}
	assert.NotContains(t, fmtSprint(s), "hunter2")
}

func fmtSprint(v any) string { return fmt.Sprintf("%v %+v", v, v) }
