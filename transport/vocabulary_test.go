package transport

import (
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/dscp"
	"github.com/fresh-udp/fresh/internal/session"
)

// sessionOnly are the session's settings no user sets: the listener and
// the dialer fill them per connection.
var sessionOnly = map[string]bool{
	"ServerConnID": true, "AddressValidated": true, "StatelessResetToken": true,
	"NewToken": true, "Token": true, "OnNewToken": true, "Seed": true,
}

// One vocabulary: every setting of session.Config is either the
// transport.Config field of the same name and type, carried over as it
// is by sessionConfig, or one the listener and dialer fill
// (sessionOnly). A session field renamed without its transport
// counterpart, or a transport field the session has under another
// name, fails here.
func TestSessionConfigSpeaksTransportNames(t *testing.T) {
	st, tt := reflect.TypeFor[session.Config](), reflect.TypeFor[Config]()
	var c Config
	cv := reflect.ValueOf(&c).Elem()
	var shared []string
	for f := range st.Fields() {
		if sessionOnly[f.Name] {
			continue
		}
		tf, ok := tt.FieldByName(f.Name)
		if !ok {
			t.Errorf("session.Config.%s has no transport.Config field of that name", f.Name)
			continue
		}
		require.Equal(t, f.Type, tf.Type, "session.Config.%s and transport.Config.%s differ in type", f.Name, f.Name)
		// A value distinct from every default, for the fields passed as
		// they are (names and builders are checked and wrapped first).
		v := cv.FieldByName(f.Name)
		switch {
		case f.Type == reflect.TypeFor[dscp.Codepoint]():
			v.Set(reflect.ValueOf(dscp.AF21))
		case f.Type == reflect.TypeFor[time.Duration]():
			v.SetInt(int64(7 * time.Millisecond))
		case f.Type.Kind() == reflect.Bool:
			v.SetBool(true)
		case f.Type.Kind() == reflect.Int || f.Type.Kind() == reflect.Int64:
			v.SetInt(7)
		default:
			continue
		}
		shared = append(shared, f.Name)
	}
	require.Contains(t, shared, "NoInband")
	require.Contains(t, shared, "DisablePathMTUDiscovery")
	sc := reflect.ValueOf(c.sessionConfig())
	for _, name := range shared {
		require.Equal(t, cv.FieldByName(name).Interface(), sc.FieldByName(name).Interface(), "sessionConfig carries %s", name)
	}
}
