// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package jsonscan // import "github.com/otelcol-policy/otelcol-policy/internal/jsonscan"

// Size is what a value costs once built as pdata, in the units the decision receiver prices records in:
// Values counts its values (an array's elements, an object's members, and the containers themselves) and Widest
// is the member count of its widest object. An empty container counts as one value more, and an empty object
// as one member: on the safe side, and what a count of commas and brackets gives.
type Size struct {
	Values, Widest int
}

// Measure is the Size of validated JSON d. It stops once there are more than maxValues values, so that
// measuring a value of millions of elements costs no more than measuring one of maxValues.
func Measure(d []byte, maxValues int) Size {
	// The member counts of the open containers, -1 for arrays; events nest a few levels deep.
	var buf [16]int
	open := buf[:0]
	s := Size{Values: 1}
	for i := 0; i < len(d) && s.Values <= maxValues; i++ {
		switch d[i] {
		case '"':
			i = skipString(d, i) - 1
		case '{':
			s.Values++
			s.Widest = max(s.Widest, 1)
			open = append(open, 1)
		case '[':
			s.Values++
			open = append(open, -1)
		case ',':
			s.Values++
			if n := len(open); n > 0 && open[n-1] > 0 {
				open[n-1]++
				s.Widest = max(s.Widest, open[n-1])
			}
		case '}', ']':
			if len(open) > 0 {
				open = open[:len(open)-1]
			}
		}
	}
	return s
}

// SizeWithout is the Size of the object whose members are ms without those named name, which is what
// WithoutPath makes of it for a path of one key, and the index of the last member named name (-1 if none): both
// are counted from the members in one pass, without a pass over the object.
func (ms Members) SizeWithout(name string) (Size, int) {
	var s ObjectSize
	last := -1
	for i := range ms {
		if string(ms[i].Name()) == name {
			last = i
			continue
		}
		s.Add(&ms[i])
	}
	return s.Size(), last
}

// ObjectSize adds up the Size of an object from the members it keeps, for a caller that walks the members for
// reasons of its own and would otherwise walk them twice.
type ObjectSize struct {
	kept int
	s    Size
}

// Add counts member m.
func (o *ObjectSize) Add(m *Member) {
	o.kept++
	o.s.Values += m.Size.Values - 1
	o.s.Widest = max(o.s.Widest, m.Size.Widest)
}

// Size is the Size of the object of the members added.
func (o *ObjectSize) Size() Size {
	return Size{Values: 1 + o.s.Values + max(o.kept, 1), Widest: max(o.s.Widest, o.kept, 1)}
}
