module github.com/fresh-udp/fresh

go 1.26.0

require (
	github.com/beevik/ntp v1.6.0
	github.com/stretchr/testify v1.12.1
	go.uber.org/goleak v1.3.0
	golang.org/x/crypto v0.57.0
	golang.org/x/net v0.59.0
	golang.org/x/sys v0.48.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
