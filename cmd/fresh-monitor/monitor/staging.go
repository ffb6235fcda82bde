package monitor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Crash consistency of uploads. An upload's chunks are stored before the
// info message that makes its object exist (objput.go), so a monitor that
// dies mid-upload (SIGKILL, a crash, its host lost) leaves chunks that
// nothing lists and nothing removes. Telling those from a live upload's is
// the whole problem: several monitors may write into one object store (a
// cluster, -nats, -reuseport groups), and a live upload of another monitor
// also has chunks and no info yet. So each upload is staged:
//
//  1. Before its first chunk the owner writes a staging record on the
//     object's info subject: an object info marked deleted (so List, Get
//     and the nats CLI do not show it) that names the upload's chunk ID
//     and its owner, a random ID per store the monitor opens (one per
//     NATS connection: one per process, unless a connection closed for
//     good is replaced). The write is conditional on the subject holding
//     nothing, so it never replaces an object of the same name. Its
//     stream sequence is S.
//  2. The chunks follow, each with the header HeaderUploadOwner.
//  3. The commit is the object's info written over the staging record,
//     conditional on the subject's last message still being S
//     (Nats-Expected-Last-Subject-Sequence). Only then is the upload
//     committed to the agent.
//
// An upload is dead when its owner is: each monitor answers on the core
// subject _fresh.owner.<its ID> whether an upload is one of its own in
// progress, and a monitor that is gone has no subscription there, so a
// request meets "no responders" at once (its NATS connection closed: the
// process died, or its server with it). An owner that does not answer in
// time is taken for alive, and asked again at the next sweep.
//
// The sweep, at start and every sweepInterval, (a) lists the chunk
// subjects, then (b) the info subjects' last messages, in that order: a
// chunk it saw in (a) had its staging record written before, so (b) shows
// that record, or the committed info, or nothing if the upload has ended
// without an object. It then removes (c) each staged upload whose owner is
// dead: its staging record first, purged only up to S (so a commit that
// won the race stays, and a commit after it fails its condition, as the
// subject's last sequence is no longer S), then, unless a committed info
// now names its chunks, the chunks; and (d) the chunks that no record
// names: at once if they carry HeaderUploadOwner (their upload cannot be
// committed any more), after unstagedGrace without a new chunk if not
// (chunks of a writer that stages nothing: an older fresh-monitor during a
// rolling upgrade, nats object put into the bucket, whose upload may still
// be under way). A sweep that dies half-way leaves what the next one
// removes. What a sweep purged is counted in fresh_orphan_chunks_purged_total
// and fresh_orphan_bytes_purged_total.
//
// Safety rests on the two conditional writes, not on timing: whatever
// the clocks and delays, a staging record is removed before its chunks,
// and an info is written only while its staging record stands, so no
// object is ever listed without its chunks. A live upload wrongly taken
// for dead (its owner's NATS connection down for a moment) fails with a
// storage error to its agent, which sends it again.

const (
	// HeaderUploadOwner is the header of an upload's chunks: its owner's
	// ID. A chunk that carries it and that no record names is an orphan.
	HeaderUploadOwner = "Fresh-Upload-Owner"
	// metaOwnerKey is the staging record's metadata entry of its owner.
	metaOwnerKey = "fresh-upload-owner"
	// ownerSubjectPrefix: a monitor answers on ownerSubjectPrefix+<its
	// ID> whether an upload ID (the request's data) is its own, in
	// progress ("live") or not ("gone").
	ownerSubjectPrefix = "_fresh.owner."
	// sweepInterval is the time between two sweeps after the first, at
	// start: the chunks of a monitor that died and did not come back
	// (while this one runs), and unstaged chunks past unstagedGrace, wait
	// at most this long.
	sweepInterval = 10 * time.Minute
	// unstagedGrace: unstaged chunks whose newest is older are taken for
	// the remains of a dead upload. An older fresh-monitor waits at most
	// its store timeout per chunk, and its agent's connection ends after
	// an idle timeout of seconds, so a live upload's chunks are minutes
	// apart at most.
	unstagedGrace = 10 * time.Minute
)

// newID is a random 128-bit ID in hex: an upload's chunk ID (the
// object's NUID) or a monitor's owner ID.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// owners is this monitor's uploads in progress, by chunk ID.
type owners struct {
	mu   sync.Mutex
	live map[string]struct{}
}

func (o *owners) add(id string) {
	o.mu.Lock()
	o.live[id] = struct{}{}
	o.mu.Unlock()
}

func (o *owners) remove(id string) {
	o.mu.Lock()
	delete(o.live, id)
	o.mu.Unlock()
}

func (o *owners) has(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.live[id]
	return ok
}

