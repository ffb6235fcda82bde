package cli

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// TicketFile is a tls.ClientSessionCache that keeps the latest TLS session
// ticket in a file, so that a device that runs a command once per
// wake-up resumes its session on the next run (a PSK handshake without
// certificates) and, where the server allows it, sends its first update
// in 0-RTT. One ticket, for the last server name stored.
//
// The file holds the session's resumption secret: anyone who reads it can
// resume as this client (and, with 0-RTT, send early data as it), so it is
// written with mode 0600, like a private key.
type TicketFile struct {
	Path string
	mu   sync.Mutex
}

// ticketRecord is the file's content.
type ticketRecord struct {
	Server string `json:"server"` // the cache key: the TLS server name
	Ticket []byte `json:"ticket"`
	State  []byte `json:"state"` // tls.SessionState.Bytes
}

// OpenTicketFile checks that path can hold tickets (it creates the file,
// empty, if it does not exist) so that a bad -0rtt path fails at start-up,
// not silently after the handshake.
func OpenTicketFile(flag, path string) (*TicketFile, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", flag, err)
	}
	f.Close()
	return &TicketFile{Path: path}, nil
}

// Get returns the ticket stored for server, if any; an empty, unreadable
// or foreign file is no ticket (a full handshake then).
func (f *TicketFile) Get(server string) (*tls.ClientSessionState, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	b, err := os.ReadFile(f.Path)
	if err != nil || len(b) == 0 {
		return nil, false
	}
	var r ticketRecord
	if json.Unmarshal(b, &r) != nil || r.Server != server {
		return nil, false
	}
	st, err := tls.ParseSessionState(r.State)
	if err != nil {
		return nil, false
	}
	cs, err := tls.NewResumptionState(r.Ticket, st)
	if err != nil {
		return nil, false
	}
	return cs, true
}

// Put stores cs as the ticket for server (crypto/tls calls it with each
// new ticket); nil forgets it. A ticket that cannot be written is lost:
// the next run does a full handshake.
func (f *TicketFile) Put(server string, cs *tls.ClientSessionState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if cs == nil {
		_ = os.WriteFile(f.Path, nil, 0o600)
		return
	}
	ticket, st, err := cs.ResumptionState()
	if err != nil || st == nil {
		return
	}
	state, err := st.Bytes()
	if err != nil {
		return
	}
	b, err := json.Marshal(ticketRecord{Server: server, Ticket: ticket, State: state})
	if err != nil {
		return
	}
	// Written aside and renamed, so a device that loses power midway
	// keeps the old ticket rather than half a new one.
	tmp, err := os.CreateTemp(filepath.Dir(f.Path), ".ticket-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(b)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), f.Path) != nil {
		os.Remove(tmp.Name())
	}
}
