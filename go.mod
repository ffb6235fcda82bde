module github.com/fresh-udp/fresh

go 1.26
