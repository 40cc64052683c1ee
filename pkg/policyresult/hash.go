package policyresult // import "github.com/otelcol-policy/otelcol-policy/pkg/policyresult"

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// hashVersion is mixed into every hash so that a future change of the identity fields yields new values instead
// of silently colliding with the old ones.
const hashVersion = "policyresult/v1"

// Key is the identity of a result: cluster, source, policy, rule and subject resource. It does not change when
// only the outcome or message changes, so it is the key under which downstream stores keep the latest outcome
// (a compacted Kafka topic, an upsert table, the policy_aggregate processor).
//
// A result without a subject resource (a cluster-wide check) is identified by its report instead.
//
// The value is 32 hexadecimal characters (128 bits of SHA-256), the same in every process, build and platform.
func (r *Result) Key() string {
	var buf [512]byte
	return sum(r.appendIdentity(buf[:0]))
}

// ID identifies one outcome of a result: the identity plus outcome and message, like policy-reporter's result
// ID. It changes whenever what a user would see changes, so it deduplicates re-deliveries of the same outcome.
func (r *Result) ID() string {
	var buf [512]byte
	b := r.appendIdentity(buf[:0])
	b = appendField(b, string(r.Outcome))
	b = appendField(b, r.Message)
	return sum(b)
}

// appendIdentity serialises the identity fields. The hash input is built in one buffer, most often on the stack,
// because receivers hash every result of every report they list.
func (r *Result) appendIdentity(b []byte) []byte {
	b = appendField(b, hashVersion)
	b = appendField(b, r.Cluster)
	b = appendField(b, r.Source)
	b = appendField(b, r.Policy)
	b = appendField(b, r.Rule)
	if r.Resource.IsZero() {
		b = appendField(b, "report")
		b = appendField(b, r.Report.Kind)
		b = appendField(b, r.Report.Namespace)
		return appendField(b, r.Report.Name)
	}
	b = appendField(b, "resource")
	b = appendField(b, r.Resource.APIVersion)
	b = appendField(b, r.Resource.Kind)
	b = appendField(b, r.Resource.Namespace)
	b = appendField(b, r.Resource.Name)
	return appendField(b, r.Resource.UID)
}

// appendField length-prefixes every field, so that ("ab", "c") and ("a", "bc") never hash alike.
func appendField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func sum(b []byte) string {
	s := sha256.Sum256(b)
	var out [32]byte
	hex.Encode(out[:], s[:16])
	return string(out[:])
}
