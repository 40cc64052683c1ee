// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"image"
	"image/color"
	imagedraw "image/draw"
	"image/png"
	"io"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"

	"github.com/otelcol-policy/otelcol-policy/testbed/internal/procsample"
)

// The plot: one row per run, each row the run's throughput, resident memory and gauges (the exporter's queue)
// over time, side by side on the same time axis.
const (
	plotDPI     = 96
	panelWidth  = 600 // pixels
	rowHeight   = 300 // pixels, title strip included
	titleStrip  = 34  // pixels above each row for the run's title
	pixelPoints = vg.Length(72.0 / plotDPI)
)

var (
	rateColor    = color.RGBA{R: 31, G: 119, B: 180, A: 255}
	rssColor     = color.RGBA{R: 44, G: 160, B: 44, A: 255}
	peakColor    = color.RGBA{R: 44, G: 160, B: 44, A: 160}
	restartColor = color.RGBA{R: 214, G: 39, B: 40, A: 255}
	markColor    = color.RGBA{R: 100, G: 100, B: 100, A: 255}
	gaugeColors  = []color.Color{color.RGBA{R: 255, G: 127, B: 14, A: 255}, color.RGBA{R: 148, G: 103, B: 189, A: 255},
		color.RGBA{R: 140, G: 86, B: 75, A: 255}}
)

// laterRun matches the names of second and later runs of a repeated benchmark ("k8sreports-persistent-run2"):
// the plot shows each benchmark's first run, results.json has them all.
var laterRun = regexp.MustCompile(`-run([2-9]|[1-9][0-9]+)$`)

// plotted are the series the plot shows: every run of a delivery test, the first run of each benchmark.
func plotted(series []procsample.Series) []procsample.Series {
	var out []procsample.Series
	for _, s := range series {
		if !laterRun.MatchString(s.Name) && len(s.Samples) > 1 {
			out = append(out, s)
		}
	}
	return out
}

// plotSize is the image's size in pixels for n rows.
func plotSize(n int) (w, h int) { return 3 * panelWidth, n * rowHeight }

// writePlotFile writes the PNG of series to path.
func writePlotFile(path string, series []procsample.Series) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writePlot(f, series); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func writePlot(w io.Writer, series []procsample.Series) error {
	if len(series) == 0 {
		return fmt.Errorf("no time series to plot")
	}
	pw, ph := plotSize(len(series))
	img := vgimg.NewWith(vgimg.UseWH(vg.Length(pw)*pixelPoints, vg.Length(ph)*pixelPoints), vgimg.UseDPI(plotDPI))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Path())

	rows := make([][]*plot.Plot, len(series))
	for i, s := range series {
		rows[i] = []*plot.Plot{ratePlot(s), rssPlot(s), gaugePlot(s)}
	}
	tiles := draw.Tiles{Rows: len(series), Cols: 3,
		PadTop: titleStrip * pixelPoints, PadY: titleStrip * pixelPoints, PadX: 10 * pixelPoints,
		PadLeft: 6 * pixelPoints, PadRight: 14 * pixelPoints, PadBottom: 6 * pixelPoints}
	canvases := plot.Align(rows, tiles, dc)
	title := draw.TextStyle{Color: color.Black, Font: font.From(plot.DefaultFont, vg.Points(13)),
		Handler: plot.DefaultTextHandler, XAlign: draw.XCenter, YAlign: draw.YBottom}
	for i, s := range series {
		for j, p := range rows[i] {
			p.Draw(canvases[i][j])
		}
		top := canvases[i][0].Max.Y + 8*pixelPoints
		text := s.Title
		if s.PeakRSSMB > 0 {
			text += fmt.Sprintf("   (peak RSS %s MB)", num(s.PeakRSSMB))
		}
		dc.FillText(title, vg.Point{X: dc.Max.X / 2, Y: top}, text)
	}
	return (&png.Encoder{CompressionLevel: png.BestCompression}).Encode(w, paletted(img.Image(), lineColors()))
}

// lineColors are the colours the plot draws with, which the palette keeps exact.
func lineColors() []color.Color {
	return append([]color.Color{color.White, color.Black, rateColor, rssColor, peakColor, restartColor, markColor},
		gaugeColors...)
}

