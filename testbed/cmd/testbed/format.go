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