// answerOwners subscribes to this monitor's owner subject, answering
// the sweeps of other monitors (and of this one's) until the returned
// subscription is unsubscribed.
func (s *jsStore) answerOwners() (*nats.Subscription, error) {
	sub, err := s.nc.Subscribe(ownerSubjectPrefix+s.owner, func(m *nats.Msg) {
		answer := "gone"
		if s.inProgress.has(string(m.Data)) {
			answer = "live"
		}
		_ = m.Respond([]byte(answer))
	})
	if err != nil {
		return nil, fmt.Errorf("monitor: answering on %s: %w", ownerSubjectPrefix+s.owner, err)
	}
	return sub, s.flush(context.Background()) // subscribed at the server before any upload is staged
}

// ownerLive says whether the upload id of owner is in progress: known is
// false when the owner did not answer either way (a timeout, NATS down).
func (s *jsStore) ownerLive(ctx context.Context, owner, id string) (live, known bool) {
	if owner == s.owner {
		return s.inProgress.has(id), true
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	m, err := s.nc.RequestWithContext(ctx, ownerSubjectPrefix+owner, []byte(id))
	switch {
	case errors.Is(err, nats.ErrNoResponders):
		return false, true
	case err != nil:
		return false, false
	}
	return string(m.Data) == "live", true
}

// stage writes the staging record of upload id on metaSubj, conditional
// on the subject holding nothing, and returns its stream sequence.
func (s *jsStore) stage(ctx context.Context, metaSubj, name, device, id string) (uint64, error) {
	rec := jetstream.ObjectInfo{
		ObjectMeta: jetstream.ObjectMeta{Name: name, Metadata: map[string]string{"device": device, metaOwnerKey: s.owner}},
		Bucket:     s.objBucket, NUID: id, Deleted: true,
	}
	m := nats.NewMsg(metaSubj)
	m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
	var err error
	if m.Data, err = json.Marshal(rec); err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	ack, err := s.js.PublishMsg(ctx, m, jetstream.WithExpectLastSequencePerSubject(0))
	if wrongLastSequence(err) {
		return 0, fmt.Errorf("an object named %q exists already", name)
	}
	if err != nil {
		return 0, fmt.Errorf("staging the upload: %w", err)
	}
	return ack.Sequence, nil
}

// record is the last message on metaSubj if it is upload id's record
// (its staging record or its info), with its stream sequence; seq 0 if
// the subject holds none of id's.
func (s *jsStore) record(ctx context.Context, metaSubj, id string) (seq uint64, info *jetstream.ObjectInfo, err error) {
	m, err := s.objStream.GetLastMsgForSubject(ctx, metaSubj)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil, nil
	}
	if err != nil {
		return 0, nil, err
	}
	info = new(jetstream.ObjectInfo)
	if json.Unmarshal(m.Data, info) != nil || info.NUID != id {
		return 0, nil, nil
	}
	return m.Sequence, info, nil
}

// purgeRecord purges metaSubj up to and including seq: a message written
// since (another's, or the upload's commit that won a race with a sweep)
// stays.
func (s *jsStore) purgeRecord(ctx context.Context, metaSubj string, seq uint64) error {
	return s.objStream.Purge(ctx, jetstream.WithPurgeSubject(metaSubj), jetstream.WithPurgeSequence(seq+1))
}

// unstage removes the owner's own record of upload id from metaSubj, if
// the subject's last message is one: its staging record, or its info
// whose write was not acknowledged. That write may still be on its way
// when the staging record is read, and land before the purge, which
// (up to the staging record's sequence) leaves it: so the subject is read
// again after each purge until it holds none of id's. Once the staging
// record is gone no info of id can land (its write is conditional on the
// staging record being the subject's last message), so this ends at the
// second read at the latest; the bound is for a store that misbehaves.
func (s *jsStore) unstage(ctx context.Context, metaSubj, id string) error {
	for range 4 {
		seq, _, err := s.record(ctx, metaSubj, id)
		if err != nil || seq == 0 {
			return err
		}
		if err := s.purgeRecord(ctx, metaSubj, seq); err != nil {
			return err
		}
	}
	return fmt.Errorf("the record of upload %s on %s is still there after 4 purges", id, metaSubj)
}

// sweepResult is what one sweep found and did.
type sweepResult struct {
	uploads, chunks, bytes int64 // dead uploads purged, and their chunks and payload bytes
	live                   int   // staged uploads in progress, left
	unknown                int   // staged uploads whose owner did not answer, left
	young                  int   // unstaged chunk IDs within unstagedGrace, left
}

