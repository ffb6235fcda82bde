package monitor

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Writing an upload into the object store. nats.go's ObjectStore.Put
// publishes the chunks asynchronously from one message and one buffer it
// reuses, and a chunk that meets no responders (the bucket's stream
// between two leaders, during a node's failure) is published again
// 250 ms later from that same message: by then it carries a later
// chunk's bytes, and even with the right bytes it lands after chunks
// published since. Put's digest is of the bytes in their order, its
// acknowledgements all come back, it returns success, and the stored
// object fails its digest on every read: a committed upload lost (the
// three-node failover test saw it). So the monitor writes objects itself,
// in the object store's own layout so that ObjectStore.Get, List, Watch
// and the nats CLI read them as any other: a staging record on the info
// subject $O.<bucket>.M.<name in base64url> first (see staging.go), then
// the chunks on $O.<bucket>.C.<id>, each a message of its own, never
// published twice, at most maxChunksInFlight unacknowledged; then the
// object's info (size, chunk count, SHA-256) over the staging record,
// written last, which is what makes the object exist. A chunk or the info
// not acknowledged fails the upload, and its messages are purged.

const (
	// objectChunkSize is nats.go's default chunk size: the object's
	// bytes per message.
	objectChunkSize = 128 << 10
	// maxChunksInFlight bounds an upload's unacknowledged chunks (1 MiB):
	// the monitor reads the agent no faster than the store confirms.
	maxChunksInFlight = 8
)

// metaSubject is the info subject of the object name.
func (s *jsStore) metaSubject(name string) string {
	return "$O." + s.objBucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
}

// errTakenForDead: the upload's staging record was removed by a sweep
// that found its owner gone (this monitor's NATS connection down), so
// the upload is not committed.
var errTakenForDead = errors.New("a clean-up of the store took the upload for abandoned (this monitor did not answer on NATS) and removed it")

func (s *jsStore) putUpload(ctx context.Context, name, device string, r io.Reader) (uint64, error) {
	id := newID()
	chunkSubj := "$O." + s.objBucket + ".C." + id
	metaSubj := s.metaSubject(name)
	// In progress (for the sweeps' questions) before it is staged, until
	// it is committed or removed.
	s.inProgress.add(id)
	defer s.inProgress.remove(id)
	staged, err := s.stage(ctx, metaSubj, name, device, id)
	if err != nil {
		if perr := s.unstage(context.Background(), metaSubj, id); perr != nil {
			err = fmt.Errorf("%w (and removing its staging record failed: %v)", err, perr)
		}
		return 0, err
	}
	var inFlight []jetstream.PubAckFuture
	fail := func(err error) (uint64, error) {
		// Chunks still in flight would land after the purge and stay,
		// unlisted: wait until each is stored or failed (at most the
		// store's timeout each) before purging.
		for _, f := range inFlight {
			s.settle(f)
		}
		if perr := s.purgeUpload(metaSubj, chunkSubj, id); perr != nil {
			err = fmt.Errorf("%w (and purging what it stored failed: %v)", err, perr)
		}
		return 0, err
	}

	h := sha256.New()
	var size uint64
	var chunks uint32
	for {
		buf := make([]byte, objectChunkSize) // each chunk its own: the publish keeps it until acknowledged
		n, rerr := io.ReadFull(r, buf)
		if n > 0 {
			h.Write(buf[:n])
			m := nats.NewMsg(chunkSubj)
			m.Header.Set(HeaderUploadOwner, s.owner)
			m.Data = buf[:n]
			// No retry: a chunk published again may land after the
			// ones published since.
			f, err := s.pubJS.PublishMsgAsync(m, jetstream.WithRetryAttempts(0))
			if err != nil {
				return fail(fmt.Errorf("chunk %d: %w", chunks, err))
			}
			inFlight = append(inFlight, f)
			size += uint64(n)
			chunks++
			for len(inFlight) >= maxChunksInFlight {
				if err := s.awaitAck(ctx, inFlight[0]); err != nil {
					return fail(fmt.Errorf("chunk %d: %w", int(chunks)-len(inFlight), err))
				}
				inFlight = inFlight[1:]
			}
		}
		if rerr == io.EOF || rerr == io.ErrUnexpectedEOF {
			break
		}
		if rerr != nil {
			return fail(rerr)
		}
	}
	for i, f := range inFlight {
		if err := s.awaitAck(ctx, f); err != nil {
			return fail(fmt.Errorf("chunk %d: %w", int(chunks)-len(inFlight)+i, err))
		}
	}
	inFlight = nil

	info := jetstream.ObjectInfo{
		ObjectMeta: jetstream.ObjectMeta{
			Name:     name,
			Metadata: map[string]string{"device": device},
			Opts:     &jetstream.ObjectMetaOptions{ChunkSize: objectChunkSize},
		},
		Bucket: s.objBucket, NUID: id, Size: size, Chunks: chunks,
		Digest: "SHA-256=" + base64.URLEncoding.EncodeToString(h.Sum(nil)),
	}
	mm := nats.NewMsg(metaSubj)
	mm.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject) // one info message per name
	if mm.Data, err = json.Marshal(info); err != nil {
		return fail(err)
	}
	pctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	// The commit: written over the staging record only while it stands
	// (no sweep removed it). A retried write is harmless: once the first
	// is stored, the condition fails and the caller purges.
	_, err = s.js.PublishMsg(pctx, mm, jetstream.WithExpectLastSequencePerSubject(staged))
	if wrongLastSequence(err) {
		err = errTakenForDead
	}
	if err != nil {
		return fail(fmt.Errorf("the object's info: %w", err))
	}
	return size, nil
}

// awaitAck waits for a chunk's acknowledgement, at most the store's
// timeout.
func (s *jsStore) awaitAck(ctx context.Context, f jetstream.PubAckFuture) error {
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	select {
	case <-f.Ok():
		return nil
	case err := <-f.Err():
		return err
	case <-t.C:
		return fmt.Errorf("no acknowledgement in %v", s.timeout)
	case <-ctx.Done():
		return ctx.Err()
	}
}

// settle waits for a chunk's publish to be acknowledged or to fail, at
// most the store's timeout, whatever the upload's context says.
func (s *jsStore) settle(f jetstream.PubAckFuture) {
	t := time.NewTimer(s.timeout)
	defer t.Stop()
	select {
	case <-f.Ok():
	case <-f.Err():
	case <-t.C:
	}
}

// purgeUpload removes what a failed upload stored: its staging record,
// or its info if that may have been written (its acknowledgement lost),
// then its chunks, so that no object is ever listed without its bytes,
// and chunks left by a purge that fails half-way carry
// HeaderUploadOwner and no record names them, which the next sweep
// removes. The names are the upload's own (a new chunk ID, a record
// naming it), so nothing else goes. It is best effort: the store that
// failed the upload may refuse this too.
func (s *jsStore) purgeUpload(metaSubj, chunkSubj, id string) error {
	ctx, cancel := context.WithTimeout(context.Background(), s.timeout)
	defer cancel()
	if err := s.unstage(ctx, metaSubj, id); err != nil {
		return err
	}
	return s.objStream.Purge(ctx, jetstream.WithPurgeSubject(chunkSubj))
}
