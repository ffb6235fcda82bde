package transport

import (
	"bytes"
	"container/list"
	"sync"
)

// TokenStore keeps the address-validation tokens servers give their
// clients for the next connection (Config.TokenStore), by server address.
// Implementations must be safe for concurrent use.
type TokenStore interface {
	// Take returns the token kept for server and forgets it, or nil. A
	// token goes in one connection only: one used twice would let an
	// observer link the two (RFC 9000 §8.1.3); the server gives a new
	// one each connection.
	Take(server string) []byte
	// Put keeps token for server, replacing the one kept.
	Put(server string, token []byte)
}

// NewTokenStore returns a TokenStore in memory holding the tokens of up
// to servers servers (at least 1), the least recently given forgotten
// first.
func NewTokenStore(servers int) TokenStore {
	return &memTokens{max: max(1, servers), byServer: map[string]*list.Element{}, order: list.New()}
}

// memTokens is NewTokenStore's store: a map and a recency list.
type memTokens struct {
	mu       sync.Mutex
	max      int
	byServer map[string]*list.Element // of *memToken
	order    *list.List               // most recently put at the front
}

type memToken struct {
	server string
	token  []byte
}

func (m *memTokens) Take(server string) []byte {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.byServer[server]
	if !ok {
		return nil
	}
	m.order.Remove(e)
	delete(m.byServer, server)
	return e.Value.(*memToken).token
}

func (m *memTokens) Put(server string, token []byte) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if e, ok := m.byServer[server]; ok {
		e.Value.(*memToken).token = bytes.Clone(token)
		m.order.MoveToFront(e)
		return
	}
	m.byServer[server] = m.order.PushFront(&memToken{server: server, token: bytes.Clone(token)})
	for m.order.Len() > m.max {
		old := m.order.Back()
		m.order.Remove(old)
		delete(m.byServer, old.Value.(*memToken).server)
	}
}
