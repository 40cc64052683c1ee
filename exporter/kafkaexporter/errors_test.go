// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package kafkaexporter

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestClassify(t *testing.T) {
	for _, tt := range []struct {
		err       error
		permanent bool
		reason    string
	}{
		{fmt.Errorf("%w: 2000 bytes", errRecordTooLarge), true, reasonTooLarge},
		{kerr.MessageTooLarge, true, reasonTooLarge},
		{fmt.Errorf("%w (uncompressed_bytes=5100, compressed_bytes=5100)", kerr.MessageTooLarge), true, reasonTooLarge},
		{kerr.RecordListTooLarge, true, reasonTooLarge},
		{kerr.TopicAuthorizationFailed, true, reasonAuthorization},
		{kerr.ClusterAuthorizationFailed, true, reasonAuthorization},
		{kerr.SaslAuthenticationFailed, true, reasonAuthentication},
		{fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, kerr.SaslAuthenticationFailed), true, reasonAuthentication},
		{kerr.InvalidTopicException, true, reasonInvalidTopic},
		{kerr.InvalidRecord, true, reasonInvalidRecord},
		{kerr.UnsupportedCompressionType, true, reasonUnsupported},
		{fmt.Errorf("%w: bad", errEncoding), true, reasonEncoding},
		// A topic that does not exist yet is created by the broker or an operator: it is waited for.
		{kerr.UnknownTopicOrPartition, false, reasonUnknownTopic},
		{fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, kerr.UnknownTopicOrPartition), false, reasonUnknownTopic},
		{kerr.UnknownTopicID, false, reasonUnknownTopic},
		{kerr.NotEnoughReplicas, false, reasonUnavailable},
		{kerr.LeaderNotAvailable, false, reasonUnavailable},
		{kerr.ThrottlingQuotaExceeded, false, reasonUnavailable},
		{kerr.RequestTimedOut, false, reasonUnavailable},
		{kerr.NotLeaderForPartition, false, reasonUnavailable},
		// Not retriable in the protocol, but nothing says the next attempt fails the same way.
		{kerr.UnknownServerError, false, reasonUnavailable},
		{kerr.InvalidTimestamp, false, reasonUnavailable},
		{kgo.ErrRecordTimeout, false, reasonUnavailable},
		{fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, kerr.NotEnoughReplicas), false, reasonUnavailable},
		{kgo.ErrClientClosed, false, reasonUnavailable},
		{errors.New("dial tcp 127.0.0.1:1: connect: connection refused"), false, reasonUnavailable},
	} {
		t.Run(tt.err.Error(), func(t *testing.T) {
			c := classify(tt.err)
			assert.Equal(t, tt.permanent, c.permanent)
			assert.Equal(t, tt.reason, c.reason)
		})
	}
}

// kafkaErrors is every error code franz-go knows, that is the protocol's list.
func kafkaErrors(t *testing.T) []*kerr.Error {
	var out []*kerr.Error
	for code := int16(-1); code < 1000; code++ {
		if ke, ok := errors.AsType[*kerr.Error](kerr.ErrorForCode(code)); ok && ke.Code == code {
			out = append(out, ke)
		}
	}
	require.Greater(t, len(out), 100, "kerr's list of errors")
	return out
}

// No error the Kafka protocol marks retriable is ever classed permanent, bare or as the last error of a record
// that timed out.
func TestRetriableKafkaErrorsAreRetried(t *testing.T) {
	retriable := 0
	for _, ke := range kafkaErrors(t) {
		if !ke.Retriable {
			continue
		}
		retriable++
		for _, err := range []error{ke, fmt.Errorf("%w, last err: %w", kgo.ErrRecordTimeout, ke)} {
			assert.False(t, classify(err).permanent, "%v is retriable in the Kafka protocol", err)
		}
	}
	assert.Greater(t, retriable, 20)
}

// Every error classed permanent is one the protocol marks not retriable: the table cannot drift.
func TestPermanentErrorsAreNotRetriable(t *testing.T) {
	for ke, c := range permanentErrors {
		assert.False(t, ke.Retriable, "%v", ke)
		assert.True(t, c.permanent, "%v", ke)
		assert.NotEmpty(t, c.what, "%v", ke)
	}
	permanent := 0
	for _, ke := range kafkaErrors(t) {
		if classify(ke).permanent {
			permanent++
			assert.Contains(t, permanentErrors, ke)
		}
	}
	assert.Len(t, permanentErrors, permanent)
}

func TestIsBatchTooLarge(t *testing.T) {
	assert.True(t, isBatchTooLarge(fmt.Errorf("%w (uncompressed_bytes=5100, compressed_bytes=5100)", kerr.MessageTooLarge)))
	assert.True(t, isBatchTooLarge(kerr.RecordListTooLarge))
	assert.False(t, isBatchTooLarge(fmt.Errorf("%w: 2000 bytes", errRecordTooLarge)), "the local check is about one record")
	assert.False(t, isBatchTooLarge(kerr.NotEnoughReplicas))
}

func TestDescribeNamesTopic(t *testing.T) {
	err := classify(kerr.TopicAuthorizationFailed).describe("secret-results", kerr.TopicAuthorizationFailed)
	assert.Equal(t, `topic "secret-results": not authorized to write the topic: `+kerr.TopicAuthorizationFailed.Error(), err.Error())
	assert.ErrorIs(t, err, kerr.TopicAuthorizationFailed)
}
