package monitor

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// stagingStore is a jsStore on a NATS connection of its own (another
// monitor, as far as the store can tell), answering on its owner subject
// like a running monitor.
type stagingStore struct {
	*jsStore
	nc    *nats.Conn
	owner *nats.Subscription
}

func openStagingStore(t *testing.T, url string) *stagingStore {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	s := openTestStore(t, js, 2*time.Second)
	sub, err := s.answerOwners()
	require.NoError(t, err)
	return &stagingStore{jsStore: s, nc: nc, owner: sub}
}

// openTestStore is a jsStore through js, on the default buckets (made
// if need be), as Run opens it.
func openTestStore(t *testing.T, js jetstream.JetStream, timeout time.Duration) *jsStore {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: DefaultKVBucket, History: 1})
	require.NoError(t, err)
	obs, err := js.CreateOrUpdateObjectStore(ctx, jetstream.ObjectStoreConfig{Bucket: DefaultObjectBucket})
	require.NoError(t, err)
	s, err := newJSStore(ctx, js, kv, obs, timeout)
	require.NoError(t, err)
	return s
}

// pendingUpload is a putUpload that has stored part of its bytes and waits
// for the rest.
type pendingUpload struct {
	w     *io.PipeWriter
	data  []byte // all of it, sent and to send
	sent  int
	wrote chan struct{} // the first part is written
	done  chan error
	size  uint64
}

// startUpload begins an upload of n random bytes into s and sends the
// first sent of them.
func startUpload(t *testing.T, s *stagingStore, name string, n, sent int) *pendingUpload {
	t.Helper()
	r, w := io.Pipe()
	u := &pendingUpload{w: w, data: make([]byte, n), sent: sent, wrote: make(chan struct{}), done: make(chan error, 1)}
	_, _ = rand.Read(u.data)
	go func() {
		size, err := s.putUpload(context.Background(), name, "camera-3", r)
		u.size = size
		u.done <- err
	}()
	go func() {
		defer close(u.wrote)
		_, _ = w.Write(u.data[:sent])
	}()
	return u
}

// finish sends the rest and returns putUpload's result.
func (u *pendingUpload) finish(t *testing.T) error {
	t.Helper()
	go func() {
		<-u.wrote
		_, _ = u.w.Write(u.data[u.sent:])
		_ = u.w.Close()
	}()
	select {
	case err := <-u.done:
		return err
	case <-time.After(20 * time.Second):
		t.Fatal("putUpload did not return")
		return nil
	}
}

// objState is the object store stream's chunk and info messages.
func objState(t *testing.T, js jetstream.JetStream) (chunks, infos uint64) {
	t.Helper()
	st, err := js.Stream(context.Background(), "OBJ_"+DefaultObjectBucket)
	require.NoError(t, err)
	info, err := st.Info(context.Background(), jetstream.WithSubjectFilter("$O."+DefaultObjectBucket+".>"))
	require.NoError(t, err)
	for subj, n := range info.State.Subjects {
		if subj[len("$O."+DefaultObjectBucket+"."):][0] == 'C' {
			chunks += n
		} else {
			infos += n
		}
	}
	return chunks, infos
}

// waitChunks waits until the store holds n chunk messages.
func waitChunks(t *testing.T, js jetstream.JetStream, n uint64) {
	t.Helper()
	require.Eventually(t, func() bool { c, _ := objState(t, js); return c >= n }, 10*time.Second, 5*time.Millisecond)
}

// requireObject requires the object store to hold name with exactly data.
func requireObject(t *testing.T, js jetstream.JetStream, name string, data []byte) {
	t.Helper()
	// A deadline of its own: without one the read gets the JetStream's
	// default timeout, a second in these tests, which a loaded machine
	// can spend on a few MiB (the read failed with "nats: timeout" in a
	// suite run beside another build).
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obs, err := js.ObjectStore(ctx, DefaultObjectBucket)
	require.NoError(t, err)
	got, err := obs.GetBytes(ctx, name)
	require.NoError(t, err, "reading the object %s back", name)
	require.Equal(t, sha256.Sum256(data), sha256.Sum256(got))
}

