package monitor

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/fresh-udp/fresh/transport"
)

// counters are the monitor's own counts, kept where the monitor acts (an
// update taken, a store write, an upload), never on the packet path; the
// transport's counters are read at scrape time instead (Collect).
type counters struct {
	accepted, closed                               atomic.Int64
	updatesRead                                    atomic.Int64
	updatesStale, updatesSuperseded, updatesStored atomic.Int64
	kvErrors, objectErrors                         atomic.Int64
	uploadBytes, uploadsStored, uploadsFailed      atomic.Int64
	uploadsAborted                                 atomic.Int64
	orphanChunks, orphanBytes                      atomic.Int64 // purged by the sweeps (staging.go)
	refused                                        atomic.Int64 // connections closed for their device's name

	writeSeconds *prometheus.HistogramVec
	ageSeconds   prometheus.Histogram

	mu    sync.Mutex
	ended connTotals // the transport counters of the connections that ended
}

func newCounters() *counters {
	age := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "fresh_update_age_seconds",
		Help: "Age of each update the monitor takes, across all devices: arrival minus generation (the agent's clock corrected into the monitor's).",
		// 1 ms on a LAN to tens of seconds behind a dead path.
		Buckets: prometheus.ExponentialBuckets(1e-3, 2, 16),
	})
	return &counters{ageSeconds: age, writeSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "fresh_store_write_seconds",
		Help: "Time of one write into JetStream: a KV put of an update (store=\"kv\"), a whole upload's object put (store=\"object\").",
		// From a local file store's ~100 µs to a cluster's round trips
		// and a multi-megabyte upload's seconds.
		Buckets: prometheus.ExponentialBuckets(100e-6, 4, 11),
	}, []string{"store"})}
}

func (c *counters) observeWrite(store string, d time.Duration) {
	c.writeSeconds.WithLabelValues(store).Observe(d.Seconds())
}

func (c *counters) storeErrors(store string) *atomic.Int64 {
	if store == "kv" {
		return &c.kvErrors
	}
	return &c.objectErrors
}

// connTotals sums transport.Stats over connections.
type connTotals struct {
	updatesReceived, updatesStale, updatesRejected int64
	packetsReceived, packetsSent                   int64
	bytesReceived, bytesSent                       int64
	streamBytesReceived                            int64
}

func (t *connTotals) add(s transport.Stats) {
	t.updatesReceived += s.UpdatesReceived
	t.updatesStale += s.UpdatesStale
	t.updatesRejected += s.UpdatesRejected
	t.packetsReceived += s.PacketsReceived
	t.packetsSent += s.PacketsSent
	t.bytesReceived += s.BytesReceived
	t.bytesSent += s.BytesSent
	t.streamBytesReceived += s.StreamBytesReceived
}

// connEnded folds an ended connection's counters into the totals, so that
// counters never go down when a connection leaves.
func (c *counters) connEnded(s transport.Stats) {
	c.mu.Lock()
	c.ended.add(s)
	c.mu.Unlock()
}

// collector is the monitor's prometheus.Collector. Names follow
// Prometheus' conventions (fresh_…_total for counters, base units); no
// label names a device, so the series do not grow with the fleet.
type collector struct{ m *Monitor }

