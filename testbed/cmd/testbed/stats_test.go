// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestSummarize(t *testing.T) {
	for _, tc := range []struct {
		in               []float64
		min, median, max float64
	}{
		{[]float64{3}, 3, 3, 3},
		{[]float64{5, 1, 3}, 1, 3, 5},
		{[]float64{4, 1, 3, 10}, 1, 3.5, 10},
		{[]float64{2, 2, 9, 2, 1}, 1, 2, 9},
	} {
		s := summarize(tc.in)
		if s.Min != tc.min || s.Median != tc.median || s.Max != tc.max || s.Runs != len(tc.in) {
			t.Errorf("summarize(%v) = %+v; want %v/%v/%v", tc.in, s, tc.min, tc.median, tc.max)
		}
		if !reflect.DeepEqual(s.Values, tc.in) {
			t.Errorf("values %v reordered to %v", tc.in, s.Values)
		}
	}
	if s := summarize(nil); s.Runs != 0 || s.Min != 0 || s.Max != 0 {
		t.Errorf("summarize(nil) = %+v", s)
	}
}

func TestTargets(t *testing.T) {
	s := summarize([]float64{90, 150, 210})
	for _, tc := range []struct {
		t    target
		want bool
	}{
		{target{Stat: "max", Limit: 200, AtMost: true}, false},
		{target{Stat: "median", Limit: 200, AtMost: true}, true},
		{target{Stat: "min", Limit: 100}, false},
		{target{Stat: "median", Limit: 100}, true},
	} {
		if got := tc.t.met(s); got != tc.want {
			t.Errorf("%+v on %+v: %v", tc.t, s, got)
		}
	}
}

func TestNums(t *testing.T) {
	for _, tc := range []struct {
		ref  float64
		in   []float64
		want string
	}{
		{9.65, []float64{9.3, 9.65, 10}, "9.30 9.65 10.00"},
		{12, []float64{12, 12, 13}, "12 12 13"},
		{0.105, []float64{0.0995, 0.105, 0.12}, "0.100 0.105 0.120"},
		{255, []float64{250.2, 255, 999.7}, "250 255 1000"},
		{168700, []float64{157300, 168700, 187345}, "157,000 169,000 187,000"},
	} {
		if got := strings.Join(nums(tc.ref, tc.in...), " "); got != tc.want {
			t.Errorf("nums(%v, %v) = %q, want %q", tc.ref, tc.in, got, tc.want)
		}
	}
}

func TestNum(t *testing.T) {
	for v, want := range map[float64]string{
		357412: "357,000", 6_912_345: "6,910,000", 1234: "1,230", 250: "250", 257.4: "257", 12.34: "12.3",
		4.812: "4.81", 0.7512: "0.751", 2: "2", 0: "0", -1500: "-1,500",
	} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}
