// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// num formats a measured value for RESULTS.md: three significant digits (the runs vary more than that) with
// thousands separators, integers as integers.
func num(v float64) string {
	switch a := math.Abs(v); {
	case v == math.Trunc(v) && a < 1000:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1000:
		p := math.Pow(10, math.Floor(math.Log10(a))-2)
		return thousands(strconv.FormatFloat(math.Round(v/p)*p, 'f', 0, 64))
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 10:
		return strconv.FormatFloat(v, 'f', 1, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}

// nums formats the values of one figure alike: with the decimals num gives their reference (the median), so
// that a column reads 9.30 / 9.65 / 10.00 rather than 9.30 / 9.65 / 10. Values of a thousand and more keep
// three significant digits each.
func nums(ref float64, values ...float64) []string {
	out := make([]string, len(values))
	integral := true
	for _, v := range values {
		integral = integral && v == math.Trunc(v)
	}
	a := math.Abs(ref)
	for i, v := range values {
		switch {
		case math.Abs(v) >= 1000 || (integral && a < 1000):
			out[i] = num(v)
		case a >= 100:
			out[i] = strconv.FormatFloat(v, 'f', 0, 64)
		case a >= 10:
			out[i] = strconv.FormatFloat(v, 'f', 1, 64)
		case a >= 1:
			out[i] = strconv.FormatFloat(v, 'f', 2, 64)
		case a == 0:
			out[i] = num(v)
		default:
			out[i] = strconv.FormatFloat(v, 'f', 2-int(math.Floor(math.Log10(a))), 64)
		}
	}
	return out
}

// thousands inserts commas into an integer's digits.
func thousands(s string) string {
	sign := ""
	if strings.HasPrefix(s, "-") {
		sign, s = "-", s[1:]
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return sign + b.String()
}

// duration formats seconds as "2 min 31 s" or "8.4 s".
func duration(s float64) string {
	if s < 60 {
		return fmt.Sprintf("%.1f s", s)
	}
	m := int(s) / 60
	return fmt.Sprintf("%d min %d s", m, int(s)-60*m)
}
