// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package decisionlogsreceiver // import "github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver"

import (
	"context"
	"fmt"

	"github.com/otelcol-policy/otelcol-policy/internal/jsonscan"
	"github.com/otelcol-policy/otelcol-policy/receiver/decisionlogsreceiver/internal/decode"
)

// What input costs once decoded is bounded while it is decoded, not after: the records built from JSON take
// many times its bytes (a body of 2-byte array elements takes 27 bytes per element as pdata, an event "{}"
// about 1.4 KiB as a record), so a small upload or line could otherwise become gigabytes. Each decoded event
// is priced before it joins a batch, a batch is handed over before its price passes max_batch_bytes, and only
// max_concurrent_batches batches are built at once. Time is bounded too: a pdata map looks a key up by
// scanning its members, so building an object of n members takes n² steps (50,000 members: 3 s), and objects
// are held to max_object_members.

// The price of a record, fitted to what the decoders and pdata of this version take (TestBatchCostBoundsTheHeap
// holds it above the heap of real events and of bodies built to amplify): a body's bytes count twice, once for
// the event's JSON that the batch holds and once for the strings of its pdata.
const (
	// recordCost is what a record costs beyond its body: the decoded event, the record and its attributes.
	recordCost = 4 << 10
	// valueCost is what one JSON value of a body (an array element, an object member, a container) costs as
	// pdata beyond its bytes.
	valueCost = 64
)

// errEventTooLarge is the error of an event that alone would exceed max_batch_bytes as a record, or whose body
// has an object wider than max_object_members.
type errEventTooLarge struct{ msg string }

func (e *errEventTooLarge) Error() string { return e.msg }

// price estimates the memory of ev's record, and decides whether its input goes into it: only when configured,
// within max_input_bytes, and when the record stays within max_batch_bytes and max_object_members with it
// (otherwise the record says the input was omitted). An event whose record would pass them without its input
// is an error.
func (r *decisionsReceiver) price(ev *decode.Event) (int, error) {
	limit := r.cfg.MaxBatchBytes
	c := recordCost + 2*len(ev.Body)
	body := sizeOf(ev.Body, ev.BodySize, (limit-c)/valueCost)
	if c += valueCost * body.Values; c > limit {
		return 0, &errEventTooLarge{fmt.Sprintf("the event would take more than max_batch_bytes (%d) as a record", limit)}
	}
	if body.Widest > r.cfg.MaxObjectMembers {
		return 0, &errEventTooLarge{fmt.Sprintf("the event has an object of more than max_object_members (%d) members", r.cfg.MaxObjectMembers)}
	}
	if ev.Input != nil && r.cfg.IncludeInput && len(ev.Input) <= r.cfg.MaxInputBytes {
		in := 2 * len(ev.Input)
		input := sizeOf(ev.Input, ev.InputSize, (limit-c-in)/valueCost)
		if in += valueCost * input.Values; in <= limit-c && input.Widest <= r.cfg.MaxObjectMembers {
			c += in
			ev.WithInput = true
		}
	}
	return c, nil
}

// sizeOf is the size of validated JSON d as the scan counted it (known), or else measured up to just past
// maxValues values, which is as far as the price needs to know.
func sizeOf(d []byte, known jsonscan.Size, maxValues int) jsonscan.Size {
	if known.Values > 0 {
		return known
	}
	return jsonscan.Measure(d, maxValues)
}

// batch gathers decoded events for one ConsumeLogs call within max_batch_records and max_batch_bytes.
type batch struct {
	events []decode.Event
	cost   int
}

// fits tells whether an event of the given cost can join without the batch passing the limits. An empty batch
// takes any event, since events that could never fit were rejected when priced.
func (b *batch) fits(cfg *Config, cost int) bool {
	return len(b.events) == 0 || (len(b.events) < cfg.MaxBatchRecords && b.cost+cost <= cfg.MaxBatchBytes)
}

func (b *batch) add(ev decode.Event, cost int) {
	b.events = append(b.events, ev)
	b.cost += cost
}

// reset empties the batch, dropping its references to the input it was decoded from.
func (b *batch) reset() {
	clear(b.events)
	b.events, b.cost = b.events[:0], 0
}

// slots is a counting semaphore.
type slots chan struct{}

func newSlots(n int) slots { return make(slots, n) }

// acquire takes a slot, waiting while ctx lasts.
func (s slots) acquire(ctx context.Context) bool {
	select {
	case s <- struct{}{}:
		return true
	case <-ctx.Done():
		return false
	}
}

func (s slots) release() { <-s }
