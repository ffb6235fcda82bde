// Package tos marks single UDP datagrams with a DSCP (RFC 2474) through
// ancillary data, shared by the transport and the quic-go hook.
package tos
