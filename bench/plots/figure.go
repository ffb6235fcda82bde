package plots

import (
	"fmt"
	"image"
	"image/color"
	"os"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// The layout of every PNG the benchmark writes: a title, a subtitle (the
// path), and one or more panels of one gonum plot each, in a grid, with
// each panel's legend drawn inside its axes where it hides the least data
// (a legend outside the axes steals a quarter of the width; one at a fixed
// corner hides lines).

// Sizes at gonum/plot's 96 dpi.
const (
	plotWidth   = 20 * vg.Centimeter // 756 px
	plotHeight  = 12 * vg.Centimeter // a one-panel figure: 454 px
	panelHeight = 5 * vg.Centimeter  // each row of a stack of panels
	// legendPad is the space between a legend's box and its text, and
	// between the box and the axes.
	legendPad = 2 * vg.Millimeter
	titleSize = 13 // points
	subSize   = 10 // points: the subtitle and the panels' own titles
)

// Figure is one PNG: panels in rows × cols (row-major), under a title
// and a subtitle.
type Figure struct {
	title, subtitle string
	panels          []*plot.Plot
	cols            int       // 0: one column
	height          vg.Length // 0: plotHeight for one row, else panelHeight per row (at least plotHeight)
}

// Save draws f and writes it as a PNG to path.
func (f *Figure) Save(path string) error {
	cols := max(f.cols, 1)
	rows := (len(f.panels) + cols - 1) / cols
	h := f.height
	if h == 0 {
		h = plotHeight
		if rows > 1 {
			h = max(plotHeight, vg.Length(rows)*panelHeight+2*vg.Centimeter)
		}
	}
	img := vgimg.NewWith(vgimg.UseWH(plotWidth, h), vgimg.UseDPI(vgimg.DefaultDPI))
	dc := draw.New(img)
	dc.SetColor(color.White)
	dc.Fill(dc.Rectangle.Path())
	top := dc.Max.Y
	for _, t := range []struct {
		text string
		size vg.Length
		gray uint8
	}{{f.title, titleSize, 0}, {f.subtitle, subSize, 80}} {
		if t.text == "" {
			continue
		}
		sty := textStyle(t.size, color.Gray{Y: t.gray})
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YBottom
		top -= sty.Rectangle(t.text).Size().Y + vg.Points(3)
		dc.FillText(sty, vg.Point{X: dc.Center().X, Y: top}, t.text)
	}
	body := draw.Crop(dc, 0, -vg.Millimeter, 0, -(dc.Max.Y - top + vg.Points(4)))
	grid := make([][]*plot.Plot, rows)
	for i := range grid {
		grid[i] = make([]*plot.Plot, cols)
	}
	for i, p := range f.panels {
		grid[i/cols][i%cols] = p
	}
	tiles := draw.Tiles{Rows: rows, Cols: cols, PadX: 6 * vg.Millimeter, PadY: 3 * vg.Millimeter, PadBottom: vg.Millimeter}
	canvases := plot.Align(grid, tiles, body)
	for i, p := range f.panels {
		c := canvases[i/cols][i%cols]
		leg := p.Legend
		p.Legend = plot.NewLegend()
		p.Draw(c)
		p.Legend = leg
		drawLegendInside(img, p, c, leg)
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(out); err != nil {
		out.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return out.Close()
}

// SavePNG writes one plot as a one-panel figure. A title of several
// lines becomes the figure's title (the first line) and subtitle (the
// rest, smaller: the path).
func SavePNG(p *plot.Plot, path string) error {
	f := &Figure{panels: []*plot.Plot{p}}
	if title, sub, ok := strings.Cut(p.Title.Text, "\n"); ok {
		f.title, f.subtitle = title, sub
		p.Title.Text = ""
		defer func() { p.Title.Text = title + "\n" + sub }()
	}
	return f.Save(path)
}

func textStyle(size vg.Length, c color.Color) draw.TextStyle {
	sty := plot.New().Title.TextStyle
	sty.Font = font.From(sty.Font, size)
	sty.Color = c
	return sty
}

// drawLegendInside draws leg inside the axes of p (drawn on c), in the
// corner whose box covers the fewest data pixels, on a white box.
func drawLegendInside(img *vgimg.Canvas, p *plot.Plot, c draw.Canvas, leg plot.Legend) {
	data := p.DataCanvas(c)
	size := leg.Rectangle(data).Size()
	if size.X <= 0 || size.Y <= 0 {
		return // no entries
	}
	w, h := size.X+2*legendPad, size.Y+2*legendPad
	in := legendPad
	corners := []vg.Point{
		{X: data.Max.X - in - w, Y: data.Max.Y - in - h}, // top right
		{X: data.Min.X + in, Y: data.Max.Y - in - h},     // top left
		{X: data.Max.X - in - w, Y: data.Min.Y + in},     // bottom right
		{X: data.Min.X + in, Y: data.Min.Y + in},         // bottom left
	}
	best, bestInk := corners[0], -1
	for _, at := range corners {
		ink := inkIn(img, vg.Rectangle{Min: at, Max: vg.Point{X: at.X + w, Y: at.Y + h}})
		if bestInk < 0 || ink < bestInk {
			best, bestInk = at, ink
		}
	}
	box := vg.Rectangle{Min: best, Max: vg.Point{X: best.X + w, Y: best.Y + h}}
	c.SetColor(color.NRGBA{R: 255, G: 255, B: 255, A: 230})
	c.Fill(box.Path())
	c.SetLineStyle(draw.LineStyle{Color: color.Gray{Y: 180}, Width: vg.Points(0.5)})
	c.Stroke(box.Path())
	leg.Top, leg.Left = true, true
	leg.XOffs, leg.YOffs = 0, 0
	inner := draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: box.Min.X + legendPad, Y: box.Min.Y + legendPad},
		Max: vg.Point{X: box.Max.X - legendPad, Y: box.Max.Y - legendPad},
	}}
	leg.Draw(inner)
}

// inkIn counts the pixels of r (in the canvas's coordinates) that carry
// data: coloured or dark ones, not the white background or the light grey
// grid.
func inkIn(img *vgimg.Canvas, r vg.Rectangle) int {
	im := img.Image()
	b := im.Bounds()
	scale := float64(img.DPI()) / 72 // vg.Length is in points
	px := func(x, y vg.Length) image.Point {
		return image.Point{X: int(float64(x) * scale), Y: b.Max.Y - int(float64(y)*scale)}
	}
	lo, hi := px(r.Min.X, r.Max.Y), px(r.Max.X, r.Min.Y)
	n := 0
	for y := max(lo.Y, b.Min.Y); y < min(hi.Y, b.Max.Y); y++ {
		for x := max(lo.X, b.Min.X); x < min(hi.X, b.Max.X); x++ {
			cr, cg, cb, _ := im.At(x, y).RGBA()
			hiC, loC := max(cr, cg, cb)>>8, min(cr, cg, cb)>>8
			if hiC-loC > 50 || hiC < 120 {
				n++
			}
		}
	}
	return n
}
