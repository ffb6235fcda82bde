package main

import (
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/owd"
)

// Controller variants the benchmark runs beside the registered ones, to
// measure a mechanism against the default in the same run: "owd-elastic"
// is owd with Tuning.ElasticityTest (off by default), "owd-nolosslevel"
// owd with Tuning.DisableLossLevelTest (owd as it was before the loss
// level test), "owd-nopush" owd with Tuning.DisablePushTest (owd as it
// was before the push test), "owd-nofair" owd with Tuning.DisableFairShare
// (owd as it was before the fair-share term).
func init() {
	for _, v := range []struct {
		name   string
		tuning owd.Tuning
	}{
		{"owd-elastic", owd.Tuning{ElasticityTest: true}},
		{"owd-nolosslevel", owd.Tuning{DisableLossLevelTest: true}},
		{"owd-nopush", owd.Tuning{DisablePushTest: true}},
		{"owd-nofair", owd.Tuning{DisableFairShare: true}},
	} {
		cc.Register(v.name, func(mss cc.ByteCount) cc.Controller {
			c, err := owd.New(owd.Config{MSS: mss, Tuning: v.tuning})
			if err != nil {
				panic(err) // a constant Config: a broken invariant
			}
			return c
		})
	}
}