var (
	descConnections   = prometheus.NewDesc("fresh_connections", "Connections the listener holds: handshaking, waiting for Accept, or accepted and open.", nil, nil)
	descAcceptQueue   = prometheus.NewDesc("fresh_accept_queue", "Connections whose handshake completed, waiting for the monitor's Accept.", nil, nil)
	descAccepted      = prometheus.NewDesc("fresh_connections_accepted_total", "Connections accepted (handshake completed).", nil, nil)
	descClosed        = prometheus.NewDesc("fresh_connections_closed_total", "Accepted connections that ended.", nil, nil)
	descRefused       = prometheus.NewDesc("fresh_connections_refused_total", "Connections closed at once after their handshake because the device's name is one the monitor cannot store (monitor.CheckName): the devices the Listener's VerifyPeer did not refuse at the handshake.", nil, nil)
	descReplaced      = prometheus.NewDesc("fresh_nats_connections_replaced_total", "NATS connections closed for good (nats.go does not reconnect after some server errors) and replaced with a new one.", nil, nil)
	descRetries       = prometheus.NewDesc("fresh_retries_sent_total", "Initials without a token answered with a Retry (address validation).", nil, nil)
	descVersionNeg    = prometheus.NewDesc("fresh_version_negotiations_total", "Initials of another protocol version answered with a version negotiation.", nil, nil)
	descInitials      = prometheus.NewDesc("fresh_initials_dropped_total", "Initials dropped before a handshake began, by reason.", []string{"reason"}, nil)
	descHSStarted     = prometheus.NewDesc("fresh_handshakes_started_total", "Handshakes begun: connections opened for an admitted Initial.", nil, nil)
	descHSCompleted   = prometheus.NewDesc("fresh_handshakes_completed_total", "Handshakes completed (the connection then waits for Accept).", nil, nil)
	descHSFailed      = prometheus.NewDesc("fresh_handshakes_failed_total", "Handshakes that failed, by reason (transport.HandshakeFailures: no_certificate, unknown_authority, expired_certificate, bad_certificate, refused, no_alpn, tls, peer_alert, peer_closed, protocol, timeout, closed, other); each is logged once.", []string{"reason"}, nil)
	descHSTimeouts    = prometheus.NewDesc("fresh_handshake_timeouts_total", "Handshakes that did not complete within the handshake timeout (the same count as fresh_handshakes_failed_total{reason=\"timeout\"}).", nil, nil)
	descDropped       = prometheus.NewDesc("fresh_datagrams_dropped_total", "Datagrams dropped before reaching a connection, by reason.", []string{"reason"}, nil)
	descResets        = prometheus.NewDesc("fresh_stateless_resets_sent_total", "Datagrams for no connection answered with a stateless reset.", nil, nil)
	descResetsLimited = prometheus.NewDesc("fresh_stateless_resets_rate_limited_total", "Stateless resets not sent because the reset rate was used up.", nil, nil)
	descResetsHeld    = prometheus.NewDesc("fresh_stateless_resets_withheld_total", "Datagrams for no connection whose connection ID is another server ID's: no reset sent (only its issuer may reset it).", nil, nil)
	descUpdRecv       = prometheus.NewDesc("fresh_updates_received_total", "Status updates received by the transport.", nil, nil)
	descUpdStale      = prometheus.NewDesc("fresh_updates_stale_total", "Updates dropped as older than one already taken (by the transport, or by the monitor across two connections of one device).", nil, nil)
	descUpdRejected   = prometheus.NewDesc("fresh_updates_rejected_total", "Updates dropped as generated too far in the future.", nil, nil)
	descUpdRead       = prometheus.NewDesc("fresh_updates_read_total", "Updates the monitor took from its connections (ReadUpdate): the freshest of each moment.", nil, nil)
	descUpdStored     = prometheus.NewDesc("fresh_updates_stored_total", "Updates written into the KV bucket.", nil, nil)
	descUpdSuperseded = prometheus.NewDesc("fresh_updates_superseded_total", "Updates replaced by a newer one of the same device before the store could take them.", nil, nil)
	descStoreErrors   = prometheus.NewDesc("fresh_store_errors_total", "Failed writes into JetStream, by store (kv, object).", []string{"store"}, nil)
	descUploadBytes   = prometheus.NewDesc("fresh_upload_bytes_total", "Upload bytes read from the connections and handed to the object store.", nil, nil)
	descUploads       = prometheus.NewDesc("fresh_uploads_total", "Uploads that ended, by result: stored (and committed), failed (the store failed; the agent is told), aborted (the agent or the connection broke off).", []string{"result"}, nil)
	descOrphanChunks  = prometheus.NewDesc("fresh_orphan_chunks_purged_total", "Chunks of dead uploads (their monitor died mid-upload) purged from the object store by the monitor's sweeps, at start and every 10 minutes.", nil, nil)
	descOrphanBytes   = prometheus.NewDesc("fresh_orphan_bytes_purged_total", "Payload bytes of the chunks counted by fresh_orphan_chunks_purged_total.", nil, nil)
	descPackets       = prometheus.NewDesc("fresh_packets_total", "Packets of the accepted connections, by direction.", []string{"direction"}, nil)
	descBytes         = prometheus.NewDesc("fresh_bytes_total", "UDP payload bytes of the accepted connections, by direction.", []string{"direction"}, nil)
)

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descConnections, descAcceptQueue, descAccepted, descClosed, descRefused, descReplaced, descRetries,
		descVersionNeg, descInitials, descHSStarted, descHSCompleted, descHSFailed, descHSTimeouts, descDropped, descResets, descResetsLimited, descResetsHeld, descUpdRecv,
		descUpdStale, descUpdRejected, descUpdRead, descUpdStored, descUpdSuperseded, descStoreErrors,
		descUploadBytes, descUploads, descOrphanChunks, descOrphanBytes, descPackets, descBytes} {
		ch <- d
	}
	c.m.st.writeSeconds.Describe(ch)
	c.m.st.ageSeconds.Describe(ch)
}

