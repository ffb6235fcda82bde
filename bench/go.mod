module github.com/fresh-udp/fresh/bench

go 1.26.0

require (
	github.com/beevik/ntp v1.6.0
	github.com/eclipse/paho.mqtt.golang v1.5.1
	github.com/fresh-udp/fresh v0.0.0-00010101000000-000000000000
	github.com/fresh-udp/fresh/transport/quichook v0.0.0-00010101000000-000000000000
	github.com/nats-io/nats.go v1.55.0
	github.com/pion/dtls/v3 v3.1.15
	github.com/plgd-dev/go-coap/v3 v3.8.1
	github.com/quic-go/quic-go v0.65.0
	github.com/stretchr/testify v1.12.1
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	go.uber.org/goleak v1.3.0
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.49.0
	golang.org/x/term v0.47.0
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/dsnet/golib/memfile v1.0.0 // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	github.com/gorilla/websocket v1.5.3 // indirect
	github.com/klauspost/compress v1.20.0 // indirect
	github.com/nats-io/nkeys v0.4.16 // indirect
	github.com/nats-io/nuid v1.0.1 // indirect
	github.com/pion/logging v0.2.4 // indirect
	github.com/pion/transport/v5 v5.1.4 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/crypto v0.58.0 // indirect
	golang.org/x/exp v0.0.0-20261014143641-f0251eb4aa3e // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/sync v0.24.0 // indirect
	golang.org/x/text v0.43.0 // indirect
)

replace (
	github.com/fresh-udp/fresh => ..
	github.com/fresh-udp/fresh/transport/quichook => ../transport/quichook
)