// paletted maps the image onto 256 colours: the plot's own colours, then the most frequent others (the shades
// of anti-aliased edges and text). The full-colour PNG is 2.5 times larger for no difference one can see, and
// the file is committed with every run.
func paletted(img image.Image, keep []color.Color) *image.Paletted {
	counts := map[color.RGBA]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			counts[color.RGBAModel.Convert(img.At(x, y)).(color.RGBA)]++
		}
	}
	pal := make(color.Palette, 0, 256)
	seen := map[color.RGBA]bool{}
	for _, c := range keep {
		rgba := color.RGBAModel.Convert(c).(color.RGBA)
		if !seen[rgba] {
			seen[rgba] = true
			pal = append(pal, rgba)
		}
	}
	byCount := make([]color.RGBA, 0, len(counts))
	for c := range counts {
		byCount = append(byCount, c)
	}
	sort.Slice(byCount, func(i, j int) bool {
		if counts[byCount[i]] != counts[byCount[j]] {
			return counts[byCount[i]] > counts[byCount[j]]
		}
		a, c := byCount[i], byCount[j] // a fixed order for equal counts: the same image gives the same file
		return uint32(a.R)<<24|uint32(a.G)<<16|uint32(a.B)<<8|uint32(a.A) < uint32(c.R)<<24|uint32(c.G)<<16|uint32(c.B)<<8|uint32(c.A)
	})
	for _, c := range byCount {
		if len(pal) == 256 {
			break
		}
		if !seen[c] {
			seen[c] = true
			pal = append(pal, c)
		}
	}
	out := image.NewPaletted(b, pal)
	imagedraw.Draw(out, b, img, b.Min, imagedraw.Src)
	return out
}

// newPanel is a plot with the time axis and the look every panel shares.
func newPanel(title, yLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(11)
	p.X.Label.Text = "time since the start (s)"
	p.Y.Label.Text = yLabel
	p.Y.Min = 0
	p.X.Tick.Marker = readableTicks{}
	p.Y.Tick.Marker = readableTicks{}
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	p.Legend.TextStyle.Font.Size = vg.Points(9)
	return p
}

func ratePlot(s procsample.Series) *plot.Plot {
	title := "throughput"
	if s.Counter != "" {
		title = "throughput: rate of " + s.Counter
	}
	p := newPanel(title, "records per second")
	pts := make(plotter.XYs, 0, len(s.Samples))
	for _, smp := range s.Samples {
		pts = append(pts, plotter.XY{X: smp.T, Y: smp.Rate})
	}
	addLine(p, pts, rateColor, "records/s", nil)
	addRestarts(p, s)
	addMarks(p, s, true)
	finishY(p, maxY(pts))
	return p
}

func rssPlot(s procsample.Series) *plot.Plot {
	p := newPanel("resident memory of the collector (VmRSS)", "MB")
	pts := make(plotter.XYs, 0, len(s.Samples))
	for _, smp := range s.Samples {
		pts = append(pts, plotter.XY{X: smp.T, Y: smp.RSSMB})
	}
	addLine(p, pts, rssColor, "RSS", nil)
	if s.PeakRSSMB > 0 && len(pts) > 0 {
		peak := plotter.XYs{{X: 0, Y: s.PeakRSSMB}, {X: pts[len(pts)-1].X, Y: s.PeakRSSMB}}
		addLine(p, peak, peakColor, fmt.Sprintf("peak (VmHWM) %s MB", num(s.PeakRSSMB)), []vg.Length{vg.Points(4), vg.Points(3)})
	}
	addRestarts(p, s)
	addMarks(p, s, false)
	finishY(p, math.Max(maxY(pts), s.PeakRSSMB))
	return p
}

// gaugePlot draws every gauge the run sampled (the exporter's queue size); a run without gauges gets an empty
// panel that says so, so that the rows stay aligned.
func gaugePlot(s procsample.Series) *plot.Plot {
	names := map[string]bool{}
	for _, smp := range s.Samples {
		for g := range smp.Gauges {
			names[g] = true
		}
	}
	if len(names) == 0 {
		p := newPanel("no queue or other gauge sampled in this run", "")
		p.X.Label.Text = ""
		p.HideAxes()
		return p
	}
	sorted := make([]string, 0, len(names))
	for g := range names {
		sorted = append(sorted, g)
	}
	sort.Strings(sorted)
	title := "gauges"
	if len(sorted) == 1 {
		title = sorted[0]
	}
	p := newPanel(title, gaugeUnit(sorted))
	top := 0.0
	for i, g := range sorted {
		var pts plotter.XYs
		for _, smp := range s.Samples {
			if v, ok := smp.Gauges[g]; ok {
				pts = append(pts, plotter.XY{X: smp.T, Y: v})
			}
		}
		addLine(p, pts, gaugeColors[i%len(gaugeColors)], g, nil)
		top = math.Max(top, maxY(pts))
	}
	addRestarts(p, s)
	addMarks(p, s, false)
	finishY(p, top)
	return p
}

// gaugeUnit labels the axis: the exporter's queue gauges count in the unit of the queue's sizer, which each
// config chooses (the outage test's is bytes, the k8sreports benchmark's requests). Short: a label longer
// than the panel is high pushes every panel of the grid out of shape.
func gaugeUnit(names []string) string {
	for _, n := range names {
		if !strings.HasPrefix(n, "otelcol_exporter_queue_") {
			return "value"
		}
	}
	return "queue sizer units"
}

