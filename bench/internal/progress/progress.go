// Package progress draws the progress bar of a long benchmark run on a
// terminal, or a plain line every few seconds where the output is a log
// file, so that a run that takes minutes shows it is alive and one that
// takes a second prints nothing.
package progress

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"golang.org/x/term"
)

const (
	// delay is how long a run goes before its bar appears: short runs
	// (most simulations) print nothing.
	delay = 2 * time.Second
	// every limits redraws, so a chatty Progress callback costs nothing.
	every = 100 * time.Millisecond
	// width is the bar's width in characters.
	width = 30
	// lineEvery is how often a long run prints a progress line when the
	// writer is not a terminal (a log file, CI): often enough to show it is
	// alive, rarely enough to keep the log short.
	lineEvery = 5 * time.Second
)

// Bar draws "label [=====>    ]  42%" on one terminal line, from a
// couple of seconds after it was made until Done erases it. On a writer
// that is not a terminal it prints the same text as a plain line every few
// seconds instead. A disabled bar does nothing.
type Bar struct {
	w       io.Writer
	enabled bool
	lines   bool // not a terminal: plain lines, no redraws
	label   string
	now     func() time.Time // time.Now; a fake in tests
	start   time.Time
	last    time.Time // last redraw
	drawn   bool
}

// New is a bar labelled label on w; disabled, it draws nothing.
func New(w io.Writer, enabled bool, label string) *Bar {
	p := &Bar{w: w, enabled: enabled, lines: !isTerminal(w), label: label, now: time.Now}
	if enabled {
		p.start = p.now()
	}
	return p
}

// Set shows progress frac in [0,1].
func (p *Bar) Set(frac float64) {
	if !p.enabled {
		return
	}
	t := p.now()
	gap := every
	if p.lines {
		gap = lineEvery
	}
	if t.Sub(p.start) < delay || (p.drawn && t.Sub(p.last) < gap) {
		return
	}
	p.last, p.drawn = t, true
	if p.lines {
		fmt.Fprintln(p.w, render(p.label, frac, width))
		return
	}
	fmt.Fprint(p.w, "\r"+render(p.label, frac, width)+"\x1b[K")
}

// Done erases the bar if it was drawn (plain lines stay).
func (p *Bar) Done() {
	if p.drawn && !p.lines {
		fmt.Fprint(p.w, "\r\x1b[K")
		p.drawn = false
	}
}

// render is the text of a bar of width characters at frac.
func render(label string, frac float64, width int) string {
	frac = min(max(frac, 0), 1)
	n := int(frac * float64(width))
	bar := strings.Repeat("=", n)
	if n < width {
		bar += ">" + strings.Repeat(" ", width-n-1)
	}
	return fmt.Sprintf("%s [%s] %3.0f%%", label, bar, frac*100)
}

// isTerminal reports whether w is a terminal (then progress bars are drawn).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
