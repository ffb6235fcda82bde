package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/fresh-udp/fresh/bench/plots"
	"github.com/fresh-udp/fresh/bench/report"
)

const peersUsage = `usage: freshbench peers --out FILE.png [--title T] RESULT.json...  (flags first)

Draws the Pantheon-style figure of a peers comparison (bench/results/peers.md)
from the JSON that "freshbench emu --tun --json" wrote, one point per
telemetry flow, averaged over the runs of its file:

  streaming (telemetry flows beside a bulk upload): the readings' p95 age at
  the monitor (log, inverted) against the upload's goodput beside them, so
  better is up and to the right; give the file of the peers beside a CUBIC
  upload and the file of fresh's readings beside its own upload together;
  sleeping (flows with sleep): the wake-to-stored median (log, inverted)
  against the IP bytes of a wake, both directions (log, inverted).

Flags:
  --out FILE   the PNG to write (required)
  --title T    the figure's title (default: the files' scenario names)
  -h, --help   print this help
`

// peersCommand is "freshbench peers".
func peersCommand(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("peers")
	out := fs.String("out", "", "")
	title := fs.String("title", "", "")
	if err := parseFlags(fs, args, "freshbench peers", peersUsage); err != nil {
		return err
	}
	if *out == "" || fs.NArg() == 0 {
		return withUsage(peersUsage, "freshbench peers: --out and at least one RESULT.json are required")
	}
	var files [][]*report.Run
	var names []string
	for _, path := range fs.Args() {
		runs, err := report.ReadRuns(path)
		if err != nil {
			return usagef("freshbench peers: %v", err)
		}
		files = append(files, runs)
		names = append(names, runs[0].Scenario)
	}
	p, err := plots.Peers(files)
	if err != nil {
		return usagef("freshbench peers: %v", err)
	}
	if *title == "" {
		*title = strings.Join(names, " + ")
	}
	p.Title.Text = *title + "\n" + p.Title.Text
	if err := plots.SavePNG(p, *out); err != nil {
		return fmt.Errorf("freshbench peers: %w", err)
	}
	fmt.Fprintf(stdout, "wrote %s\n", *out)
	return nil
}
