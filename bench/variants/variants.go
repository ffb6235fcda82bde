// Package variants registers, with the cc registry, controller variants
// the benchmark runs beside the registered controllers, to measure a
// mechanism against the default in the same run: "owd-elastic" is owd
// with Tuning.ElasticityTest (off by default), "owd-nolosslevel" owd with
// Tuning.DisableLossLevelTest (owd as it was before the loss level test),
// "owd-nopush" owd with Tuning.DisablePushTest (owd as it was before the
// push test), "owd-nofair" owd with Tuning.DisableFairShare (owd as it
// was before the fair-share term). Import it for its side effect, as
// freshbench does, to give --cc these names.
package variants

import (
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/owd"
)

// Names are the variants this package registers, each with its tuning.
var Names = []string{"owd-elastic", "owd-nolosslevel", "owd-nopush", "owd-nofair"}

func init() {
	for i, tuning := range []owd.Tuning{
		{ElasticityTest: true},
		{DisableLossLevelTest: true},
		{DisablePushTest: true},
		{DisableFairShare: true},
	} {
		cc.Register(Names[i], func(mss cc.ByteCount) cc.Controller {
			c, err := owd.New(owd.Config{MSS: mss, Tuning: tuning})
			if err != nil {
				panic(err) // a constant Config: a broken invariant
			}
			return c
		})
	}
}
