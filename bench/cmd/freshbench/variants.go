package main

import (
	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/owd"
)

// Controller variants the benchmark runs beside the registered ones, to
// measure a mechanism that is off by default against the default in the
// same run: "owd-elastic" is owd with Tuning.ElasticityTest, "owd-loss"
// owd with Tuning.LossLevelTest.
func init() {
	cc.Register("owd-elastic", func(mss cc.ByteCount) cc.Controller {
		c, err := owd.New(owd.Config{MSS: mss, Tuning: owd.Tuning{ElasticityTest: true}})
		if err != nil {
			panic(err) // a constant Config: a broken invariant
		}
		return c
	})
	cc.Register("owd-loss", func(mss cc.ByteCount) cc.Controller {
		c, err := owd.New(owd.Config{MSS: mss, Tuning: owd.Tuning{LossLevelTest: true}})
		if err != nil {
			panic(err) // a constant Config: a broken invariant
		}
		return c
	})
}