func addLine(p *plot.Plot, pts plotter.XYs, c color.Color, legend string, dashes []vg.Length) {
	if len(pts) == 0 {
		return
	}
	for i, seg := range splitAtGaps(pts) {
		l, err := plotter.NewLine(seg)
		if err != nil {
			return // NaN or Inf in the data: the panel stays without this line rather than failing the suite
		}
		l.Color = c
		l.Width = vg.Points(1.5)
		l.Dashes = dashes
		p.Add(l)
		if i == 0 {
			p.Legend.Add(legend, l)
		}
	}
}

// splitAtGaps cuts a line where no sample was taken for longer than four of its usual intervals: no process ran
// (a collector killed and restarted only later), and a line across that time would show values nobody measured.
func splitAtGaps(pts plotter.XYs) []plotter.XYs {
	if len(pts) < 3 {
		return []plotter.XYs{pts}
	}
	steps := make([]float64, 0, len(pts)-1)
	for i := 1; i < len(pts); i++ {
		steps = append(steps, pts[i].X-pts[i-1].X)
	}
	slices.Sort(steps)
	limit := 4 * steps[len(steps)/2]
	var out []plotter.XYs
	start := 0
	for i := 1; i < len(pts); i++ {
		if pts[i].X-pts[i-1].X > limit {
			out = append(out, pts[start:i])
			start = i
		}
	}
	return append(out, pts[start:])
}

// addRestarts marks each collector restart (a new process) with a vertical dashed line over the panel.
func addRestarts(p *plot.Plot, s procsample.Series) {
	var m restartMarks
	for _, smp := range s.Samples {
		if smp.Restart {
			m.xs = append(m.xs, smp.T)
		}
	}
	if len(m.xs) == 0 {
		return
	}
	m.style = draw.LineStyle{Color: restartColor, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(2), vg.Points(2)}}
	p.Add(m)
	p.Legend.Add("collector restarted", m)
}

// restartMarks are vertical lines at times xs from the bottom to the top of the panel; they have no data range
// of their own, so they leave the axes to the data.
type restartMarks struct {
	xs    []float64
	style draw.LineStyle
}

func (m restartMarks) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, x := range m.xs {
		cx := trX(x)
		c.StrokeLine2(m.style, cx, c.Min.Y, cx, c.Max.Y)
	}
}

func (m restartMarks) Thumbnail(c *draw.Canvas) {
	x := (c.Min.X + c.Max.X) / 2
	c.StrokeLine2(m.style, x, c.Min.Y, x, c.Max.Y)
}

// addMarks draws the run's marks (events the test named: a kill, a destination down) as grey vertical lines,
// named at the top of the panel when labelled.
func addMarks(p *plot.Plot, s procsample.Series, labelled bool) {
	if len(s.Marks) == 0 {
		return
	}
	m := markLines{marks: s.Marks, labelled: labelled,
		style: draw.LineStyle{Color: markColor, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(5), vg.Points(2)}},
		text: draw.TextStyle{Color: markColor, Font: font.From(plot.DefaultFont, vg.Points(8)),
			Handler: plot.DefaultTextHandler, XAlign: draw.XLeft, YAlign: draw.YTop}}
	p.Add(m)
	p.Legend.Add("event of the run", m)
}

type markLines struct {
	marks    []procsample.Mark
	labelled bool
	style    draw.LineStyle
	text     draw.TextStyle
}

func (m markLines) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for i, mk := range m.marks {
		x := trX(mk.T)
		c.StrokeLine2(m.style, x, c.Min.Y, x, c.Max.Y)
		if m.labelled {
			// Alternate heights, so that the names of two close marks do not overlap.
			y := c.Max.Y - vg.Length(i%2)*m.text.Font.Size*1.2
			c.FillText(m.text, vg.Point{X: x + vg.Points(2), Y: y}, mk.Name)
		}
	}
}

func (m markLines) Thumbnail(c *draw.Canvas) {
	x := (c.Min.X + c.Max.X) / 2
	c.StrokeLine2(m.style, x, c.Min.Y, x, c.Max.Y)
}

// finishY leaves room above the highest value (top) for the legend.
func finishY(p *plot.Plot, top float64) {
	if top <= 0 || math.IsInf(top, 0) || math.IsNaN(top) {
		top = 1
	}
	p.Y.Max = top * 1.35
}

// maxY is the largest Y of pts.
func maxY(pts plotter.XYs) float64 {
	m := 0.0
	for _, p := range pts {
		m = math.Max(m, p.Y)
	}
	return m
}

// readableTicks are the default ticks labelled 20k, 1.5M instead of 20000, 1.5e+06.
type readableTicks struct{}

func (readableTicks) Ticks(min, max float64) []plot.Tick {
	ticks := plot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = shortNum(ticks[i].Value)
		}
	}
	return ticks
}

// shortNum keeps 4 significant digits, so that float noise (1.2000000000000002) does not reach a label.
func shortNum(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 1e6:
		return strconv.FormatFloat(v/1e6, 'g', 4, 64) + "M"
	case a >= 1e4:
		return strconv.FormatFloat(v/1e3, 'g', 4, 64) + "k"
	default:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
}
