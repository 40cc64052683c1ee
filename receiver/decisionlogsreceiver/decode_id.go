package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
)

// decisionIDVersion is hashed first, so that a change of the fields yields new IDs instead of colliding with
// old ones.
const decisionIDVersion = "decisionlogs/v1"

// contentID derives an ID from what identifies an event, for events that carry no unique ID of their own: the
// same event delivered twice gets the same ID, so that at-least-once delivery can be deduplicated downstream.
// Fields are length-prefixed, so that ("ab", "c") and ("a", "bc") differ. 32 hex digits: 128 bits of SHA-256.
func contentID(fields ...string) string {
	var buf [512]byte
	b := appendIDField(buf[:0], decisionIDVersion)
	for _, f := range fields {
		b = appendIDField(b, f)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

func appendIDField(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}
