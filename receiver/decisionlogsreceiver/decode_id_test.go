package decisionlogsreceiver

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestContentIDIsStable(t *testing.T) {
	// Downstream deduplication keys on these values: changing them is a breaking change (bump
	// decisionIDVersion instead of editing the expectation).
	assert.Equal(t, "239b74afe9f88de14fceb9659a65618f", contentID("a", "b"))
	assert.NotEqual(t, contentID("ab", "c"), contentID("a", "bc"))
}