// A monitor that dies mid-upload (its NATS connection gone, as a killed
// process's is) leaves a staging record and chunks; the next monitor's
// first sweep removes them all and counts the chunks and their bytes.
func TestSweepPurgesUploadOfDeadMonitor(t *testing.T) {
	nc, js := startNATS(t)
	dead := openStagingStore(t, nc.ConnectedUrl())
	const n = 8 * objectChunkSize
	u := startUpload(t, dead, "camera-3/1", n+objectChunkSize, n)
	waitChunks(t, js, 8)
	dead.nc.Close() // the process dies: its connection with it
	_ = u.w.CloseWithError(errors.New("killed"))
	require.Error(t, <-u.done)
	chunks, infos := objState(t, js)
	require.EqualValues(t, 8, chunks, "the dead monitor could not purge its chunks")
	require.EqualValues(t, 1, infos, "nor its staging record")
	obs, err := js.ObjectStore(context.Background(), DefaultObjectBucket)
	require.NoError(t, err)
	_, err = obs.List(context.Background())
	require.ErrorIs(t, err, jetstream.ErrNoObjectsFound, "a staging record is not an object")

	m := startMonitor(t, newPKI(t), js)
	require.Eventually(t, func() bool { return m.sweeps.Load() >= 1 }, 20*time.Second, 5*time.Millisecond)
	chunks, infos = objState(t, js)
	require.Zero(t, chunks)
	require.Zero(t, infos)
	require.EqualValues(t, 8, m.st.orphanChunks.Load())
	require.EqualValues(t, n, m.st.orphanBytes.Load())
}

// liveUpload is an upload of camera-3/1 by one monitor (owner) that has
// stored its first MiB and waits for the rest, and another monitor
// (sweeper) on the same JetStream.
func liveUpload(t *testing.T, size int) (js jetstream.JetStream, owner, sweeper *stagingStore, u *pendingUpload) {
	t.Helper()
	nc, js := startNATS(t)
	owner = openStagingStore(t, nc.ConnectedUrl())
	sweeper = openStagingStore(t, nc.ConnectedUrl())
	u = startUpload(t, owner, "camera-3/1", size, 1<<20)
	waitChunks(t, js, 8)
	return js, owner, sweeper, u
}

// A live upload of another monitor (it answers for it) is left by a
// sweep, and is committed whole afterwards.
func TestSweepLeavesLiveUploadOfAnotherMonitor(t *testing.T) {
	js, _, sweeper, u := liveUpload(t, 3<<20)
	var st counters
	res, err := sweeper.sweep(context.Background(), &st)
	require.NoError(t, err)
	require.Equal(t, 1, res.live)
	require.Zero(t, res.uploads)
	require.Zero(t, st.orphanChunks.Load())

	require.NoError(t, u.finish(t))
	requireObject(t, js, "camera-3/1", u.data)
	res, err = sweeper.sweep(context.Background(), &st)
	require.NoError(t, err)
	require.Zero(t, res.uploads+int64(res.live), "a committed object is neither live nor dead")
}

// A live upload whose owner does not answer (its NATS connection down
// for a moment) is taken for dead and removed; its commit then fails
// (the staging record it is conditional on is gone), so no object is
// listed without its chunks, and nothing of it is left.
func TestUploadTakenForDeadIsNotCommitted(t *testing.T) {
	js, owner, sweeper, u := liveUpload(t, 3<<20)
	require.NoError(t, owner.owner.Unsubscribe())
	var st counters
	res, err := sweeper.sweep(context.Background(), &st)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.uploads)
	require.GreaterOrEqual(t, st.orphanChunks.Load(), int64(8))

	require.ErrorIs(t, u.finish(t), errTakenForDead)
	obs, err := js.ObjectStore(context.Background(), DefaultObjectBucket)
	require.NoError(t, err)
	_, err = obs.List(context.Background(), jetstream.ListObjectsShowDeleted())
	require.ErrorIs(t, err, jetstream.ErrNoObjectsFound)
	chunks, infos := objState(t, js)
	require.Zero(t, chunks, "the owner purged what it wrote after the sweep")
	require.Zero(t, infos)
}

// A sweep that read an upload's staging record before its owner
// committed it removes nothing: the commit won.
func TestSweepAfterCommitLeavesObject(t *testing.T) {
	js, owner, sweeper, u := liveUpload(t, 2<<20)
	seq, staged, err := sweeper.record(context.Background(), sweeper.metaSubject("camera-3/1"), "")
	require.NoError(t, err)
	require.Zero(t, seq, "no record names the empty ID")
	obs, err := js.ObjectStore(context.Background(), DefaultObjectBucket)
	require.NoError(t, err)
	infos, err := obs.List(context.Background(), jetstream.ListObjectsShowDeleted())
	require.NoError(t, err)
	require.Len(t, infos, 1)
	staged = infos[0]
	require.True(t, staged.Deleted)
	require.Equal(t, owner.owner.Subject, ownerSubjectPrefix+staged.Metadata[metaOwnerKey])

	require.NoError(t, u.finish(t))
	var st counters
	_, removed, err := sweeper.purgeDead(context.Background(), staged.Name, staged.NUID, staged.Metadata[metaOwnerKey], 16, &st)
	require.NoError(t, err)
	require.False(t, removed)
	requireObject(t, js, "camera-3/1", u.data)
}

