module github.com/fresh-udp/fresh/transport/quichook

go 1.26.0

require (
	github.com/fresh-udp/fresh v0.0.0-00010101000000-000000000000
	github.com/quic-go/quic-go v0.65.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/net v0.59.0
	golang.org/x/sys v0.48.0
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.57.0 // indirect
)

replace github.com/fresh-udp/fresh => ../..
