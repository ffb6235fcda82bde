package transport

import (
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/fresh-udp/fresh/internal/session"
)

// statsFrom copies every field of the session's snapshot: each field of
// session.Stats gets a distinct value and must arrive, by name, in Stats.
func TestStatsFromCopiesEveryField(t *testing.T) {
	var in session.Stats
	v := reflect.ValueOf(&in).Elem()
	for i := range v.NumField() {
		f := v.Field(i)
		switch f.Kind() {
		case reflect.Int64, reflect.Int: // Int: DatagramSize
			f.SetInt(int64(1000 + i))
		case reflect.Uint64, reflect.Uint8:
			f.SetUint(uint64(1 + i%2)) // Signal: a valid DelaySignal
		case reflect.Float64:
			f.SetFloat(float64(1000 + i))
		case reflect.Bool:
			f.SetBool(true)
		case reflect.String:
			f.SetString(v.Type().Field(i).Name)
		case reflect.Struct: // AgeStats
			for j := range f.NumField() {
				f.Field(j).SetInt(int64(2000 + 10*i + j))
			}
		default:
			t.Fatalf("session.Stats.%s: kind %v not filled by this test", v.Type().Field(i).Name, f.Kind())
		}
	}
	out := reflect.ValueOf(statsFrom(in))
	for i := range v.NumField() {
		name := v.Type().Field(i).Name
		got := out.FieldByName(name)
		require.True(t, got.IsValid(), "transport.Stats has no field %s", name)
		if got.Kind() == reflect.Struct {
			for j := range got.NumField() {
				require.Equal(t, v.Field(i).Field(j).Int(), got.Field(j).Int(), "%s.%d", name, j)
			}
			continue
		}
		require.Equal(t, v.Field(i).Interface(), got.Convert(v.Field(i).Type()).Interface(), name)
	}
	// Everything else transport.Stats has is the transport's own.
	require.Equal(t, v.NumField()+3, out.NumField(), "only NTP, PortUnreachable and PortUnreachableSinceHeard are added by the transport")
}

func TestStatsStrings(t *testing.T) {
	age := AgeStats{Mean: 5123 * time.Microsecond, P95: 9600 * time.Microsecond, Peak: 11600 * time.Microsecond}
	require.Equal(t, "mean 5.1ms p95 9.6ms peak 11.6ms", age.String())
	require.Equal(t, "ntp off", NTPStats{}.String())
	require.Equal(t, "ntp synced to 127.0.0.1:123 (stratum 2), offset 1.5ms",
		NTPStats{Enabled: true, Synced: true, Server: "127.0.0.1:123", Stratum: 2, Offset: 1500 * time.Microsecond}.String())
	require.Equal(t, "ntp not synced: timeout", NTPStats{Enabled: true, Err: errors.New("timeout")}.String())

	s := Stats{CC: "owd", Mode: "avoidance", Window: 30000, PacingRate: 12e6, SRTT: 41 * time.Millisecond, MinRTT: 40 * time.Millisecond,
		PacketsSent: 10, BytesSent: 12000, PacketsLost: 1}
	require.Equal(t, "owd avoidance window 30000 B pacing 12.00 Mbit/s srtt 41ms min-rtt 40ms; sent 10 pkts 12000 B, received 0 pkts 0 B, lost 1, retransmitted 0", s.String())
	s.UpdatesReceived, s.Age = 3, age
	require.Contains(t, s.String(), "; updates received 3 (stale 0, rejected 0), age mean 5.1ms p95 9.6ms peak 11.6ms")
	require.NotContains(t, s.String(), "ntp", "no NTP section without an NTP clock")
	require.NotContains(t, s.String(), "0-RTT", "no 0-RTT section without early data")
	s.EarlyUpdatesSent, s.EarlyRejected = 1, true
	require.Contains(t, s.String(), "; 0-RTT updates sent 1, received 0, dropped 0, refused by the peer")
}
