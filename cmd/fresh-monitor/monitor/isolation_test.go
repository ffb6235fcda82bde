package monitor

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/cmd/fresh-monitor/internal/fleettest"
	"github.com/fresh-udp/fresh/transport"
)

// Names the monitor takes and refuses, and what the refusal says: at most
// a prefix of the name, escaped, never the whole of a long one.
func TestCheckName(t *testing.T) {
	for _, name := range []string{
		"sensor-1", "pump.7", "*", ">", "..", ".", "a b", "dev/sub", "=", "capteur-é",
		strings.Repeat("a", MaxNameLength), strings.Repeat("é", MaxNameLength), strings.Repeat("\U0001D11E", MaxNameLength),
	} {
		require.NoError(t, CheckName(name), "%q", name)
	}
	for _, tc := range []struct{ name, says string }{
		{"", "empty"},
		{strings.Repeat("a", MaxNameLength+1), "65 characters (65 bytes), more than 64"},
		{strings.Repeat("é", 500), "500 characters (1000 bytes), more than 64"},
		{"sensor\nupload complete", "control character U+000A at byte 6"},
		{"a\x00", "control character U+0000"},
		{"\x1b[2J", "control character U+001B"},
		{"del\x7f", "control character U+007F"},
		{"nel\u0085", "control character U+0085"},
		{"\xff\xfe", "not valid UTF-8"},
	} {
		err := CheckName(tc.name)
		require.ErrorIs(t, err, ErrBadName, "%q", tc.name)
		require.ErrorContains(t, err, tc.says)
		require.Less(t, len(err.Error()), 200, "the error quotes a prefix only")
		require.NotContains(t, err.Error(), "\n")
	}
}

// longestName is the longest name CheckName takes, in bytes: 64
// characters of 4 bytes each.
var longestName = strings.Repeat("\U0010FFFD", MaxNameLength)

// The subjects of the longest name, with the longest bucket names
// JetStream allows (its stream names are at most 255 bytes: KV_ and OBJ_
// and the bucket), fit in half of NATS's default max_control_line, protocol line and
// all; and a real server stores such a device's update and upload.
func TestLongestNameFitsNATS(t *testing.T) {
	require.NoError(t, CheckName(longestName))
	require.Equal(t, 4*MaxNameLength, len(longestName))
	kvBucket, objBucket := strings.Repeat("k", 255-len("KV_")), strings.Repeat("o", 255-len("OBJ_"))
	key := Key(longestName)
	require.Len(t, key, 3*4*MaxNameLength)
	objName := ObjectName(longestName, time.Now())
	const maxControlLine = 4096 // nats-server's MAX_CONTROL_LINE_SIZE
	reply := "_INBOX." + strings.Repeat("x", 22) + "." + strings.Repeat("y", 22)
	for _, subject := range []string{
		"$KV." + kvBucket + "." + key,
		"$O." + objBucket + ".M." + base64.URLEncoding.EncodeToString([]byte(objName)),
		SubjectPrefix + key,
	} {
		line := "HPUB " + subject + " " + reply + " 1000 100000\r\n"
		require.LessOrEqual(t, len(line), maxControlLine/2, "%.40s…", subject)
	}

	_, js := startNATS(t)
	p := newPKI(t, longestName, "sensor-1")
	m := startMonitor(t, p, js, func(m *Monitor) { m.cfg.KVBucket, m.cfg.ObjectBucket = kvBucket, objBucket })
	conn := m.dial(t, p, longestName)
	require.NoError(t, conn.SendUpdate([]byte("long")))
	data := make([]byte, 300<<10)
	_, _ = rand.Read(data)
	upload(t, conn, data)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	require.NoError(t, conn.WaitCommitted(ctx, int64(len(data))))
	kv, err := js.KeyValue(ctx, kvBucket)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		e, err := kv.Get(ctx, key)
		return err == nil && decode(t, e).Device == longestName
	}, 10*time.Second, 10*time.Millisecond)
	obs, err := js.ObjectStore(ctx, objBucket)
	require.NoError(t, err)
	infos, err := obs.List(ctx)
	require.NoError(t, err)
	require.Len(t, infos, 1)
	require.Equal(t, longestName, infos[0].Metadata["device"])
	require.True(t, m.Ready())
	// Another device after it: the connection is the same one.
	other := m.dial(t, p, "sensor-1")
	require.NoError(t, other.SendUpdate([]byte("after")))
	require.Eventually(t, func() bool {
		e, err := kv.Get(ctx, Key("sensor-1"))
		return err == nil && string(decode(t, e).Payload) == "after"
	}, 10*time.Second, 10*time.Millisecond)
	require.Zero(t, m.reconnects.Load())
}

