package web

import (
	"net"
	"testing"
)

func TestInternalAddresses(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1": true, "10.1.2.3": true, "169.254.169.254": true, "100.100.100.200": true, "0.1.2.3": true,
		"::1": true, "::ffff:127.0.0.1": true, "64:ff9b::a9fe:a9fe": true, "2002:7f00:1::1": true, "fd00::1": true,
		"198.18.0.1": true, "93.184.216.34": false, "2606:4700::1111": false,
	} {
		if got := internal(net.ParseIP(addr)); got != want {
			t.Errorf("%s: internal %v", addr, got)
		}
	}
}
