module github.com/fresh-udp/fresh

go 1.26.0

require (
	github.com/beevik/ntp v1.6.0
	github.com/stretchr/testify v1.12.1
)

require (
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/net v0.59.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
)
