package cc

import (
	"errors"
	"fmt"
	"sort"
	"sync"
)

// ErrUnknown is returned by New for a name nobody registered.
var ErrUnknown = errors.New("cc: unknown controller")

// Factory builds a controller with its default configuration for the given MSS.
type Factory func(mss ByteCount) Controller

var (
	registryMu sync.RWMutex
	registry   = map[string]Factory{}
)

// Register makes a congestion controller available to New under name.
// Packages register their controllers in init (cc registers reno, cubic,
// htcp, rttdelay, bbr, copa; owd registers owd and owd-eq2): import the package (blank
// import if need be) to make its names available. Only window or rate
// controllers for a congestion-controlled stream belong here; update-rate
// policies (package acp) have their own constructor, acp.NewPolicy.
// Registering a name twice panics, since that is a programming error, as
// in database/sql.
func Register(name string, f Factory) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if f == nil {
		panic("cc: Register factory is nil for " + name)
	}
	if _, dup := registry[name]; dup {
		panic("cc: Register called twice for " + name)
	}
	registry[name] = f
}

// New returns a fresh controller by registry name with MSS mss (DefaultMSS if
// mss <= 0).
func New(name string, mss ByteCount) (Controller, error) {
	registryMu.RLock()
	f, ok := registry[name]
	registryMu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("%w %q (known: %v)", ErrUnknown, name, Names())
	}
	if mss <= 0 {
		mss = DefaultMSS
	}
	return f(mss), nil
}

// Names lists the registered controller names, sorted.
func Names() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
