package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/fresh-udp/fresh/cc"
	"github.com/fresh-udp/fresh/cmd/fresh-monitor/monitor"
	"github.com/fresh-udp/fresh/internal/units"
)

// Byte limits of the buckets. One upload must not take the space every
// device's freshest update needs, so the object store is created with a
// limit that leaves the KV bucket its own: by default the KV bucket gets
// an eighth of JetStream's storage (at most kvReserveMax) and the object
// store the rest. JetStream's storage is the embedded server's
// (-max-store, by default nats-server's own: 75% of the free space on
// -data's disk at start), or with -nats the account's limit if it has one;
// a server's own limit is not visible to its clients, so without an
// account limit the buckets get no limits unless the flags give them.

// kvReserveMax caps the KV bucket's default share: a record is a few
// hundred bytes (an update fits one datagram), so 1 GiB holds millions of
// devices.
const kvReserveMax = 1 << 30

// limitFlags are the flags of the limits.
type limitFlags struct {
	maxStore, maxUpload, maxKV units.Size
	// storeSet, uploadSet, kvSet: given on the command line (0 then
	// means nats-server's default, no limit, no limit).
	storeSet, uploadSet, kvSet bool
}

// defaultLimits divides JetStream's storage total between the buckets.
// The limits are whole KiB and their sum at most total.
func defaultLimits(total int64) (upload, kv int64) {
	kv = min(total/8, kvReserveMax) &^ (1<<10 - 1)
	upload = (total - kv) &^ (1<<10 - 1)
	return upload, kv
}

// bucketLimits returns the buckets' limits and the hints of a full store
// for the monitor, from the flags and JetStream's storage (storeMax, the
// embedded server's; 0 with -nats, when the account's limit is asked).
func bucketLimits(ctx context.Context, o *options, js jetstream.JetStream, storeMax int64, log *slog.Logger, stdout io.Writer) (upload, kv int64, hints monitor.StorageHints, err error) {
	hints = monitor.StorageHints{
		Uploads:   "raise -max-upload-store or the bucket's max bytes, or delete uploads",
		KV:        "raise -max-kv-store or the bucket's max bytes",
		JetStream: "raise -max-store, or free space on -data's disk",
	}
	source := "-max-store"
	if o.natsURL != "" {
		hints.JetStream = "raise the NATS server's or the account's JetStream storage, or limit the uploads with -max-upload-store"
		source = "the NATS account's limit"
		if ai, aerr := js.AccountInfo(ctx); aerr == nil && ai.Limits.MaxStore > 0 {
			storeMax = ai.Limits.MaxStore
		}
	} else if !o.limits.storeSet {
		source = "nats-server's default, 75% of -data's free disk space"
	}
	upload, kv = int64(o.limits.maxUpload), int64(o.limits.maxKV)
	if storeMax > 0 {
		du, dk := defaultLimits(storeMax)
		if !o.limits.uploadSet {
			upload = du
		}
		if !o.limits.kvSet {
			kv = dk
		}
		if upload+kv > storeMax {
			return 0, 0, hints, fmt.Errorf("-max-upload-store %s and -max-kv-store %s add up to more than JetStream's storage, %s (%s): the KV bucket would not keep its room; give smaller ones",
				size(upload), size(kv), size(storeMax), source)
		}
		fmt.Fprintf(stdout, "fresh-monitor: JetStream storage %s (%s); new buckets limited to %s of uploads (-max-upload-store), %s of updates (-max-kv-store)\n",
			size(storeMax), source, size(upload), size(kv))
		return upload, kv, hints, nil
	}
	if !o.limits.uploadSet {
		log.Warn("JetStream's storage limit is not known to the monitor (-nats, an account without a storage limit): " +
			"a new object store gets no byte limit, so one upload can use up the storage and stop every device's updates; " +
			"give -max-upload-store (and -max-kv-store) within the server's storage")
	}
	return upload, kv, hints, nil
}

// size writes n bytes for a message.
func size(n int64) string { return units.FormatSize(cc.ByteCount(n)) }