// Chunks no record names are removed at once if a staging writer wrote
// them (they carry HeaderUploadOwner: their upload can no longer be
// committed), after unstagedGrace otherwise (another writer's, whose
// upload may still be under way).
func TestSweepUnnamedChunks(t *testing.T) {
	nc, js := startNATS(t)
	s := openStagingStore(t, nc.ConnectedUrl())
	ctx := context.Background()
	publish := func(id string, owner string, sizes ...int) {
		for _, size := range sizes {
			m := nats.NewMsg("$O." + DefaultObjectBucket + ".C." + id)
			if owner != "" {
				m.Header.Set(HeaderUploadOwner, owner)
			}
			m.Data = make([]byte, size)
			_, err := js.PublishMsg(ctx, m)
			require.NoError(t, err)
		}
	}
	publish("staged", "someone", 100, 100, 40) // the last chunk short
	publish("foreign", "", 100, 100)
	var st counters
	res, err := s.sweep(ctx, &st)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.uploads)
	require.Equal(t, 1, res.young)
	require.EqualValues(t, 3, st.orphanChunks.Load())
	require.EqualValues(t, 240, st.orphanBytes.Load())
	chunks, _ := objState(t, js)
	require.EqualValues(t, 2, chunks, "the unstaged chunks wait for the grace")

	s.grace = 0
	res, err = s.sweep(ctx, &st)
	require.NoError(t, err)
	require.EqualValues(t, 1, res.uploads)
	chunks, _ = objState(t, js)
	require.Zero(t, chunks)
	require.EqualValues(t, 5, st.orphanChunks.Load())
}

// An upload's name is never taken over: staging is conditional on the
// info subject holding nothing.
func TestStagingNeverReplacesAnObject(t *testing.T) {
	nc, js := startNATS(t)
	s := openStagingStore(t, nc.ConnectedUrl())
	u := startUpload(t, s, "camera-3/1", 1000, 1000)
	require.NoError(t, u.finish(t))
	v := startUpload(t, s, "camera-3/1", 1000, 1000)
	require.ErrorContains(t, v.finish(t), "exists already")
	requireObject(t, js, "camera-3/1", u.data)
}

// lostCommit is a JetStream on which the write of an upload's info (the
// commit) is held back and reported failed, as when its acknowledgement
// does not come in time or the monitor is stopped while it waits; and a
// stream on which the held info is stored just before the upload's own
// clean-up purges its info subject: it landed between the clean-up's
// read of the subject and its purge.
type lostCommit struct {
	jetstream.JetStream
	held     *nats.Msg
	heldOpts []jetstream.PublishOpt
}

func (j *lostCommit) PublishMsg(ctx context.Context, m *nats.Msg, opts ...jetstream.PublishOpt) (*jetstream.PubAck, error) {
	var info jetstream.ObjectInfo
	if strings.HasPrefix(m.Subject, "$O."+DefaultObjectBucket+".M.") && json.Unmarshal(m.Data, &info) == nil && !info.Deleted {
		j.held, j.heldOpts = m, opts
		return nil, context.DeadlineExceeded
	}
	return j.JetStream.PublishMsg(ctx, m, opts...)
}

type landsBeforePurge struct {
	jetstream.Stream
	j      *lostCommit
	landed bool
}

func (s *landsBeforePurge) Purge(ctx context.Context, opts ...jetstream.StreamPurgeOpt) error {
	var req jetstream.StreamPurgeRequest
	for _, o := range opts {
		if err := o(&req); err != nil {
			return err
		}
	}
	if held := s.j.held; held != nil && req.Subject == held.Subject {
		s.j.held = nil
		_, err := s.j.JetStream.PublishMsg(ctx, held, s.j.heldOpts...)
		s.landed = err == nil
	}
	return s.Stream.Purge(ctx, opts...)
}

// An upload whose commit was reported failed while the info was still on
// its way leaves nothing: the info may land between the clean-up's read
// of the info subject and its purge of the staging record (the purge, up
// to the staging record's sequence, leaves it), and the clean-up must not
// then remove the chunks under an info that names them. The crash test
// found an object listed without its chunks after a clean stop, whose
// reader waited for chunks until it timed out.
func TestFailedCommitLeavesNoObjectWithoutChunks(t *testing.T) {
	_, js := startNATS(t)
	lc := &lostCommit{JetStream: js}
	s := openTestStore(t, lc, 2*time.Second)
	lbp := &landsBeforePurge{Stream: s.objStream, j: lc}
	s.objStream = lbp
	data := make([]byte, 3*objectChunkSize+100)
	_, _ = rand.Read(data)
	_, err := s.putUpload(context.Background(), "camera-3/2026-12-07T00:00:00.000000Z", "camera-3", bytes.NewReader(data))
	require.Error(t, err, "the commit was reported failed")
	require.True(t, lbp.landed, "the held info landed before the clean-up's purge: the race was run")
	chunks, infos := objState(t, js)
	require.Zero(t, infos, "an info left by a failed upload")
	require.Zero(t, chunks, "chunks left by a failed upload")
}
