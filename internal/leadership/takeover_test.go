// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package leadership

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
)

var errLocked = errors.New("the previous leader holds the lock")

func TestTakeOverRetriesUntilStartSucceeds(t *testing.T) {
	var reported []error
	calls := 0
	TakeOver(context.Background(), func(context.Context) error {
		if calls++; calls < 3 {
			return errLocked
		}
		return nil
	}, func(attempt int, err error) {
		assert.Equal(t, len(reported)+1, attempt)
		reported = append(reported, err)
	})
	assert.Equal(t, 3, calls)
	assert.Equal(t, []error{errLocked, errLocked, nil}, reported)
}

func TestTakeOverGivesUpWhenLeadingEnds(t *testing.T) {
	leading, stop := context.WithCancel(context.Background())
	calls := 0
	TakeOver(leading, func(context.Context) error {
		if calls++; calls == 2 {
			stop()
		}
		return errLocked
	}, nil)
	assert.Equal(t, 2, calls)
}
