//go:build !unix

package main

func raiseFileLimit() error { return nil }
