"""End-to-end tests: real `kalends serve` processes driven over HTTP."""
