package monitor

import (
	"encoding/json"
	"time"

	"github.com/nats-io/nats.go"
)

// recordMsg is r as a NATS message on subject: the JSON Record, and its
// device and times in headers.
func recordMsg(subject string, r Record) (*nats.Msg, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(subject)
	msg.Data = data
	msg.Header.Set(HeaderDevice, r.Device)
	msg.Header.Set(HeaderGenerated, r.Generated.UTC().Format(time.RFC3339Nano))
	msg.Header.Set(HeaderArrived, r.Arrived.UTC().Format(time.RFC3339Nano))
	return msg, nil
}
