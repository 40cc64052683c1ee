// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter // import "github.com/otelcol-policy/otelcol-policy/exporter/kafkaexporter"

import (
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kerr"
)

// Values of the reason attribute of exporter_kafka_errors.
const (
	reasonTooLarge       = "too_large"
	reasonAuthorization  = "authorization"
	reasonAuthentication = "authentication"
	reasonInvalidTopic   = "invalid_topic"
	reasonInvalidRecord  = "invalid_record"
	reasonUnsupported    = "unsupported"
	reasonEncoding       = "encoding"
	reasonUnknownTopic   = "unknown_topic"
	reasonUnavailable    = "unavailable"
)

// errRecordTooLarge is the local size check, made before a record is produced: franz-go would fail it with
// kerr.MessageTooLarge too, but without saying how large the record was.
var errRecordTooLarge = errors.New("record too large")

// errEncoding marks a record the configured encoding cannot write; retrying would fail the same way.
var errEncoding = errors.New("encoding failed")

// classification says what to do with a record that failed.
type classification struct {
	permanent bool
	reason    string
	// what explains a permanent failure to an operator; empty for retryable ones, whose error says enough.
	what string
}

var (
	tooLarge = classification{permanent: true, reason: reasonTooLarge,
		what: "record larger than producer::max_message_bytes or the broker's max.message.bytes"}
	unauthorized = classification{permanent: true, reason: reasonAuthorization,
		what: "not authorized to write the topic"}
	unauthenticated = classification{permanent: true, reason: reasonAuthentication,
		what: "authentication with the brokers failed"}
	unsupported = classification{permanent: true, reason: reasonUnsupported,
		what: "the brokers do not support this producer's settings"}
	unknownTopic = classification{reason: reasonUnknownTopic}
	unavailable  = classification{reason: reasonUnavailable}
)

// permanentErrors are the Kafka errors that end a record's delivery. Each is one the protocol marks not
// retriable and that no later attempt with the same record and configuration can get past; the broker will not
// change its answer by itself. Every other error is retried, including the non-retriable ones missing here
// (UNKNOWN_SERVER_ERROR, INVALID_TIMESTAMP with a skewed clock, which a retry stamps anew): dropping accepted
// data needs a reason, retrying does not. The README's error table lists the same.
var permanentErrors = map[*kerr.Error]classification{
	kerr.MessageTooLarge:                    tooLarge,
	kerr.RecordListTooLarge:                 tooLarge,
	kerr.TopicAuthorizationFailed:           unauthorized,
	kerr.ClusterAuthorizationFailed:         unauthorized,
	kerr.TransactionalIDAuthorizationFailed: unauthorized,
	kerr.SaslAuthenticationFailed:           unauthenticated,
	kerr.IllegalSaslState:                   unauthenticated,
	kerr.UnsupportedSaslMechanism:           unauthenticated,
	kerr.InvalidTopicException: {permanent: true, reason: reasonInvalidTopic,
		what: "the topic name is invalid"},
	kerr.InvalidRecord: {permanent: true, reason: reasonInvalidRecord,
		what: "the broker rejected the record (a record without a key on a compacted topic, for one)"},
	kerr.InvalidRequiredAcks:         unsupported,
	kerr.UnsupportedCompressionType:  unsupported,
	kerr.UnsupportedForMessageFormat: unsupported,
	kerr.UnsupportedVersion:          unsupported,
}

// classify sorts a produce error. The checks look through franz-go's wrapping: a record that timed out wraps
// the last error seen, so a client that failed to authenticate until the timeout is still reported as an
// authentication failure, and one that waited for a missing topic as a missing topic. Errors that are not
// Kafka's (unreachable brokers, timeouts, a closing client) are retried.
func classify(err error) classification {
	switch {
	case errors.Is(err, errEncoding):
		return classification{permanent: true, reason: reasonEncoding, what: "record cannot be encoded"}
	case errors.Is(err, errRecordTooLarge):
		return tooLarge
	}
	ke, ok := errors.AsType[*kerr.Error](err)
	if !ok {
		return unavailable
	}
	if c, ok := permanentErrors[ke]; ok {
		return c
	}
	if isUnknownTopic(err) {
		return unknownTopic
	}
	return unavailable
}

// isUnknownTopic says the topic does not exist (yet), or not under the ID the client knows: the wait for a
// topic that an operator or the broker's auto creation makes. Both errors are retriable in the protocol.
func isUnknownTopic(err error) bool {
	return errors.Is(err, kerr.UnknownTopicOrPartition) || errors.Is(err, kerr.UnknownTopicID)
}

// isBatchTooLarge says the broker refused a record batch as too large. franz-go fails every record of the
// batch, so only a batch of one record proves that the record itself is too large.
func isBatchTooLarge(err error) bool {
	return !errors.Is(err, errRecordTooLarge) && (errors.Is(err, kerr.MessageTooLarge) || errors.Is(err, kerr.RecordListTooLarge))
}

// describe is the error of one failed record as returned to exporterhelper and logged. It names the topic and
// never the record's content.
func (c classification) describe(topic string, err error) error {
	if c.permanent {
		return fmt.Errorf("topic %q: %s: %w", topic, c.what, err)
	}
	return fmt.Errorf("topic %q: %w", topic, err)
}
