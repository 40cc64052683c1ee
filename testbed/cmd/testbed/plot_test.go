// Copyright The otelcol-policy Authors
// SPDX-License-Identifier: Apache-2.0

package main

import (
	"bytes"
	"image/png"
	"os"
	"path/filepath"
	"testing"

	"gonum.org/v1/plot/plotter"
)

func TestPlot(t *testing.T) {
	all, err := readAllSeries("testdata/scratch/series")
	if err != nil {
		t.Fatal(err)
	}
	series := plotted(all)
	var names []string
	for _, s := range series {
		names = append(names, s.Name)
	}
	if len(series) != 3 {
		t.Fatalf("plotted %v; want every series but the second k8sreports run", names)
	}

	var b bytes.Buffer
	if err := writePlot(&b, series); err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	w, h := plotSize(3)
	if got := img.Bounds(); got.Dx() != w || got.Dy() != h {
		t.Fatalf("image %v, want %dx%d", got, w, h)
	}

	// Drawn, not blank: the lines' colours are there, and a fair share of the pixels is not background.
	colours := map[[3]uint32]int{}
	nonWhite := 0
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}]++
			if r>>8 < 250 || g>>8 < 250 || bl>>8 < 250 {
				nonWhite++
			}
		}
	}
	if share := float64(nonWhite) / float64(w*h); share < 0.02 || share > 0.5 {
		t.Errorf("%.1f%% of the pixels are drawn", 100*share)
	}
	for name, c := range map[string][3]uint32{
		"throughput": {uint32(rateColor.R), uint32(rateColor.G), uint32(rateColor.B)},
		"RSS":        {uint32(rssColor.R), uint32(rssColor.G), uint32(rssColor.B)},
		"restarts":   {uint32(restartColor.R), uint32(restartColor.G), uint32(restartColor.B)},
	} {
		if colours[c] < 50 {
			t.Errorf("%s: %d pixels of its colour %v", name, colours[c], c)
		}
	}

	path := filepath.Join(t.TempDir(), "timeseries.png")
	if err := writePlotFile(path, series); err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(path); err != nil || st.Size() < 10_000 {
		t.Fatalf("plot file: %v, %v", st, err)
	}
	if err := writePlot(&b, nil); err == nil {
		t.Error("a plot without series")
	}
}

// A collector that was down for a while has no samples then: its lines stop and start again rather than
// joining the last sample before with the first after.
func TestSplitAtGaps(t *testing.T) {
	var pts plotter.XYs
	for _, x := range []float64{0, 0.25, 0.5, 0.75, 1, 9, 9.25, 9.5, 9.75} {
		pts = append(pts, plotter.XY{X: x, Y: x})
	}
	segs := splitAtGaps(pts)
	if len(segs) != 2 || len(segs[0]) != 5 || len(segs[1]) != 4 {
		t.Errorf("segments %v", segs)
	}
	if segs := splitAtGaps(pts[:5]); len(segs) != 1 || len(segs[0]) != 5 {
		t.Errorf("a line without a gap cut: %v", segs)
	}
}

func TestShortNum(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 2.5: "2.5", 1.2000000000000002: "1.2", 5000: "5000", 20000: "20k",
		16777216: "16.78M", 150000: "150k", -30000: "-30k"} {
		if got := shortNum(v); got != want {
			t.Errorf("shortNum(%v) = %q, want %q", v, got, want)
		}
	}
}

// The same series give the same file, byte for byte: the committed PNG changes only when the data does.
func TestPlotIsDeterministic(t *testing.T) {
	all, err := readAllSeries("testdata/scratch/series")
	if err != nil {
		t.Fatal(err)
	}
	var a, b bytes.Buffer
	if err := writePlot(&a, plotted(all)); err != nil {
		t.Fatal(err)
	}
	if err := writePlot(&b, plotted(all)); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Error("two plots of the same series differ")
	}
}
