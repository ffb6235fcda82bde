module github.com/fresh-udp/fresh/examples

go 1.26.0

require (
	github.com/fresh-udp/fresh v0.0.0-00010101000000-000000000000
	github.com/fresh-udp/fresh/bench v0.0.0-00010101000000-000000000000
	github.com/fresh-udp/fresh/transport/quichook v0.0.0-00010101000000-000000000000
	github.com/quic-go/quic-go v0.65.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
)

require (
	github.com/beevik/ntp v1.6.0 // indirect
	github.com/vishvananda/netlink v1.3.1 // indirect
	github.com/vishvananda/netns v0.0.5 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace (
	github.com/fresh-udp/fresh => ..
	github.com/fresh-udp/fresh/bench => ../bench
	github.com/fresh-udp/fresh/transport/quichook => ../transport/quichook
)
