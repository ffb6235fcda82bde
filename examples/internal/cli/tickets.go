package cli

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/fresh-udp/fresh/transport"
)

// TicketFile is a tls.ClientSessionCache that keeps the latest TLS session
// ticket in a file, so that a device that runs a command once per
// wake-up resumes its session on the next run (a PSK handshake without
// certificates) and, where the server allows it, sends its first update
// in 0-RTT. One ticket, for the last server name stored. Its Tokens keep
// the server's token for the next connection in the same file
// (transport.Config.TokenStore), so that run also skips the Retry.
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
	// TokenServer and Token: the last token a server gave for the next
	// connection, keyed by the server's address (transport.TokenStore).
	TokenServer string `json:"token_server,omitempty"`
	Token       []byte `json:"token,omitempty"`
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
	r := f.load()
	if r.Server != server || r.Ticket == nil {
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

// load reads the record; an empty, unreadable or foreign file is an
// empty one. f.mu held.
func (f *TicketFile) load() ticketRecord {
	var r ticketRecord
	if b, err := os.ReadFile(f.Path); err == nil && len(b) > 0 {
		if json.Unmarshal(b, &r) != nil {
			r = ticketRecord{}
		}
	}
	return r
}

// store writes the record aside and renames it over the file, so a device
// that loses power midway keeps the old record rather than half a new
// one. A record that cannot be written is lost: the next run does a full
// handshake (and a Retry). f.mu held.
func (f *TicketFile) store(r ticketRecord) {
	b, err := json.Marshal(r)
	if err != nil {
		return
	}
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

// Put stores cs as the ticket for server (crypto/tls calls it with each
// new ticket); nil forgets it. The token is kept.
func (f *TicketFile) Put(server string, cs *tls.ClientSessionState) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.load()
	r.Server, r.Ticket, r.State = "", nil, nil
	if cs != nil {
		ticket, st, err := cs.ResumptionState()
		if err != nil || st == nil {
			return
		}
		state, err := st.Bytes()
		if err != nil {
			return
		}
		r.Server, r.Ticket, r.State = server, ticket, state
	}
	f.store(r)
}

// Tokens is the file as a transport.TokenStore: the server's token for
// the next connection, kept beside the ticket (one, for the last server
// that gave one).
func (f *TicketFile) Tokens() transport.TokenStore { return ticketTokens{f} }

type ticketTokens struct{ f *TicketFile }

// Take returns the token kept for server and forgets it (it goes in one
// connection only).
func (t ticketTokens) Take(server string) []byte {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	r := t.f.load()
	if r.TokenServer != server || r.Token == nil {
		return nil
	}
	tok := r.Token
	r.TokenServer, r.Token = "", nil
	t.f.store(r)
	return tok
}

// Put keeps token for server, replacing the one kept; the ticket is kept.
func (t ticketTokens) Put(server string, token []byte) {
	t.f.mu.Lock()
	defer t.f.mu.Unlock()
	r := t.f.load()
	r.TokenServer, r.Token = server, token
	t.f.store(r)
}
