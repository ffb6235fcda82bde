// Package cmsg builds and reads the UDP socket control messages (ancillary
// data) that fresh's endpoints send with: the DSCP of one datagram
// (IP_TOS / IPV6_TCLASS, RFC 2474) and the segment size of a run of
// datagrams sent as one (Linux's UDP_SEGMENT). Package transport and the
// quic-go hook both use it, so the bytes are laid out in one place.
//
// Both are Linux facilities: elsewhere PerPacketTOS and GSO are false, the
// builders return their input unchanged (nil for TOS), and a socket's
// class is set for all its datagrams instead.
package cmsg
