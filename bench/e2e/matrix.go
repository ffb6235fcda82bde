package e2e

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"
)

// Matrix writes the suite's matrix as `freshbench interop` prints it: one
// line per case, as aligned text or as a Markdown table (RESULTS.md's).
type Matrix struct {
	w  io.Writer
	md bool
}

// NewMatrix writes the matrix's header to w and returns the matrix.
func NewMatrix(w io.Writer, markdown bool) *Matrix {
	if markdown {
		fmt.Fprintln(w, "| case | result | time | bytes | promise | measured |")
		fmt.Fprintln(w, "|---|---|---:|---:|---|---|")
	} else {
		fmt.Fprintf(w, "%-20s %-12s %8s %10s  %s\n", "case", "result", "time", "bytes", "measured")
	}
	return &Matrix{w: w, md: markdown}
}

// Add writes case c's line: its verdict ("fail (known)", with why, for a
// known failure), its time, the bytes that arrived byte-exact and what
// the promise's check measured, with the error. It reports whether the
// case failed, a known failure too.
func (m *Matrix) Add(c Case, res Result) (failed bool) {
	verdict, detail := string(res.Status), res.Measured
	if res.Err != nil {
		detail = strings.TrimPrefix(detail+"; "+res.Err.Error(), "; ")
	}
	if res.Status == Fail {
		failed = true
		if res.Known != "" {
			verdict, detail = "fail (known)", detail+"; known: "+res.Known
		}
	}
	took := res.Took.Round(100 * time.Millisecond)
	if m.md {
		fmt.Fprintf(m.w, "| `%s` | %s | %v | %d | %s | %s |\n", c.Name, verdict, took, res.Bytes, mdCell(c.Promise), mdCell(detail))
	} else {
		fmt.Fprintf(m.w, "%-20s %-12s %8v %10d  %s\n", c.Name, verdict, took, res.Bytes, detail)
	}
	return failed
}

// mdCell makes s safe in a Markdown table cell.
func mdCell(s string) string { return strings.ReplaceAll(s, "|", `\|`) }

// RunMatrix runs every case of cases with opts, through run (Run, or a
// test's fake), and writes the matrix to w as NewMatrix and Add do. It
// returns how many cases failed.
func RunMatrix(ctx context.Context, w io.Writer, markdown bool, cases []Case, opts Options, run func(context.Context, Case, Options) Result) (failed int) {
	m := NewMatrix(w, markdown)
	for _, c := range cases {
		if m.Add(c, run(ctx, c, opts)) {
			failed++
		}
	}
	return failed
}
