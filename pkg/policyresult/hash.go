// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
)

// hashVersion is mixed into every hash so that a future change of the identity fields yields new values instead
// of silently colliding with the old ones.
const hashVersion = "policyresult/v1"

// Hash is a key or ID in binary: 128 bits of SHA-256. It is comparable and half the size of its text, so state
// that keeps one per result (the k8s_reports receiver, the policy_aggregate processor) keys maps by it. Its
// text, the value of the attributes, is 32 lower-case hexadecimal characters.
type Hash [16]byte

// ParseHash reads the text of a hash; ok is false unless s is 32 hexadecimal characters.
func ParseHash(s string) (h Hash, ok bool) {
	if len(s) != 2*len(h) {
		return Hash{}, false
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return Hash{}, false
	}
	return h, true
}

// String is the hash's text.
func (h Hash) String() string {
	var out [2 * len(h)]byte
	hex.Encode(out[:], h[:])
	return string(out[:])
}

// AppendText appends the hash's text.
func (h Hash) AppendText(b []byte) ([]byte, error) { return hex.AppendEncode(b, h[:]), nil }

// MarshalText is the hash's text, so that stored state spells a hash as the records do.
func (h Hash) MarshalText() ([]byte, error) { return h.AppendText(nil) }

// UnmarshalText reads the text of a hash.
func (h *Hash) UnmarshalText(b []byte) error {
	parsed, ok := ParseHash(string(b))
	if !ok {
		return fmt.Errorf("hash %q: want 32 hexadecimal characters", b)
	}
	*h = parsed
	return nil
}

// Hashes are a result's key and ID. They are computed together, because the ID hashes the key's fields too,
// and a component that keeps them (the k8s_reports receiver's state) hands them to WriteHashedLogRecord
// instead of hashing the result again.
type Hashes struct {
	Key, ID Hash
}

// Hashes computes Key and ID in binary.
func (r *Result) Hashes() Hashes {
	var buf [512]byte
	b := r.appendIdentity(buf[:0])
	key := sum(b)
	return Hashes{Key: key, ID: sum(r.appendOutcome(b))}
}

// Key is the identity of a result: cluster, source, policy, rule and subject resource. It does not change when
// only the outcome or message changes, so it is the key under which downstream stores keep the latest outcome
// (a compacted Kafka topic, an upsert table, the policy_aggregate processor).
//
// A result without a subject resource (a cluster-wide check) is identified by its report instead.
//
// The value is the text of a Hash, the same in every process, build and platform.
func (r *Result) Key() string {
	var buf [512]byte
	return sum(r.appendIdentity(buf[:0])).String()
}

// ID identifies one outcome of a result: the identity plus outcome and message, like policy-reporter's result
// ID. It changes whenever what a user would see changes, so it deduplicates re-deliveries of the same outcome.
func (r *Result) ID() string {
	var buf [512]byte
	return sum(r.appendOutcome(r.appendIdentity(buf[:0]))).String()
}

// appendIdentity serialises the identity fields. The hash input is built in one buffer, most often on the stack,
// because receivers hash every result of every report they list.
func (r *Result) appendIdentity(b []byte) []byte {
	b = AppendField(b, hashVersion)
	b = AppendField(b, r.Cluster)
	b = AppendField(b, r.Source)
	b = AppendField(b, r.Policy)
	b = AppendField(b, r.Rule)
	if r.Resource.IsZero() {
		b = AppendField(b, "report")
		b = AppendField(b, r.Report.Kind)
		b = AppendField(b, r.Report.Namespace)
		return AppendField(b, r.Report.Name)
	}
	b = AppendField(b, "resource")
	b = AppendField(b, r.Resource.APIVersion)
	b = AppendField(b, r.Resource.Kind)
	b = AppendField(b, r.Resource.Namespace)
	b = AppendField(b, r.Resource.Name)
	return AppendField(b, r.Resource.UID)
}

// appendOutcome serialises what the ID adds to the identity: for a scan run, the run as well.
func (r *Result) appendOutcome(b []byte) []byte {
	b = AppendField(b, string(r.Outcome))
	b = AppendField(b, r.Message)
	if r.Scan != nil {
		b = AppendField(b, "run")
		b = AppendField(b, r.Scan.Run)
	}
	return b
}

// AppendField appends s length-prefixed (a uvarint of its length, then its bytes), so that ("ab", "c") and
// ("a", "bc") never encode alike. It is the encoding of every hash input of the model, and of the composite
// keys components build from several attribute values (groups, series).
func AppendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// AppendFields appends each of fields with AppendField.
func AppendFields(b []byte, fields ...string) []byte {
	for _, f := range fields {
		b = AppendField(b, f)
	}
	return b
}

func sum(b []byte) Hash {
	s := sha256.Sum256(b)
	return Hash(s[:16])
}

// decisionIDVersion is hashed first, so that a change of the fields yields new IDs instead of colliding with
// old ones.
const decisionIDVersion = "decisionlogs/v1"

// ContentDecisionID derives a policy.decision.id from what identifies a decision, for engines whose events carry
// no unique ID of their own: the same event delivered twice gets the same ID, so that at-least-once delivery can
// be deduplicated downstream. The value is the text of a Hash.
func ContentDecisionID(fields ...string) string {
	var buf [512]byte
	b := AppendField(buf[:0], decisionIDVersion)
	return sum(AppendFields(b, fields...)).String()
}