// sweep finds the dead uploads in the object store and purges them (see
// the comment at the top of this file), counting what it purged in st.
func (s *jsStore) sweep(ctx context.Context, st *counters) (sweepResult, error) {
	var res sweepResult
	chunkPrefix := "$O." + s.objBucket + ".C."
	// (a) the chunk subjects, before the records.
	si, err := s.objStream.Info(ctx, jetstream.WithSubjectFilter(chunkPrefix+">"))
	if err != nil {
		return res, fmt.Errorf("listing the chunks: %w", err)
	}
	// (b) the records: the last message of every info subject.
	obs, err := s.js.ObjectStore(ctx, s.objBucket)
	if err != nil {
		return res, err
	}
	infos, err := obs.List(ctx, jetstream.ListObjectsShowDeleted())
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		return res, fmt.Errorf("listing the objects: %w", err)
	}
	named := make(map[string]bool, len(infos)) // chunk IDs a committed info or a staging record names
	for _, info := range infos {
		owner := info.Metadata[metaOwnerKey]
		switch {
		case !info.Deleted:
			named[info.NUID] = true
		case owner == "":
			// Another writer's deletion marker: its chunks, if left, are
			// unstaged ones.
		default:
			// (c) a staged upload: left while its owner runs it.
			live, known := s.ownerLive(ctx, owner, info.NUID)
			named[info.NUID] = true
			switch {
			case !known:
				res.unknown++
			case live:
				res.live++
			default:
				n, removed, err := s.purgeDead(ctx, info.Name, info.NUID, owner, si.State.Subjects[chunkPrefix+info.NUID], st)
				if err != nil {
					return res, err
				}
				if !removed {
					continue
				}
				res.uploads++
				res.chunks += n.chunks
				res.bytes += n.bytes
			}
		}
	}
	// (d) the chunks no record names.
	for subj, count := range si.State.Subjects {
		id := strings.TrimPrefix(subj, chunkPrefix)
		if named[id] {
			continue
		}
		last, err := s.objStream.GetLastMsgForSubject(ctx, subj)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue // purged since (a)
		}
		if err != nil {
			return res, err
		}
		why := "no record names them"
		if last.Header.Get(HeaderUploadOwner) == "" {
			if time.Since(last.Time) < s.grace {
				res.young++
				continue
			}
			why = fmt.Sprintf("unstaged, the newest %v old", time.Since(last.Time).Round(time.Second))
		}
		n, err := s.purgeChunks(ctx, subj, count, last, st)
		if err != nil {
			return res, err
		}
		s.log.Info("purged a dead upload's chunks", "chunk_id", id, "owner", last.Header.Get(HeaderUploadOwner),
			"chunks", n.chunks, "bytes", n.bytes, "why", why)
		res.uploads++
		res.chunks += n.chunks
		res.bytes += n.bytes
	}
	return res, nil
}

// purged is what purgeChunks removed.
type purged struct{ chunks, bytes int64 }

// purgeDead removes a dead staged upload: its staging record, up to its
// sequence, then its chunks unless a committed info names them (its
// owner's commit won the race).
func (s *jsStore) purgeDead(ctx context.Context, name, id, owner string, count uint64, st *counters) (n purged, removed bool, err error) {
	metaSubj := s.metaSubject(name)
	seq, info, err := s.record(ctx, metaSubj, id)
	if err == nil && seq > 0 {
		if !info.Deleted {
			return n, false, nil // committed since the listing
		}
		err = s.purgeRecord(ctx, metaSubj, seq)
	}
	if err == nil {
		seq, info, err = s.record(ctx, metaSubj, id)
		if err == nil && seq > 0 && !info.Deleted {
			return n, false, nil // committed between the read and the purge
		}
	}
	if err != nil {
		return n, false, fmt.Errorf("removing the staging record of %q: %w", name, err)
	}
	if count > 0 {
		subj := "$O." + s.objBucket + ".C." + id
		last, err := s.objStream.GetLastMsgForSubject(ctx, subj)
		if err == nil {
			n, err = s.purgeChunks(ctx, subj, count, last, st)
		}
		if err != nil && !errors.Is(err, jetstream.ErrMsgNotFound) {
			return n, true, err
		}
	}
	s.log.Info("purged a dead upload", "object", name, "owner", owner, "chunks", n.chunks, "bytes", n.bytes, "why", "its owner is gone")
	return n, true, nil
}

// purgeChunks purges a chunk subject of count messages whose last is
// last, and counts them: the payload bytes are count-1 chunks of the
// first one's size and the last (every writer of the object store's
// layout fills each chunk but the last).
func (s *jsStore) purgeChunks(ctx context.Context, subj string, count uint64, last *jetstream.RawStreamMsg, st *counters) (purged, error) {
	bytes := int64(len(last.Data))
	if count > 1 {
		if first, err := s.objStream.GetMsg(ctx, 1, jetstream.WithGetMsgSubject(subj)); err == nil {
			bytes += int64(count-1) * int64(len(first.Data))
		}
	}
	if err := s.objStream.Purge(ctx, jetstream.WithPurgeSubject(subj)); err != nil {
		return purged{}, fmt.Errorf("purging %s: %w", subj, err)
	}
	st.orphanChunks.Add(int64(count))
	st.orphanBytes.Add(bytes)
	return purged{chunks: int64(count), bytes: bytes}, nil
}
