package owd

import "math"

// lineFit is an ordinary least-squares line y = a + b·x over the points
// added, kept as running sums (no allocation per point).
type lineFit struct {
	n                     float64
	sx, sy, sxx, syy, sxy float64
	x0, x1                float64 // first and last x
}

func (f *lineFit) add(x, y float64) {
	if f.n == 0 {
		f.x0 = x
	}
	f.x1 = x
	f.n++
	f.sx += x
	f.sy += y
	f.sxx += x * x
	f.syy += y * y
	f.sxy += x * y
}

// slope is b, 0 with fewer than 2 distinct x.
func (f *lineFit) slope() float64 {
	vx := f.sxx/f.n - (f.sx/f.n)*(f.sx/f.n)
	if f.n < 2 || vx <= 0 {
		return 0
	}
	return (f.sxy/f.n - (f.sx/f.n)*(f.sy/f.n)) / vx
}

// rise is the fitted line's change from the first point's x to the last's.
func (f *lineFit) rise() float64 { return f.slope() * (f.x1 - f.x0) }

// residualSD is the standard deviation of the points about the line.
func (f *lineFit) residualSD() float64 {
	if f.n < 2 {
		return 0
	}
	mx, my := f.sx/f.n, f.sy/f.n
	vx, vy := f.sxx/f.n-mx*mx, f.syy/f.n-my*my
	b := f.slope()
	return math.Sqrt(max(vy-b*b*vx, 0))
}
