package plots

import (
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// markLabels writes a name beside each mark of a throughput–delay plot
// where it overlaps no other label and no mark: controllers often land
// close together (CUBIC and NewReno both fill the buffer), and labels at a
// fixed offset would be written over each other. Greedy placement in the
// order given: the first of eight positions around the mark (right, left,
// above, below, then the diagonals) that is free, else the right.
type markLabels struct {
	at     []struct{ X, Y float64 }
	text   []string
	colors []color.Color
	radius vg.Length // the marks' glyph radius
	style  draw.TextStyle
	placed []vg.Rectangle // where the last Plot wrote each label (for tests)
}

func newMarkLabels(radius vg.Length) *markLabels {
	sty := textStyle(11, color.Black)
	sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
	return &markLabels{radius: radius, style: sty}
}

func (m *markLabels) add(x, y float64, text string, c color.Color) {
	m.at = append(m.at, struct{ X, Y float64 }{x, y})
	m.text = append(m.text, text)
	m.colors = append(m.colors, c)
}

// Plot implements plot.Plotter.
func (m *markLabels) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	pts := make([]vg.Point, len(m.at))
	var taken []vg.Rectangle
	for i, a := range m.at {
		pts[i] = vg.Point{X: tx(a.X), Y: ty(a.Y)}
		r := m.radius
		taken = append(taken, vg.Rectangle{Min: vg.Point{X: pts[i].X - r, Y: pts[i].Y - r}, Max: vg.Point{X: pts[i].X + r, Y: pts[i].Y + r}})
	}
	gap := m.radius + vg.Points(3)
	m.placed = m.placed[:0]
	for i, text := range m.text {
		size := m.style.Rectangle(text).Size()
		w, h := size.X, size.Y
		pt := pts[i]
		candidates := []vg.Point{
			{X: pt.X + gap, Y: pt.Y - h/2},         // right
			{X: pt.X - gap - w, Y: pt.Y - h/2},     // left
			{X: pt.X - w/2, Y: pt.Y + gap},         // above
			{X: pt.X - w/2, Y: pt.Y - gap - h},     // below
			{X: pt.X + gap*0.7, Y: pt.Y + gap*0.7}, // above right
			{X: pt.X - gap*0.7 - w, Y: pt.Y + gap*0.7},
			{X: pt.X + gap*0.7, Y: pt.Y - gap*0.7 - h},
			{X: pt.X - gap*0.7 - w, Y: pt.Y - gap*0.7 - h},
		}
		chosen := vg.Rectangle{Min: candidates[0], Max: vg.Point{X: candidates[0].X + w, Y: candidates[0].Y + h}}
		for _, at := range candidates {
			r := vg.Rectangle{Min: at, Max: vg.Point{X: at.X + w, Y: at.Y + h}}
			if !inside(r, c.Rectangle) {
				continue
			}
			free := true
			for _, t := range taken {
				if overlaps(r, t) {
					free = false
					break
				}
			}
			if free {
				chosen = r
				break
			}
		}
		taken = append(taken, chosen)
		m.placed = append(m.placed, chosen)
		sty := m.style
		sty.Color = m.colors[i]
		c.FillText(sty, chosen.Min, text)
	}
}

func overlaps(a, b vg.Rectangle) bool {
	return a.Min.X < b.Max.X && b.Min.X < a.Max.X && a.Min.Y < b.Max.Y && b.Min.Y < a.Max.Y
}

func inside(a, b vg.Rectangle) bool {
	return a.Min.X >= b.Min.X && a.Max.X <= b.Max.X && a.Min.Y >= b.Min.Y && a.Max.Y <= b.Max.Y
}