// Collect reads the listener's and every open connection's counters now:
// nothing is counted on the packet path for it.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	if ln := m.cfg.Listener; ln != nil {
		ls := ln.Stats()
		ch <- prometheus.MustNewConstMetric(descConnections, prometheus.GaugeValue, float64(ls.Connections))
		ch <- prometheus.MustNewConstMetric(descAcceptQueue, prometheus.GaugeValue, float64(ls.AcceptQueue))
		counter(descRetries, ls.RetriesSent)
		counter(descVersionNeg, ls.VersionNegotiations)
		counter(descInitials, ls.InitialsBadToken, "bad_token")
		counter(descInitials, ls.InitialsUnauthenticated, "unauthenticated")
		counter(descInitials, ls.InitialsTotalLimit, "connection_limit")
		counter(descInitials, ls.InitialsSourceLimit, "source_limit")
		counter(descInitials, ls.InitialsRateLimited, "rate_limited")
		counter(descInitials, ls.InitialsSourceHandshakeLimit, "source_handshake_limit")
		counter(descInitials, ls.InitialsBacklogFull, "accept_queue_full")
		counter(descInitials, ls.InitialsHandshakeLimit, "handshake_limit")
		counter(descHSStarted, ls.HandshakesStarted)
		counter(descHSCompleted, ls.HandshakesCompleted)
		for reason, n := range ls.HandshakeFailures.All() {
			counter(descHSFailed, n, reason)
		}
		counter(descHSTimeouts, ls.HandshakeTimeouts)
		counter(descDropped, ls.WrongAddress, "wrong_address")
		counter(descDropped, ls.NoConnection, "no_connection")
		counter(descDropped, ls.Malformed, "malformed")
		counter(descResets, ls.StatelessResetsSent)
		counter(descResetsLimited, ls.StatelessResetsRateLimited)
		counter(descResetsHeld, ls.StatelessResetsWithheld)
	}
	st := m.st
	// The ended connections' totals and the open ones' counters, read
	// under the same lock that moves a connection from one to the other,
	// so that none is counted twice or not at all.
	st.mu.Lock()
	t := st.ended
	m.mu.Lock()
	for conn := range m.conns {
		t.add(conn.Stats())
	}
	m.mu.Unlock()
	st.mu.Unlock()

	counter(descAccepted, st.accepted.Load())
	counter(descClosed, st.closed.Load())
	counter(descRefused, st.refused.Load())
	counter(descReplaced, m.reconnects.Load())
	counter(descUpdRecv, t.updatesReceived)
	counter(descUpdStale, t.updatesStale+st.updatesStale.Load())
	counter(descUpdRejected, t.updatesRejected)
	counter(descUpdRead, st.updatesRead.Load())
	counter(descUpdStored, st.updatesStored.Load())
	counter(descUpdSuperseded, st.updatesSuperseded.Load())
	counter(descStoreErrors, st.kvErrors.Load(), "kv")
	counter(descStoreErrors, st.objectErrors.Load(), "object")
	counter(descUploadBytes, st.uploadBytes.Load())
	counter(descUploads, st.uploadsStored.Load(), "stored")
	counter(descUploads, st.uploadsFailed.Load(), "failed")
	counter(descUploads, st.uploadsAborted.Load(), "aborted")
	counter(descOrphanChunks, st.orphanChunks.Load())
	counter(descOrphanBytes, st.orphanBytes.Load())
	counter(descPackets, t.packetsReceived, "received")
	counter(descPackets, t.packetsSent, "sent")
	counter(descBytes, t.bytesReceived, "received")
	counter(descBytes, t.bytesSent, "sent")
	st.writeSeconds.Collect(ch)
	st.ageSeconds.Collect(ch)
}