// VerifyPeerName refuses a certificate whose CommonName CheckName
// refuses, and takes one without a name (named by its address).
func TestVerifyPeerName(t *testing.T) {
	cert := func(cn string) tls.ConnectionState {
		c := &x509.Certificate{}
		c.Subject.CommonName = cn
		return tls.ConnectionState{PeerCertificates: []*x509.Certificate{c}}
	}
	require.NoError(t, VerifyPeerName(tls.ConnectionState{}))
	require.NoError(t, VerifyPeerName(cert("")))
	require.NoError(t, VerifyPeerName(cert("pump.7")))
	require.ErrorIs(t, VerifyPeerName(cert(strings.Repeat("x", 1000))), ErrBadName)
	require.ErrorIs(t, VerifyPeerName(cert("a\nb")), ErrBadName)
}

// A device whose name the monitor cannot store that reaches Run all the
// same (its Listener without VerifyPeerName) is closed at once with
// CodeNameRefused and counted; nothing of it reaches NATS, and the other
// devices are stored as before.
func TestNameRefusedAfterHandshakeWithoutVerifyPeer(t *testing.T) {
	_, js := startNATS(t)
	long := strings.Repeat("é", 500) // 1,000 bytes, 3,000 in a key
	p := newPKI(t, long, "sensor-1")
	m := startMonitor(t, p, js)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	bad, err := transport.Dial(ctx, m.addr, transport.Config{TLS: &tls.Config{
		RootCAs: p.ca.Pool(), ServerName: "localhost", Certificates: []tls.Certificate{p.clients[long]},
	}})
	if err == nil { // the handshake completed: the close comes after
		defer bad.Abort()
		_, err = bad.ReadUpdate(ctx)
	}
	var ae *transport.ApplicationError
	require.ErrorAs(t, err, &ae)
	require.Equal(t, CodeNameRefused, ae.Code)
	require.Contains(t, ae.Reason, "device name refused")
	require.EqualValues(t, 1, m.st.refused.Load())
	require.Zero(t, m.st.accepted.Load())

	good := m.dial(t, p, "sensor-1")
	require.NoError(t, good.SendUpdate([]byte("fine")))
	kv := m.kv(t)
	require.Eventually(t, func() bool {
		keys, err := kv.Keys(ctx)
		return err == nil && len(keys) == 1 && keys[0] == Key("sensor-1")
	}, 10*time.Second, 10*time.Millisecond, "only the good device's key")
	require.True(t, m.Ready())
}

// natsServer starts an embedded JetStream server with o's settings (a
// loopback port and a store of its own added).
func natsServer(t *testing.T, o server.Options) *server.Server {
	t.Helper()
	o.Host, o.Port, o.JetStream, o.StoreDir, o.NoLog, o.NoSigs = "127.0.0.1", server.RANDOM_PORT, true, t.TempDir(), true, true
	ns, err := server.NewServer(&o)
	require.NoError(t, err)
	go ns.Start()
	require.True(t, ns.ReadyForConnections(10*time.Second), "nats-server not ready")
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	return ns
}

// The monitor's NATS connection comes back after the server closes it,
// over TCP and in-process alike: a kicked client reconnects by itself
// (nats.go), and one the server closes after a protocol line over its
// max_control_line, which nats.go closes for good, is replaced with one
// from Config.Reconnect. Either way Ready says true again and the
// device's updates are stored again.
func TestNATSConnectionRecoversFromServerClose(t *testing.T) {
	for _, inProcess := range []bool{false, true} {
		for _, how := range []string{"kicked", "closed for good"} {
			t.Run(fmt.Sprintf("in-process=%v/%s", inProcess, how), func(t *testing.T) {
				ns := natsServer(t, server.Options{})
				connect := func() (*nats.Conn, error) {
					opts := []nats.Option{nats.MaxReconnects(-1), nats.ReconnectWait(100 * time.Millisecond),
						nats.ErrorHandler(func(*nats.Conn, *nats.Subscription, error) {})}
					if inProcess {
						opts = append(opts, nats.InProcessServer(ns))
					}
					return nats.Connect(ns.ClientURL(), opts...)
				}
				var opened []*nats.Conn
				t.Cleanup(func() {
					for _, nc := range opened {
						nc.Close()
					}
				})
				newJS := func(context.Context) (jetstream.JetStream, error) {
					nc, err := connect()
					if err != nil {
						return nil, err
					}
					opened = append(opened, nc) // only keepConnected calls it, one at a time
					return jetstream.New(nc, jetstream.WithDefaultTimeout(time.Second))
				}
				js, err := newJS(context.Background())
				require.NoError(t, err)
				p := newPKI(t, "sensor-1")
				m := startMonitor(t, p, js, func(m *Monitor) { m.cfg.Reconnect = newJS })
				conn := m.dial(t, p, "sensor-1")
				fleettest.SendEvery(t, conn, 20*time.Millisecond, nil)
				reader, err := nats.Connect(ns.ClientURL()) // not the monitor's, which is closed
				require.NoError(t, err)
				t.Cleanup(reader.Close)
				rjs, err := jetstream.New(reader)
				require.NoError(t, err)
				kv, err := rjs.KeyValue(context.Background(), DefaultKVBucket)
				require.NoError(t, err)
				fleettest.StoredAfter(t, kv, Key("sensor-1"), time.Now(), "not stored before the close")

				nc := m.conn()
				switch how {
				case "kicked":
					cid, err := nc.GetClientID()
					require.NoError(t, err)
					require.NoError(t, ns.DisconnectClientByID(cid))
					require.Eventually(t, func() bool { return nc.Stats().Reconnects == 1 }, 10*time.Second, time.Millisecond, "nats.go reconnects a kicked client")
				case "closed for good":
					// A line over the server's max_control_line: it answers
					// -ERR 'Maximum Control Line Exceeded' and closes, and
					// nats.go then closes the connection for good.
					require.NoError(t, nc.Publish(strings.Repeat("x", 5000), nil))
					require.Eventually(t, nc.IsClosed, 10*time.Second, time.Millisecond)
					require.Eventually(t, func() bool { return m.reconnects.Load() == 1 }, 10*time.Second, time.Millisecond, "the store is not replaced")
					require.NotSame(t, nc, m.conn())
				}
				require.Eventually(t, m.Ready, 10*time.Second, time.Millisecond, "not ready again")
				fleettest.StoredAfter(t, kv, Key("sensor-1"), time.Now(), "not stored after the connection came back")
			})
		}
	}
}

