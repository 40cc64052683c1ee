// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package server

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/otelcol-policy/otelcol-policy/results-server/store"
)

// The charts are SVG computed here and written by the templates, so that the pages need no script and no
// library: every coordinate is an integer, every colour a CSS class of style.css, and every chart comes with
// a table of the same numbers for screen readers and for copying.

// barChart is a horizontal stacked bar chart: one bar per row, one segment per series.
type barChart struct {
	ID            string
	Title         string
	Width, Height int
	// LabelWidth is the room left of the bars for the row labels.
	LabelWidth int
	Rows       []barRow
	Legend     []legendItem
	// LegendY is where the legend's baseline is.
	LegendY int
}

type barRow struct {
	Label    string
	Y        int
	Segments []barSegment
	Total    int64
	TotalX   int
}

type barSegment struct {
	Class, Name string
	X, Width    int
	Value       int64
}

type legendItem struct {
	Class, Name string
	X           int
}

// barSeries is one kind of segment: its name and CSS class.
type barSeries struct{ Class, Name string }

const (
	barHeight   = 22
	barGap      = 10
	chartMargin = 8
)

// newBarChart lays out one bar per label; values[i][j] is series j of row i.
func newBarChart(id, title string, labels []string, series []barSeries, values [][]int64) barChart {
	c := barChart{ID: id, Title: title, Width: 760, LabelWidth: 150}
	var most int64
	for _, row := range values {
		var total int64
		for _, v := range row {
			total += v
		}
		most = max(most, total)
	}
	plot := c.Width - c.LabelWidth - 70
	for i, label := range labels {
		r := barRow{Label: label, Y: chartMargin + i*(barHeight+barGap)}
		x := c.LabelWidth
		for j, v := range values[i] {
			r.Total += v
			if v == 0 {
				continue
			}
			w := max(1, int(float64(v)/float64(most)*float64(plot)))
			r.Segments = append(r.Segments, barSegment{Class: series[j].Class, Name: series[j].Name, X: x, Width: w, Value: v})
			x += w
		}
		r.TotalX = x + 6
		c.Rows = append(c.Rows, r)
	}
	c.LegendY = chartMargin + len(labels)*(barHeight+barGap) + 14
	x := c.LabelWidth
	for _, s := range series {
		c.Legend = append(c.Legend, legendItem{Class: s.Class, Name: s.Name, X: x})
		x += 18 + 8*len(s.Name) + 16
	}
	c.Height = c.LegendY + chartMargin
	return c
}

// lineChart is a line per series over days.
type lineChart struct {
	ID                          string
	Title                       string
	Width, Height               int
	Left, Top, PlotW, PlotH     int
	Bottom, Right               int
	YTicks, XTicks              []tick
	Series                      []lineSeries
	LegendY                     int
	MaxLabel, FirstDay, LastDay string
}

type tick struct {
	Pos   int
	Label string
}

type lineSeries struct {
	Class, Name string
	// Points is the polyline's points attribute.
	Points  string
	LegendX int
}

// seriesClasses colour up to eight series; more repeat them.
var seriesClasses = []string{"s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"}

func newLineChart(id, title string, days []time.Time, series []store.TrendSeries) lineChart {
	c := lineChart{ID: id, Title: title, Width: 760, Height: 300, Left: 60, Top: 16, PlotW: 660, PlotH: 220}
	c.Bottom, c.Right = c.Top+c.PlotH, c.Left+c.PlotW
	var most int64
	for _, s := range series {
		for _, v := range s.Failing {
			most = max(most, v)
		}
	}
	top := niceCeiling(most)
	for i := range 5 {
		v := top * int64(i) / 4
		c.YTicks = append(c.YTicks, tick{Pos: c.Bottom - int(float64(v)/float64(top)*float64(c.PlotH)), Label: formatCount(v)})
	}
	x := func(i int) int {
		if len(days) < 2 {
			return c.Left
		}
		return c.Left + i*c.PlotW/(len(days)-1)
	}
	step := max(1, len(days)/6)
	for i := 0; i < len(days); i += step {
		c.XTicks = append(c.XTicks, tick{Pos: x(i), Label: days[i].Format("Jan 2")})
	}
	c.LegendY = c.Bottom + 44
	lx := c.Left
	for k, s := range series {
		var pts []string
		for i, v := range s.Failing {
			y := c.Bottom - int(float64(v)/float64(top)*float64(c.PlotH))
			pts = append(pts, strconv.Itoa(x(i))+","+strconv.Itoa(y))
		}
		c.Series = append(c.Series, lineSeries{Class: seriesClasses[k%len(seriesClasses)], Name: s.Cluster,
			Points: strings.Join(pts, " "), LegendX: lx})
		lx += 18 + 8*len(s.Cluster) + 16
	}
	c.Height = c.LegendY + chartMargin
	return c
}

// niceCeiling is the top of a chart's scale: the smallest of 4, 8, 12, 20 × 10^k that holds n, so that the
// four gridlines at its quarters are round numbers.
func niceCeiling(n int64) int64 {
	for p := int64(1); ; p *= 10 {
		for _, m := range []int64{4, 8, 12, 20} {
			if m*p >= n {
				return m * p
			}
		}
	}
}

// formatCount writes n with thousands separators.
func formatCount(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, r := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(r)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// formatScore writes a CVSS score as scanners do (9.8, 10).
func formatScore(f *float64) string {
	if f == nil {
		return ""
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", *f), ".0")
}
