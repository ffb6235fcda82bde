package main

// Example runs the quick start of the README (main.go) and pins its output.
func Example() {
	main()
	// Output:
	// update: {"temp_c":21.5}
	// received 5 bytes
}
