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
	reasonTopic          = "topic"
	reasonUnavailable    = "unavailable"
	reasonOther          = "other"
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

// classify sorts a produce error. Retrying cannot help a record that is too large, a client that may not write
// or cannot authenticate, or a topic that does not exist or is invalid: those are permanent, and everything
// else (unreachable brokers, timeouts, leader changes, retriable broker errors) is retried by exporterhelper.
// The checks look through franz-go's wrapping: a record timeout wraps the last error seen, so a client that
// failed to authenticate until the timeout is still reported as an authentication failure.
func classify(err error) classification {
	switch {
	case errors.Is(err, errEncoding):
		return classification{permanent: true, reason: reasonOther, what: "record cannot be encoded"}
	case errors.Is(err, errRecordTooLarge), errors.Is(err, kerr.MessageTooLarge), errors.Is(err, kerr.RecordListTooLarge):
		return classification{permanent: true, reason: reasonTooLarge,
			what: "record larger than producer::max_message_bytes or the broker's max.message.bytes"}
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.ClusterAuthorizationFailed),
		errors.Is(err, kerr.TransactionalIDAuthorizationFailed):
		return classification{permanent: true, reason: reasonAuthorization, what: "not authorized to write the topic"}
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState),
		errors.Is(err, kerr.UnsupportedSaslMechanism):
		return classification{permanent: true, reason: reasonAuthentication, what: "authentication with the brokers failed"}
	case errors.Is(err, kerr.InvalidTopicException), errors.Is(err, kerr.UnknownTopicOrPartition),
		errors.Is(err, kerr.UnknownTopicID):
		return classification{permanent: true, reason: reasonTopic, what: "topic is invalid or does not exist"}
	}
	if ke, ok := errors.AsType[*kerr.Error](err); ok {
		if !ke.Retriable {
			return classification{permanent: true, reason: reasonOther, what: "the broker rejected the record"}
		}
		return classification{reason: reasonUnavailable}
	}
	return classification{reason: reasonUnavailable}
}

// describe is the error of one failed record as returned to exporterhelper and logged. It names the topic and
// never the record's content.
func (c classification) describe(topic string, err error) error {
	if c.permanent {
		return fmt.Errorf("topic %q: %s: %w", topic, c.what, err)
	}
	return fmt.Errorf("topic %q: %w", topic, err)
}
