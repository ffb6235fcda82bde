package resultsmd

import (
	"fmt"

	"github.com/fresh-udp/fresh/bench/cellular"
	"github.com/fresh-udp/fresh/bench/seeds"
	"github.com/fresh-udp/fresh/bench/sim"
)

// cellularTraces writes the "Cellular traces" section: "freshbench
// traces" with its defaults (seeds cellular.DefaultSeeds, the controllers
// cellular.DefaultCCs), figures in the report's plot directory.
func (c *Report) cellularTraces() error {
	seedList, err := seeds.Parse(cellular.DefaultSeeds)
	if err != nil {
		return err
	}
	res, err := cellular.Run(cellular.Config{Dir: c.dir, Seeds: seedList, CCs: cellular.DefaultCCs(), Sim: sim.Run, Log: c.stderr})
	if err != nil {
		return fmt.Errorf("freshbench traces: %w", err)
	}
	if _, err := res.WriteFigures(c.plots); err != nil {
		return err
	}
	res.WriteMarkdown(&c.md, "##", c.rel)
	return nil
}