// failingUploads fails the uploads of one device after reading a part of
// them, as a store that refuses that upload would; the others go on.
type failingUploads struct {
	uploadStore
	device string
}

func (f *failingUploads) putUpload(ctx context.Context, name, device string, r io.Reader) (uint64, error) {
	if device == f.device {
		_, _ = io.CopyN(io.Discard, r, 64<<10)
		return 0, errors.New("the object store refused this upload")
	}
	return f.uploadStore.putUpload(ctx, name, device, r)
}

// Devices whose every write fails fail no other device's: one whose KV
// subject the server refuses (the monitor's NATS user may not publish
// there), one whose upload fails; beside them two devices' updates keep
// being stored, the other upload is committed, and the monitor stays
// ready.
func TestOneDeviceFailingWritesFailNoOther(t *testing.T) {
	ns := natsServer(t, server.Options{Users: []*server.User{{
		Username: "monitor", Password: "secret",
		Permissions: &server.Permissions{Publish: &server.SubjectPermission{
			Allow: []string{">"}, Deny: []string{"$KV." + DefaultKVBucket + "." + Key("bad")},
		}},
	}}})
	var refusals atomic.Int64
	nc, err := nats.Connect(ns.ClientURL(), nats.UserInfo("monitor", "secret"),
		nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
			if errors.Is(err, nats.ErrPermissionViolation) {
				refusals.Add(1)
			}
		}))
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	p := newPKI(t, "bad", "bad-upload", "good-1", "good-2")
	m := startMonitor(t, p, js, func(m *Monitor) {
		m.cfg.StoreTimeout = 500 * time.Millisecond // the refused writes time out
		m.wrapUploads = func(s uploadStore) uploadStore { return &failingUploads{uploadStore: s, device: "bad-upload"} }
	})
	conns := map[string]*transport.Conn{}
	for _, name := range []string{"bad", "bad-upload", "good-1", "good-2"} {
		conns[name] = m.dial(t, p, name)
		fleettest.SendEvery(t, conns[name], 20*time.Millisecond, nil)
	}
	data := make([]byte, 2<<20)
	_, _ = rand.Read(data)
	go func() { _, _ = conns["bad-upload"].Write(data) }()
	go func() { upload(t, conns["good-1"], data) }()

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	require.NoError(t, conns["good-1"].WaitCommitted(ctx, int64(len(data))), "the other upload is committed")
	err = conns["bad-upload"].WaitCommitted(ctx, int64(len(data)))
	var ae *transport.ApplicationError
	require.ErrorAs(t, err, &ae, "the failing device hears its upload failed")
	require.Equal(t, CodeStorageFailed, ae.Code)

	// Over a few of the refused device's write timeouts, the others'
	// newest updates keep being stored.
	kv := m.kv(t)
	for range 3 {
		t0 := time.Now()
		fleettest.StoredAfter(t, kv, Key("good-1"), t0)
		fleettest.StoredAfter(t, kv, Key("good-2"), t0)
		require.True(t, m.Ready())
		time.Sleep(m.cfg.StoreTimeout)
	}
	_, err = kv.Get(ctx, Key("bad"))
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound, "the refused device's key was never written")
	require.Eventually(t, func() bool { return m.st.kvErrors.Load() > 0 }, 10*time.Second, time.Millisecond, "the refused writes are counted")
	require.Positive(t, refusals.Load(), "the server refused them")
	require.EqualValues(t, 1, m.st.uploadsFailed.Load())
	require.EqualValues(t, 1, m.st.uploadsStored.Load())
	require.False(t, nc.IsClosed())
	require.Zero(t, m.reconnects.Load())
}
