package monitor

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/fresh-udp/fresh/transport"
)

// CodeStorageFailed is the application close code (Conn.CloseWithError)
// of a monitor that could not store an upload: the object store refused
// or lost it. It is examples/monitor's code, so examples/agent reports
// "monitor could not store it" with the reason, and never success.
const CodeStorageFailed uint32 = 1

// uploadStore stores one upload, read from r until io.EOF, as the object
// name, and returns its size once it is stored whole.
type uploadStore interface {
	putUpload(ctx context.Context, name string, device string, r io.Reader) (size uint64, err error)
	// flush returns once the store has received everything handed to it
	// so far (a NATS PING/PONG round trip); see uploadReader.
	flush(ctx context.Context) error
}

// flushEvery is how many upload bytes the monitor reads from a
// connection between two flushes of the object store's connection.
// putUpload publishes chunks without waiting for each acknowledgement
// (up to maxChunksInFlight of them), and a publish only hands the bytes
// to the NATS connection's buffer, so without a bound the monitor would
// read the agent's stream as fast as the network brings it and hold
// whatever the NATS connection has not sent. Waiting for the flush every
// flushEvery bytes reads the agent only as fast as the NATS server takes
// the bytes; the transport's flow control then holds the agent back (its
// receive window fills), so at most flushEvery plus a window is in the
// monitor's memory per upload. A flush also fails at once when the NATS
// connection is lost, rather than after an acknowledgement's timeout.
const flushEvery = 1 << 20

// connError is a failure of the agent's connection during an upload (an
// abort, the connection closed), as opposed to the store's.
type connError struct{ err error }

func (e *connError) Error() string { return e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

// uploadReader is the io.Reader the object store reads an upload from:
// the connection's stream, starting with the bytes already read.
type uploadReader struct {
	ctx        context.Context
	conn       *transport.Conn
	store      uploadStore
	first      []byte // read before the put began
	firstErr   error
	read       int64 // bytes handed to the store
	sinceFlush int64
	st         *counters
}

func (r *uploadReader) Read(p []byte) (int, error) {
	if r.sinceFlush >= flushEvery {
		if err := r.store.flush(r.ctx); err != nil {
			return 0, fmt.Errorf("flushing to the object store: %w", err)
		}
		r.sinceFlush = 0
	}
	var n int
	var err error
	if len(r.first) > 0 {
		n = copy(p, r.first)
		r.first = r.first[n:]
		if len(r.first) == 0 {
			err, r.firstErr = r.firstErr, nil
		}
	} else {
		n, err = r.conn.Read(p)
	}
	r.read += int64(n)
	r.sinceFlush += int64(n)
	r.st.uploadBytes.Add(int64(n))
	switch {
	case err == nil, err == io.EOF:
		return n, err // the store's Put compares with io.EOF itself
	default:
		return n, &connError{err}
	}
}

// receiveUpload stores the connection's stream, if the agent sends one,
// as one object, and commits it (Conn.Commit) only once the object store
// has it whole: the agent's WaitCommitted then returns, and its "upload
// complete" means the bytes are in JetStream. If the store fails the
// monitor commits nothing and closes the connection with
// CodeStorageFailed and the reason, so the agent reports the failure; if
// the agent aborts or the connection breaks, the store drops what it
// had (Put purges a partial object) and nothing is committed.
func (m *Monitor) receiveUpload(ctx context.Context, conn *transport.Conn, device string, log *slog.Logger) {
	// Most devices never upload, and this Read waits for the whole
	// connection: a datagram's worth is all it holds (the store then reads
	// in its own chunks), not 64 KiB per device.
	buf := make([]byte, 2048)
	n, err := conn.Read(buf)
	if n == 0 {
		return // no upload: the connection ended (EOF: the agent sent only updates)
	}
	start := time.Now()
	name := ObjectName(device, start)
	r := &uploadReader{ctx: ctx, conn: conn, store: m.uploads, first: buf[:n], firstErr: err, st: m.st}
	size, err := m.uploads.putUpload(ctx, name, device, r)
	d := time.Since(start)
	var ce *connError
	switch {
	case err == nil:
		m.st.observeWrite("object", d)
		m.st.uploadsStored.Add(1)
		cerr := conn.Commit(int64(size))
		log.Info("upload stored", "object", name, "bytes", size, "seconds", d.Seconds(), "committed", cerr == nil)
		if cerr != nil {
			log.Warn("upload stored, but the agent left before the commit reached it", "object", name, "err", cerr)
		}
	case errors.As(err, &ce) || ctx.Err() != nil:
		m.st.uploadsAborted.Add(1)
		log.Info("upload broken off, not stored", "object", name, "bytes_read", r.read, "err", err)
	default:
		m.st.objectErrors.Add(1)
		m.st.uploadsFailed.Add(1)
		err = m.whatIsFull(err, false, m.objLimit)
		// The reason is cut to 255 bytes: what is full and the fix first.
		reason := fmt.Sprintf("storing the upload in object store %q failed: %v", m.cfg.ObjectBucket, err)
		if fe := (*fullError)(nil); errors.As(err, &fe) {
			reason = "storing the upload failed: " + err.Error()
		}
		m.uploadLog.Log(log, slog.LevelError, "upload failed: closing the connection", "object", name, "bytes_read", r.read, "err", err)
		_ = conn.CloseWithError(CodeStorageFailed, reason)
	}
}
